package gatekeeper_test

import (
	"context"
	"path/filepath"
	"testing"

	"atelier/capnweb"
)

// TestKernelActionLogPages: the action log is listed in pages from the newest back, pending
// actions stay reachable (listed, delivered to subscribers, decidable) however old they are,
// also after a restart, and bad page sizes are refused.
func TestKernelActionLogPages(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	data := filepath.Join(t.TempDir(), "atelier.db")
	s := startServer(t, svc, data)
	ws, wsID, _ := probeWorkspace(t, s, svc, "work")
	call := func(method string, args ...any) any {
		t.Helper()
		return callProbe(t, ws, "work", method, args...)
	}

	// Action 1 waits while 129 observations follow it.
	if got := call("submit", "old", false); got != float64(1) {
		t.Fatalf("first action id = %v", got)
	}
	for range 129 {
		call("observe", "read")
	}
	ids := func(p *capnweb.Promise) []float64 {
		t.Helper()
		var out []float64
		for _, e := range await(t, p).([]any) {
			out = append(out, e.(map[string]any)["id"].(float64))
		}
		return out
	}
	page := ids(ws.Call(ctx, "listActions"))
	if len(page) != 100 || page[0] != 31 || page[99] != 130 {
		t.Fatalf("first page: %d entries, %v..%v", len(page), page[0], page[len(page)-1])
	}
	older := ids(ws.Call(ctx, "listActions", map[string]any{"before": 31, "limit": 50}))
	if len(older) != 30 || older[0] != 1 || older[29] != 30 {
		t.Fatalf("older page: %v", older)
	}
	if p := ids(ws.Call(ctx, "listActions", map[string]any{"pending": true})); len(p) != 1 || p[0] != 1 {
		t.Fatalf("pending: %v", p)
	}
	refused(t, ws.Call(ctx, "listActions", map[string]any{"limit": 5000}), "INVALID_ARGUMENT", "limit")

	// Subscribers get the newest entries and every pending action.
	events := make(chan map[string]any, 10)
	await(t, ws.Call(ctx, "subscribeActions", func(v map[string]any) { events <- v }))
	call("observe", "one more")
	ev := <-events
	if acts, pend := ev["actions"].([]any), ev["pending"].([]any); len(acts) != 100 || len(pend) != 1 || pend[0].(map[string]any)["id"] != float64(1) {
		t.Fatalf("delivery: %d entries, pending %v", len(acts), pend)
	}

	// After a restart the old pending action is still decidable; deciding it twice is refused.
	s.stop()
	s = startServer(t, svc, data)
	alice := s.login(t, "alice")
	ws = alice.Call(ctx, "openWorkspace", wsID, "")
	await(t, ws.Call(ctx, "approveAction", 1))
	refused(t, ws.Call(ctx, "approveAction", 1), "FAILED_PRECONDITION", "not pending")
	refused(t, ws.Call(ctx, "approveAction", 2), "NOT_FOUND", "no action")
	if p := ids(ws.Call(ctx, "listActions", map[string]any{"pending": true})); len(p) != 0 {
		t.Fatalf("pending after approval: %v", p)
	}
	if old := await(t, ws.Call(ctx, "listActions", map[string]any{"before": 2, "limit": 1})).([]any); old[0].(map[string]any)["state"] != "applied" {
		t.Fatalf("the approved action: %v", old)
	}
}
