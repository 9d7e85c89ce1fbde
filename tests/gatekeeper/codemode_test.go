package gatekeeper_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// agentSnippet reads the notebook and queues a note through env.notes.
const agentSnippet = `export default async function (env) {
  const before = await env.notes.list();
  const pending = await env.notes.add("from the agent", "queued");
  return { before: before.length, pending };
}`

// TestCodeModeGatekeeperBindings: an agent whose scope binds one of its owner's accounts
// reaches the gatekeeper from executeCode (reads recorded, writes queued for the owner, both
// naming the agent); nobody binds another user's account; agents cannot widen their scope
// through options; a user binds an account for one snippet; a gatekeeper without a session API
// cannot be bound; disconnecting the account cuts the binding.
func TestCodeModeGatekeeperBindings(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	m := notesManifest(t, svc)
	wasm := guest(t, "gatekeepers/notes-go")
	plain := m
	plain.Name, plain.Session = "notes-plain", nil
	s := startServer(t, svc, filepath.Join(t.TempDir(), "atelier.db"))
	admin, alice, bob := s.authed(t, s.adminToken(t)), s.user(t, "alice"), s.user(t, "bob")
	id := installGatekeeper(t, admin, m, wasm)
	plainID := installGatekeeper(t, admin, plain, wasm)
	if info := await(t, alice.Call(ctx, "listGatekeepers")).([]any); !strings.Contains(fmt.Sprint(info), "Notebook") {
		t.Fatalf("listGatekeepers does not show the session API: %v", info)
	}
	work := svc.Origin + "/notebooks/work"
	creds := map[string]any{"token": aliceToken}
	acctID := await(t, alice.Call(ctx, "connectAccount", id, work, creds)).(map[string]any)["id"].(string)
	plainAcct := await(t, alice.Call(ctx, "connectAccount", plainID, work, creds)).(map[string]any)["id"].(string)
	ws := alice.Call(ctx, "createWorkspace", "home")
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	scope := func(gks map[string]any) map[string]any {
		return map[string]any{"workspaces": map[string]any{wsID: map[string]any{"role": "use", "gadgets": []any{}, "gatekeepers": gks}}}
	}

	// Scopes bind only the creator's own accounts, under valid names, of gatekeepers with a
	// session API.
	bobWS := bob.Call(ctx, "createWorkspace", "bobs")
	bobWSID := await(t, bobWS.Call(ctx, "info")).(map[string]any)["id"].(string)
	bobScope := map[string]any{"workspaces": map[string]any{bobWSID: map[string]any{"role": "use", "gadgets": []any{}, "gatekeepers": map[string]any{"notes": acctID}}}}
	refused(t, bob.Call(ctx, "createAgent", "thief", bobScope), "NOT_FOUND", "no account")
	refused(t, alice.Call(ctx, "createAgent", "helper", scope(map[string]any{"Not A Name": acctID})), "INVALID_ARGUMENT", "binding")
	refused(t, alice.Call(ctx, "createAgent", "helper", scope(map[string]any{"notes": plainAcct})), "FAILED_PRECONDITION", "no session API")
	agent := await(t, alice.Call(ctx, "createAgent", "helper", scope(map[string]any{"notes": acctID}))).(map[string]any)
	agentWS := s.authed(t, agent["token"].(string)).Call(ctx, "openWorkspace", wsID, "")

	// The agent sees the binding and its declarations.
	list := await(t, agentWS.Call(ctx, "listBindings")).([]any)
	if len(list) != 1 || list[0].(map[string]any)["gatekeeper"] != "notes" || list[0].(map[string]any)["account"] != acctID {
		t.Fatalf("listBindings = %v", list)
	}
	decl := await(t, agentWS.Call(ctx, "describeBinding", "notes")).(string)
	if !strings.Contains(decl, "interface Notebook") || !strings.Contains(decl, "declare const notes: Notebook;") {
		t.Fatalf("describeBinding = %s", decl)
	}

	// A read and a queued write, both in the log under the agent's name; the write reaches
	// the service only once the owner approves it.
	res := await(t, agentWS.Call(ctx, "executeCode", agentSnippet, map[string]any{})).(map[string]any)
	if res["error"] != nil || strings.Contains(fmt.Sprint(res), aliceToken) {
		t.Fatalf("executeCode = %v", res)
	}
	value := res["value"].(map[string]any)
	pending := value["pending"].(map[string]any)
	notes := func() string { _, body := svc.direct(t, "GET", "/api/notebooks/work/notes", aliceToken); return body }
	if pending["status"] != "pending" || strings.Contains(notes(), "from the agent") {
		t.Fatalf("add = %v; service: %s", pending, notes())
	}
	actions := await(t, ws.Call(ctx, "listActions")).([]any)
	last := actions[len(actions)-1].(map[string]any)
	if last["caller"] != "alice/agent:helper" || last["state"] != "pending" {
		t.Fatalf("listActions = %v", actions)
	}
	for _, a := range []string{"gatekeeper.observe", "gatekeeper.submit"} {
		if !hasAudit(t, ws, "alice/agent:helper", a) {
			t.Fatalf("no %s audit line by the agent", a)
		}
	}
	await(t, ws.Call(ctx, "approveAction", pending["action"]))
	if !strings.Contains(notes(), "from the agent") {
		t.Fatalf("the approved note is missing: %s", notes())
	}

	// An agent cannot bind accounts through options; a user binds its own for one snippet,
	// never another user's.
	opts := map[string]any{"gatekeepers": map[string]any{"nb": acctID}}
	refused(t, agentWS.Call(ctx, "executeCode", agentSnippet, opts), "FORBIDDEN", "scope")
	userSnippet := `export default async (env) => (await env.nb.list()).map(n => n.title)`
	res = await(t, ws.Call(ctx, "executeCode", userSnippet, opts)).(map[string]any)
	if fmt.Sprint(res["value"]) != "[from the agent]" {
		t.Fatalf("the user's snippet = %v", res)
	}
	refused(t, bobWS.Call(ctx, "executeCode", userSnippet, opts), "NOT_FOUND", "no account")
	if res := await(t, ws.Call(ctx, "executeCode", userSnippet, map[string]any{})).(map[string]any); res["error"] == nil {
		t.Fatalf("a snippet without the binding reached it: %v", res)
	}

	// Disconnecting the account cuts the agent's binding.
	await(t, alice.Call(ctx, "disconnectAccount", acctID))
	refused(t, agentWS.Call(ctx, "executeCode", agentSnippet, map[string]any{}), "FAILED_PRECONDITION", "disconnected")
}
