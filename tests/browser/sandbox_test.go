package browser

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"

	"atelier/sdk/guesttest"
)

// outside is a server on another origin that records every request it gets.
type outside struct {
	*httptest.Server
	mu   sync.Mutex
	hits []string
}

func newOutside(t *testing.T) *outside {
	o := &outside{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.hits = append(o.hits, r.Method+" "+r.URL.Path)
		o.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write([]byte("reached"))
	}))
	t.Cleanup(o.Close)
	return o
}

// probeReport is what testdata/probe.js writes into #report.
type probeReport struct {
	Violations []struct{ Directive, Blocked string }
	Attempts   map[string]struct{ Outcome, Detail string }
}

// TestGadgetFrameSandbox deploys a hostile client.js (testdata/probe.js) that tries fetch, a
// WebSocket, the parent's DOM, top navigation, storage, cookies, a popup, an outside image and
// a form post from the gadget frame: each must fail, the CSP must report the blocked
// connections and image, nothing may reach the outside server, and the shell must stay where
// it was; the frame's own gadget calls must work, and the frame must not reach the Gadget's
// management methods.
func TestGadgetFrameSandbox(t *testing.T) {
	h := newHarness(t)
	out := newOutside(t)
	wasm := guesttest.Path(t, "gadgets/todo-go")
	src, err := os.ReadFile(filepath.Join("testdata", "probe.js"))
	if err != nil {
		t.Fatal(err)
	}
	ui := filepath.Join(t.TempDir(), "client.js")
	if err := os.WriteFile(ui, []byte(strings.ReplaceAll(string(src), "__OUTSIDE__", out.URL)), 0o644); err != nil {
		t.Fatal(err)
	}

	tab := h.tab()
	h.run(tab, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(tab, "eve")
	h.createWorkspace(tab, "probing")
	h.deploy(tab, "probe", wasm, ui)
	h.run(tab, "open the probe", click(`#gadgets tr[data-gadget="probe"] a`), visible("iframe.gadget-frame"))
	var before string
	h.run(tab, "read the page's URL", chromedp.Location(&before))
	f := h.frame(tab)
	var raw string
	h.runFrame(f, "wait for the probe's report", f.visible("#report"), f.text("#report", &raw))
	var rep probeReport
	if err := json.Unmarshal([]byte(raw), &rep); err != nil {
		t.Fatalf("probe report %q: %v", raw, err)
	}
	t.Logf("probe report: %s", raw)

	for _, name := range []string{"fetch", "websocket", "parent.document", "top.location", "localStorage", "document.cookie", "window.open", "img", "gadget.delete"} {
		if a := rep.Attempts[name]; a.Outcome != "threw" {
			t.Errorf("from the gadget frame, %s was not refused: %s %s", name, a.Outcome, a.Detail)
		}
	}
	// A form post fails silently (the sandbox allows no submission): the script goes on in the
	// same document, and nothing reaches outside (checked below).
	if a := rep.Attempts["form"]; a.Outcome == "allowed" && a.Detail != "still here after submit" {
		t.Errorf("form post: %s", a.Detail)
	}
	for name, want := range map[string]string{"gadget.add": "probe", "gadget.list": "probe"} {
		if a := rep.Attempts[name]; a.Outcome != "allowed" || !strings.Contains(a.Detail, want) {
			t.Errorf("the frame's own call %s failed: %s %s", name, a.Outcome, a.Detail)
		}
	}
	var directives []string
	for _, v := range rep.Violations {
		directives = append(directives, v.Directive)
	}
	for _, want := range []string{"connect-src", "img-src"} {
		if !slices.Contains(directives, want) {
			t.Errorf("no CSP violation of %s was reported (violations: %v)", want, directives)
		}
	}

	var after string
	h.run(tab, "read the page's URL again", chromedp.Location(&after))
	if after != before {
		t.Errorf("the gadget frame navigated the shell from %s to %s", before, after)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.hits) > 0 {
		t.Errorf("the outside server was reached from the gadget frame: %v", out.hits)
	}
	h.shot(tab, "07-sandbox-probe")
}
