//go:build !wasip1

// Package edgetest runs the Extism gatekeeper SDK (atelier/sdk/go/extism and its gatekeeper
// and host packages) in Atelier's Extism host (host/gatekeeper/extism) and checks its edges:
// a result that is not JSON and an error without a message fail the call with a clear error
// instead of reaching the host as garbage, a refused fetch is the shared
// *gatekeeper.FetchError, a log level out of range is logged as error. The guest is
// testdata/edge. It lives outside sdk/go/extism so that `atelier new` (which copies that
// folder's files) does not hand it out.
package edgetest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/extism"
	"atelier/host/runtime"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	os.Exit(m.Run())
}

const manifest = `{
  "name": "edge", "version": "0.1.0", "vendor": "Atelier tests",
  "world": "atelier:gatekeeper/gatekeeper@0.1.0", "format": "extism",
  "egress": {"schemes": ["https"], "hosts": ["edge.example.com"]},
  "credentials": [{"name": "token", "description": "A token", "header": "Authorization", "template": "Bearer {secret}"}],
  "resources": [{"kind": "thing", "urlPattern": "https://edge.example.com/things/:thing",
    "egress": ["https://edge.example.com/api/things/:thing"]}],
  "session": {"methods": ["empty", "notJSON", "silent", "log", "fetch"], "type": "Thing"}
}`

// lines collects the console lines of the instance.
type lines struct {
	mu sync.Mutex
	l  []runtime.ConsoleLine
}

func (c *lines) add(l runtime.ConsoleLine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.l = append(c.l, l)
}

func (c *lines) level(text string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.l {
		if l.Text == text {
			return l.Level
		}
	}
	return "(no line)"
}

// session builds testdata/edge, installs it and opens a session on one thing.
func session(t *testing.T) (*gatekeeper.Session, *lines) {
	if testing.Short() {
		t.Skip("skipped under -short: builds the plugin")
	}
	out := filepath.Join(t.TempDir(), "edge.wasm")
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", out, "./testdata/edge")
	build.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
	if log, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build testdata/edge: %v\n%s", err, log)
	}
	wasm, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var m gatekeeper.Manifest
	if err := json.Unmarshal([]byte(manifest), &m); err != nil {
		t.Fatal(err)
	}
	archive, err := gatekeeper.Pack(m, wasm)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gatekeeper.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	e, err := extism.New(extism.Options{Egress: outboundhttp.Options{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	g, err := e.Install(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	con := &lines{}
	in, err := g.Start(context.Background(), gatekeeper.Account{
		Name: "alice", Resource: "https://edge.example.com/things/one", Credentials: map[string]string{"token": "s3cret"},
		Queue: gatekeeper.NewMemoryQueue(), Limits: runtime.Limits{Timeout: 10 * time.Second}, Console: con.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	s, err := in.OpenSession(context.Background(), "agent:alice")
	if err != nil {
		t.Fatal(err)
	}
	return s, con
}

func TestEdges(t *testing.T) {
	s, con := session(t)
	ctx := context.Background()
	for _, c := range []struct{ method, want string }{
		{"empty", "the result is not JSON (0 bytes)"},
		{"notJSON", "the result is not JSON (9 bytes)"},
		{"silent", "an error without a message (*errors.errorString)"},
	} {
		if out, err := s.Call(ctx, c.method, "[]"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %q, %v; want an error containing %q", c.method, out, err, c.want)
		}
	}
	// A refused fetch is a *gatekeeper.FetchError of kind Denied, with the host's reason.
	out, err := s.Call(ctx, "fetch", `["https://elsewhere.example.com/x"]`)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	var fe struct {
		Kind    string
		Denied  bool
		Message string
	}
	if err := json.Unmarshal([]byte(out), &fe); err != nil || fe.Kind != "denied" || !fe.Denied || !strings.Contains(fe.Message, "elsewhere.example.com") {
		t.Errorf("fetch outside the manifest = %s (%v); want kind denied naming the host", out, err)
	}
	// A level above Error is logged as error, not refused; the other levels are kept.
	if out, err := s.Call(ctx, "log", "[]"); err != nil || out != "null" {
		t.Fatalf("log = %q, %v", out, err)
	}
	if got := con.level("level 7"); got != "error" {
		t.Errorf("level 7 was logged as %q, want error", got)
	}
	if got := con.level("level warn"); got != "warn" {
		t.Errorf("warn was logged as %q", got)
	}
	// The plugin is unharmed by the failed calls.
	if out, err := s.Call(ctx, "log", "[]"); err != nil || out != "null" {
		t.Errorf("log after the failed calls = %q, %v", out, err)
	}
}
