package cluster

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"atelier/sdk/guesttest"
	"atelier/tests/notessvc"
)

// httpBase is the HTTP origin of a node whose API is at url (ws://HOST:PORT/api).
func httpBase(url string) string {
	return "http://" + strings.TrimSuffix(strings.TrimPrefix(url, "ws://"), "/api")
}

// TestHookFiresOnAnyNodeAndAfterFailover: a hook registered by a gadget of a workspace that
// runs on n1 fires when its webhook request reaches n2 (forwarded to n1), and, after n1 is
// killed, when it reaches n3, which takes the workspace over; the hook, its secret and the
// gadget's state survive the failover.
func TestHookFiresOnAnyNodeAndAfterFailover(t *testing.T) {
	svc := notessvc.Start(t)
	tc := startCluster(t, 3, "--gatekeeper-allow-addr", svc.Addr)
	ctx := context.Background()
	admin := dial(t, tc.nodes[0].URL, tc.admin)
	gk := notessvc.Await(t, admin.api.Call(ctx, "installGatekeeper", svc.Archive(t, svc.Manifest(t, 0)))).(map[string]any)["id"].(string)
	acct := notessvc.Await(t, admin.api.Call(ctx, "connectAccount", gk, svc.Notebook(), map[string]any{"token": notessvc.Token})).(map[string]any)["id"].(string)
	ws := admin.api.Call(ctx, "createWorkspace", "hooked")
	wsID := notessvc.Await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	notessvc.Await(t, ws.Call(ctx, "createGadget", "hooker", guesttest.Bytes(t, "tests/e2e/hookgadget"), []any{"atelier:host/kv", "atelier:host/log", "atelier:host/hooks"}))
	notessvc.Await(t, ws.Call(ctx, "bindGatekeeper", "hooker", "notes", acct))
	var hk struct{ ID, URL, Secret string }
	raw := notessvc.Await(t, ws.Call(ctx, "gadget", "hooker").Call(ctx, "connect").Call(ctx, "watch", "notes", "note-added", "onEvent", "")).(string)
	if err := json.Unmarshal([]byte(raw), &hk); err != nil {
		t.Fatal(err)
	}
	secret, _ := base64.StdEncoding.DecodeString(hk.Secret)
	if owner := tc.ownerOf(t, 1, wsID); owner != "n1" {
		t.Fatalf("workspace runs on %q, want n1", owner)
	}

	// deliver posts a signed event for the hook to node i until it is answered 200 (a
	// failover answers 503 while the workspace has no node); it fails after a minute.
	deliver := func(i int, title string) {
		t.Helper()
		url := httpBase(tc.nodes[i].URL) + "/hooks/" + hk.ID
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			status, out, _ := notessvc.Post(t, url, notessvc.NoteEvent(1, title), secret, time.Now())
			if status == 200 {
				return
			}
			if status != 503 || time.Now().After(deadline) {
				t.Fatalf("webhook at n%d: %d %v", i+1, status, out)
			}
		}
	}
	// received returns the gadget's payloads, read through node i.
	received := func(i int) []string {
		t.Helper()
		c := dial(t, tc.nodes[i].URL, tc.admin)
		w := c.api.Call(ctx, "openWorkspace", wsID)
		var out []string
		for _, p := range notessvc.Await(t, w.Call(ctx, "gadget", "hooker").Call(ctx, "connect").Call(ctx, "received")).([]any) {
			out = append(out, p.(string))
		}
		return out
	}

	deliver(1, "through n2")
	if got := received(1); len(got) != 1 || !strings.Contains(got[0], "through n2") {
		t.Fatalf("after a webhook at n2 the gadget kept %q", got)
	}
	tc.nodes[0].Kill(t)
	deliver(2, "after failover")
	got := received(2)
	if len(got) != 2 || !strings.Contains(got[1], "after failover") {
		t.Fatalf("after the failover the gadget kept %q", got)
	}
	if owner := tc.ownerOf(t, 2, wsID, "n2", "n3"); owner != "n2" && owner != "n3" {
		t.Fatalf("after the kill the workspace runs on %q, want n2 or n3", owner)
	}
	c := dial(t, tc.nodes[2].URL, tc.admin)
	hooks := notessvc.Await(t, c.api.Call(ctx, "openWorkspace", wsID).Call(ctx, "listHooks", "")).([]any)
	if len(hooks) != 1 || hooks[0].(map[string]any)["fires"] != float64(2) {
		t.Fatalf("listHooks after the failover: %v", hooks)
	}
}
