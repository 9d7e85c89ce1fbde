package gatekeeper_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestCodeModeGatekeeperDryRun: in a dry run, a gatekeeper action is recorded as a would-be
// action, not queued (reads run as usual); commitDryRun queues it for the account's owner,
// who approves it as any other.
func TestCodeModeGatekeeperDryRun(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	s := startServer(t, svc, filepath.Join(t.TempDir(), "atelier.db"))
	admin, alice := s.authed(t, s.adminToken(t)), s.user(t, "alice")
	id := installGatekeeper(t, admin, notesManifest(t, svc), guest(t, "gatekeepers/notes-go"))
	creds := map[string]any{"token": aliceToken}
	acctID := await(t, alice.Call(ctx, "connectAccount", id, svc.Origin+"/notebooks/work", creds)).(map[string]any)["id"].(string)
	ws := alice.Call(ctx, "createWorkspace", "home")
	opts := map[string]any{"dryRun": true, "gatekeepers": map[string]any{"notes": acctID}}

	res := await(t, ws.Call(ctx, "executeCode", agentSnippet, opts)).(map[string]any)
	d, _ := res["dryRun"].(map[string]any)
	if res["error"] != nil || d == nil {
		t.Fatalf("dry run = %v", res)
	}
	actions := d["actions"].([]any)
	a := actions[0].(map[string]any)
	if len(actions) != 1 || a["binding"] != "notes" || a["method"] != "add" || a["account"] != acctID || !strings.Contains(fmt.Sprint(a["args"]), "from the agent") {
		t.Fatalf("would-be actions = %v", actions)
	}
	pending := func() []any { return await(t, ws.Call(ctx, "listActions", map[string]any{"pending": true})).([]any) }
	if p := pending(); len(p) != 0 {
		t.Fatalf("a dry run queued %v", p)
	}
	if !hasAudit(t, ws, "alice", "gatekeeper.observe") {
		t.Fatal("the dry run's read was not recorded")
	}

	got := await(t, ws.Call(ctx, "commitDryRun", d["id"])).(map[string]any)
	ids := got["actions"].([]any)
	p := pending()
	if len(ids) != 1 || len(p) != 1 || p[0].(map[string]any)["id"] != ids[0] || p[0].(map[string]any)["caller"] != "alice" {
		t.Fatalf("commitDryRun = %v; pending = %v", got, p)
	}
	notes := func() string { _, body := svc.direct(t, "GET", "/api/notebooks/work/notes", aliceToken); return body }
	if strings.Contains(notes(), "from the agent") {
		t.Fatal("the note reached the service before approval")
	}
	await(t, ws.Call(ctx, "approveAction", ids[0]))
	if !strings.Contains(notes(), "from the agent") {
		t.Fatalf("the approved note is missing: %s", notes())
	}

	// A dry run records at most 100 actions: past that it is refused as a whole.
	many := `export default async (env) => { for (let i = 0; i < 101; i++) { try { await env.notes.add("n" + i, "x"); } catch (e) {} } }`
	refused(t, ws.Call(ctx, "executeCode", many, map[string]any{"dryRun": true, "timeoutMs": 30000, "gatekeepers": map[string]any{"notes": acctID}}),
		"RESOURCE_EXHAUSTED", "more than 100 gatekeeper actions")
	if p := pending(); len(p) != 0 {
		t.Fatalf("a refused dry run queued %v", p)
	}
}

// TestGadgetGatekeeperDryRun: in a dry run, a gadget's call through its gatekeeper binding
// records the action (named for the gadget) instead of queuing it; the commit queues it.
func TestGadgetGatekeeperDryRun(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	s := startServer(t, svc, filepath.Join(t.TempDir(), "atelier.db"))
	admin, alice := s.authed(t, s.adminToken(t)), s.user(t, "alice")
	id := installGatekeeper(t, admin, notesManifest(t, svc), guest(t, "gatekeepers/notes-go"))
	acctID := await(t, alice.Call(ctx, "connectAccount", id, svc.Origin+"/notebooks/work", map[string]any{"token": aliceToken})).(map[string]any)["id"].(string)
	ws := alice.Call(ctx, "createWorkspace", "home")
	grants := []any{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}
	await(t, ws.Call(ctx, "createGadget", "reader", map[string]any{"server.js": callerJS}, grants))
	await(t, ws.Call(ctx, "bindGatekeeper", "reader", "notes", acctID))

	snippet := `export default async (env) => env.reader.call("notes", "add", ["via a gadget", "x"])`
	res := await(t, ws.Call(ctx, "executeCode", snippet, map[string]any{"dryRun": true})).(map[string]any)
	d, _ := res["dryRun"].(map[string]any)
	if res["error"] != nil || d == nil || len(d["actions"].([]any)) != 1 || d["actions"].([]any)[0].(map[string]any)["method"] != "add" {
		t.Fatalf("dry run = %v", res)
	}
	pending := func() []any { return await(t, ws.Call(ctx, "listActions", map[string]any{"pending": true})).([]any) }
	if p := pending(); len(p) != 0 {
		t.Fatalf("a dry run queued %v", p)
	}
	await(t, ws.Call(ctx, "commitDryRun", d["id"]))
	if p := pending(); len(p) != 1 || p[0].(map[string]any)["caller"] != "gadget:reader" {
		t.Fatalf("pending after the commit = %v", p)
	}
}
