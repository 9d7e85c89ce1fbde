package browser

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// outside is a server on another origin that records every request and every connection it
// gets.
type outside struct {
	*httptest.Server
	mu    sync.Mutex
	hits  []string
	conns int
}

func newOutside(t *testing.T) *outside {
	o := &outside{}
	o.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.mu.Lock()
		o.hits = append(o.hits, r.Method+" "+r.URL.Path)
		o.mu.Unlock()
		w.Header().Set("Access-Control-Allow-Origin", "*")
		w.Write([]byte("reached"))
	}))
	o.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			o.mu.Lock()
			o.conns++
			o.mu.Unlock()
		}
	}
	o.Start()
	t.Cleanup(o.Close)
	return o
}

// udpSink is a UDP socket that counts the packets it gets: a STUN server that never answers.
type udpSink struct {
	conn    net.PacketConn
	packets atomic.Int64
}

func newUDPSink(t *testing.T) *udpSink {
	conn, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &udpSink{conn: conn}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 2048)
		for {
			if _, _, err := conn.ReadFrom(buf); err != nil {
				return // closed
			}
			s.packets.Add(1)
		}
	}()
	t.Cleanup(func() {
		conn.Close()
		<-done
	})
	return s
}

// browserLog collects what Chromium reports in a tab, in any of its frames: its own messages
// (refused form submissions and popups, CSP violations) and uncaught exceptions.
type browserLog struct {
	mu      sync.Mutex
	lines   []string
	changed changes
}

func listenLog(tab context.Context) *browserLog {
	l := &browserLog{changed: newChanges()}
	chromedp.ListenTarget(tab, func(ev any) {
		var line string
		switch ev := ev.(type) {
		case *cdplog.EventEntryAdded:
			line = ev.Entry.Text
		case *runtime.EventExceptionThrown:
			line = ev.ExceptionDetails.Error()
		default:
			return
		}
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
		l.changed.notify()
	})
	return l
}

// find returns the first line that contains all of parts.
func (l *browserLog) find(parts ...string) (string, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range l.lines {
		if containsAll(line, parts) {
			return line, true
		}
	}
	return "", false
}

