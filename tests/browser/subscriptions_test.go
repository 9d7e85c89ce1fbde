package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"
)

// wireRef is a capability the tab exported on one of its WebSockets.
type wireRef struct {
	socket network.RequestID
	id     int
}

// wire follows a tab's Cap'n Web sessions as Chromium sees their WebSocket frames: the
// callbacks the tab passes in subscribe calls (in the order of the calls) and the exports the
// server releases. The server releases a subscription's callback only when the subscription
// ends (docs/api.md), so a release is the server's own word that it did.
type wire struct {
	mu         sync.Mutex
	subscribed []wireRef
	released   map[wireRef]bool
	changed    changes
}

// watchWire starts following tab's WebSockets; call it before the tab opens the shell.
func (h *harness) watchWire(tab context.Context) *wire {
	h.t.Helper()
	w := &wire{released: map[wireRef]bool{}, changed: newChanges()}
	chromedp.ListenTarget(tab, func(ev any) {
		switch ev := ev.(type) {
		case *network.EventWebSocketFrameSent:
			w.sent(ev.RequestID, ev.Response.PayloadData)
		case *network.EventWebSocketFrameReceived:
			w.received(ev.RequestID, ev.Response.PayloadData)
		}
	})
	h.run(tab, "follow the WebSockets", network.Enable())
	return w
}

// sent records the callbacks of a message ["push", ["pipeline", ID, [..., "subscribe"], ARGS]].
func (w *wire) sent(socket network.RequestID, payload string) {
	var msg []any
	if json.Unmarshal([]byte(payload), &msg) != nil || len(msg) != 2 || msg[0] != "push" {
		return
	}
	expr, _ := msg[1].([]any)
	if len(expr) != 4 || expr[0] != "pipeline" {
		return
	}
	path, _ := expr[2].([]any)
	if len(path) == 0 || path[len(path)-1] != "subscribe" {
		return
	}
	w.update(func() { w.subscribed = append(w.subscribed, exportsIn(socket, expr[3])...) })
}

// exportsIn returns the ["export", ID] expressions in v.
func exportsIn(socket network.RequestID, v any) []wireRef {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	if id, ok := exportID(list); ok {
		return []wireRef{{socket, id}}
	}
	var refs []wireRef
	for _, e := range list {
		refs = append(refs, exportsIn(socket, e)...)
	}
	return refs
}

func exportID(list []any) (int, bool) {
	if len(list) != 2 || list[0] != "export" {
		return 0, false
	}
	id, ok := list[1].(float64)
	return int(id), ok
}

// received records a message ["release", ID, COUNT].
func (w *wire) received(socket network.RequestID, payload string) {
	var msg []any
	if json.Unmarshal([]byte(payload), &msg) != nil || len(msg) != 3 || msg[0] != "release" {
		return
	}
	if id, ok := msg[1].(float64); ok {
		w.update(func() { w.released[wireRef{socket, int(id)}] = true })
	}
}

func (w *wire) update(fn func()) {
	w.mu.Lock()
	fn()
	w.mu.Unlock()
	w.changed.notify()
}

// callbacks returns the callbacks passed in subscribe calls so far, in order.
func (w *wire) callbacks() []wireRef {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]wireRef(nil), w.subscribed...)
}

// live returns those of refs the server has not released.
func (w *wire) live(refs []wireRef) []wireRef {
	w.mu.Lock()
	defer w.mu.Unlock()
	var held []wireRef
	for _, r := range refs {
		if !w.released[r] {
			held = append(held, r)
		}
	}
	return held
}

// waitFor waits up to stepTimeout for done to hold, failing the test with what (and what
// done last said) if it does not.
func (w *wire) waitFor(t *testing.T, what string, done func() (bool, string)) {
	t.Helper()
	var state string
	if !w.changed.await(func() (ok bool) { ok, state = done(); return ok }) {
		t.Fatalf("%s: not within %v: %s", what, stepTimeout, state)
	}
}

// allReleased is a waitFor condition: the server released every one of refs.
func (w *wire) allReleased(refs []wireRef) func() (bool, string) {
	return func() (bool, string) {
		held := w.live(refs)
		return len(held) == 0, fmt.Sprintf("%d of %d callbacks still held by the server", len(held), len(refs))
	}
}

// subscriberReport is what testdata/subscriber.js writes into #report.
type subscriberReport struct {
	Held    int
	Refused []string
	Again   string
}

// TestGadgetUISubscriptionsEnd: a gadget UI (testdata/subscriber.js) asks for one subscription
// more than the shell lets it hold and gets a clear refusal (which never reaches the server);
// cancelling one frees its place. Its subscriptions end on the server, as the server's release
// of each callback shows on the tab's WebSocket, when the UI cancels one, when the frame reloads
// (the new document's handshake ends the old session's), and when the person leaves the
// gadget's page; the live ones stay live until then.
func TestGadgetUISubscriptionsEnd(t *testing.T) {
	const max = 64 // the shell's bound, as in testdata/subscriber.js
	h := newHarness(t)
	src, err := os.ReadFile(filepath.Join("testdata", "subscriber.js"))
	if err != nil {
		t.Fatal(err)
	}

	tab := h.tab()
	w := h.watchWire(tab)
	var rep subscriberReport
	f, url := h.openUI(tab, "sam", "greedy", "greedy", string(src), &rep)
	if rep.Held != max || len(rep.Refused) != 1 || !strings.Contains(rep.Refused[0], fmt.Sprintf("at most %d subscriptions", max)) {
		t.Errorf("asking for %d subscriptions at once, the UI got %d and was refused %q; want %d and one refusal naming the bound", max+1, rep.Held, rep.Refused, max)
	}
	if rep.Again != "subscribed" {
		t.Errorf("after cancelling one subscription the UI could not subscribe again: %s", rep.Again)
	}

	// The refused call stayed in the shell: the server got max calls, then one more.
	first := w.callbacks()
	if len(first) != max+1 {
		t.Fatalf("the shell passed %d subscribe calls to the server, want %d", len(first), max+1)
	}
	w.waitFor(t, "the server ends the subscription the UI cancelled", w.allReleased(first[:1]))
	if gone := len(first) - 1 - len(w.live(first[1:])); gone != 0 {
		t.Errorf("%d of the UI's live subscriptions ended on the server while it was open", gone)
	}

	h.runFrame(f, "reload the frame", f.click("#reload"))
	w.waitFor(t, "the server ends the subscriptions of the frame's document before the reload", w.allReleased(first))
	w.waitFor(t, "the reloaded UI subscribes again", func() (bool, string) {
		n := len(w.callbacks())
		return n == 2*(max+1), fmt.Sprintf("%d subscribe calls", n)
	})

	h.run(tab, "leave the gadget's page", chromedp.Navigate(url[:strings.Index(url, "/g/")]), visible("#gadgets"))
	w.waitFor(t, "the server ends the subscriptions of the UI that was left", w.allReleased(w.callbacks()))
}