// waitFor waits up to stepTimeout for a line that contains all of parts.
func (l *browserLog) waitFor(parts ...string) error {
	if l.changed.await(func() bool { _, ok := l.find(parts...); return ok }) {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return errors.New("the browser reported no message with " + strings.Join(parts, " and ") + "; it reported:\n" + strings.Join(l.lines, "\n"))
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// probeReport is what testdata/probe.js writes into #report.
type probeReport struct {
	Violations []struct{ Directive, Blocked string }
	Attempts   map[string]struct{ Outcome, Detail string }
}

// TestGadgetFrameSandbox deploys a hostile client.js (testdata/probe.js) that tries every way
// out of the gadget frame that docs/gadget-ui.md names: fetch, XMLHttpRequest, a WebSocket, an
// EventSource, sendBeacon, an image, a stylesheet, a prefetch, a preconnect, a font, audio,
// video, a nested frame, an object, workers, WebRTC (in its own realm and in nested frames),
// the parent's DOM, top navigation, storage, cookies, a popup, a form post, and navigating
// itself elsewhere. Each must be refused the way the browser reports it (an exception, the CSP
// violation of that very URL, or Chromium's message about the sandbox), nothing may reach the
// outside server or the outside UDP socket, and the shell must stay where it was; a nested
// frame that forges the frame's hello and handshake must get no answer from the shell; the
// frame's own gadget calls must work, and the frame must not reach the Gadget's management
// methods.
func TestGadgetFrameSandbox(t *testing.T) {
	h := newHarness(t)
	out := newOutside(t)
	bare := newOutside(t) // where Chromium connects without a request: see the end
	stun := newUDPSink(t)
	src, err := os.ReadFile(filepath.Join("testdata", "probe.js"))
	if err != nil {
		t.Fatal(err)
	}
	probe := strings.NewReplacer("__OUTSIDE__", out.URL, "__BARE__", bare.URL, "__STUN__", stun.conn.LocalAddr().String()).Replace(string(src))

	tab := h.tab()
	logs := listenLog(tab)
	var rep probeReport
	f, before := h.openUI(tab, "eve", "probing", "probe", probe, &rep)
	refused := func(name string) {
		t.Helper()
		if a := rep.Attempts[name]; a.Outcome != "threw" {
			t.Errorf("from the gadget frame, %s was not refused: %s %s", name, a.Outcome, a.Detail)
		}
	}
	reported := func(directive, blocked string) {
		t.Helper()
		for _, v := range rep.Violations {
			if v.Directive == directive && v.Blocked == blocked {
				return
			}
		}
		t.Errorf("no CSP violation of %s blocking %s was reported (violations: %+v)", directive, blocked, rep.Violations)
	}

	// Requests: each refused, and reported by the frame's policy for its own URL.
	ws := "ws" + strings.TrimPrefix(out.URL, "http")
	for _, c := range []struct{ name, directive, blocked string }{
		{"fetch", "connect-src", out.URL + "/fetch"},
		{"xhr", "connect-src", out.URL + "/xhr"},
		{"websocket", "connect-src", ws + "/ws"},
		{"eventsource", "connect-src", out.URL + "/eventsource"},
		{"sendBeacon", "connect-src", out.URL + "/beacon"},
		{"img", "img-src", out.URL + "/img.png"},
		{"stylesheet", "style-src-elem", out.URL + "/style.css"},
		{"prefetch", "default-src", out.URL + "/prefetch"},
		{"font", "font-src", out.URL + "/font.woff2"},
		{"audio", "media-src", out.URL + "/audio.mp3"},
		{"video", "media-src", out.URL + "/video.mp4"},
		{"frame", "frame-src", bare.URL}, // a navigation's report names only the origin
		{"object", "object-src", out.URL},
		{"worker.blob", "worker-src", "blob"},
		{"worker.data", "worker-src", "data"},
	} {
		refused(c.name)
		reported(c.directive, c.blocked)
	}

	// The sandbox: no access to the shell, no storage, no popups, no forms.
	for _, name := range []string{"parent.document", "top.location", "localStorage", "document.cookie", "window.open"} {
		refused(name)
	}
	if err := logs.waitFor("Blocked opening '"+out.URL+"/popup'", "'allow-popups'"); err != nil {
		t.Errorf("window.open: %v", err)
	}
	if err := logs.waitFor("Blocked form submission to '"+out.URL+"/form'", "sandboxed", "'allow-forms'"); err != nil {
		t.Errorf("form post: %v", err)
	}

	// WebRTC: gone from the frame's realm before client.js runs, not to be had from a nested
	// frame's realm, and no packet reaches the STUN server (checked below).
	for _, name := range []string{"RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "rtc.blank-frame", "rtc.nested-inline", "rtc.nested-data", "rtc.nested-first-script"} {
		refused(name)
	}
	// The frame document's first script does run in a nested frame, and removes WebRTC there.
	if a := rep.Attempts["rtc.nested-first-script"]; !strings.Contains(a.Detail, "in the nested frame: TypeError: RTCPeerConnection is undefined") {
		t.Errorf("in a nested frame running the frame's first script: %s %s", a.Outcome, a.Detail)
	}

	// A nested frame forging the frame's hello and handshake to the shell gets no answer.
	if a := rep.Attempts["forged.handshake"]; a.Outcome != "threw" || !strings.Contains(a.Detail, "in the nested frame: no answer from the shell") {
		t.Errorf("a nested frame forged the gadget frame's hello and handshake: %s %s", a.Outcome, a.Detail)
	}

	// The frame's own gadget.
	refused("gadget.delete")
	for name, want := range map[string]string{"gadget.add": "probe", "gadget.list": "probe"} {
		if a := rep.Attempts[name]; a.Outcome != "allowed" || !strings.Contains(a.Detail, want) {
			t.Errorf("the frame's own call %s failed: %s %s", name, a.Outcome, a.Detail)
		}
	}
	h.shot(tab, "07-sandbox-probe")

	// Last, the frame navigates itself elsewhere: the shell's policy (frame-src 'self') refuses.
	h.runFrame(f, "navigate the frame elsewhere", f.click("#leave"))
	if err := logs.waitFor("Framing '"+bare.URL+"/", "frame-src 'self'"); err != nil {
		t.Errorf("the frame navigating itself: %v", err)
	}

	var after string
	h.run(tab, "read the page's URL again", chromedp.Location(&after))
	if after != before {
		t.Errorf("the gadget frame navigated the shell from %s to %s", before, after)
	}
	out.mu.Lock()
	defer out.mu.Unlock()
	if len(out.hits) > 0 || out.conns > 0 {
		t.Errorf("the outside server was reached from the gadget frame: %d connections, requests %v", out.conns, out.hits)
	}
	// A known gap (docs/gadget-ui.md): for a preconnect, and for a frame navigation that a policy
	// refuses, Chromium opens a connection; it must carry no request.
	bare.mu.Lock()
	defer bare.mu.Unlock()
	if len(bare.hits) > 0 {
		t.Errorf("a preconnect or a refused frame navigation made requests: %v", bare.hits)
	}
	t.Logf("a preconnect and refused frame navigations opened %d connections without a request", bare.conns)
	if n := stun.packets.Load(); n > 0 {
		t.Errorf("%d UDP packets reached the outside STUN socket from the gadget frame", n)
	}
}
