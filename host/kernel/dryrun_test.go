package kernel_test

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// moveSnippet moves every item of env.inbox to env.archive.
const moveSnippet = `export default async function (env) {
  const items = await env.inbox.list();
  for (const it of items) {
    await env.archive.add(it.title);
    await env.inbox.remove(it.id);
  }
  return items.length;
}`

// dryWorkspace makes ada's workspace with the to-do lists "inbox" (two items) and "archive"
// (empty), and returns it with both gadgets' connections.
func dryWorkspace(t *testing.T, ada *capnweb.Stub) (ws, inbox, archive *capnweb.Promise) {
	t.Helper()
	ws = ada.Call(ctx, "createWorkspace", "home")
	inbox = ws.Call(ctx, "createGadget", "inbox", jsFiles(t, todoJSGadget), jsGrants).Call(ctx, "connect")
	archive = ws.Call(ctx, "createGadget", "archive", jsFiles(t, todoJSGadget), jsGrants).Call(ctx, "connect")
	await(t, inbox.Call(ctx, "add", "milk"))
	await(t, inbox.Call(ctx, "add", "bread"))
	return ws, inbox, archive
}

// titles lists the titles of a to-do list's items, as its live instance reads them.
func titles(t *testing.T, app *capnweb.Promise) []string {
	t.Helper()
	out := []string{}
	for _, it := range await(t, app.Call(ctx, "list")).([]any) {
		out = append(out, it.(map[string]any)["title"].(string))
	}
	return out
}

// dryRun runs code with dryRun on ws and returns its result and its dryRun part.
func dryRun(t *testing.T, ws *capnweb.Promise, code string) (map[string]any, map[string]any) {
	t.Helper()
	res := run(t, ws, code, map[string]any{"dryRun": true})
	if res["error"] != nil {
		t.Fatalf("dry run failed: %v", res["error"])
	}
	d, _ := res["dryRun"].(map[string]any)
	if d == nil {
		t.Fatalf("a dry run's result has no dryRun: %v", res)
	}
	return res, d
}

// changes returns the keys of one kind of change ("added", "changed", "removed") a dry run
// shows for gadget, each with its new (or, for a removal, old) value.
func changes(t *testing.T, d map[string]any, gadget, kind string) map[string]string {
	t.Helper()
	for _, g := range d["gadgets"].([]any) {
		g := g.(map[string]any)
		if g["gadget"] != gadget {
			continue
		}
		out := map[string]string{}
		for _, c := range g[kind].([]any) {
			c := c.(map[string]any)
			v := c["new"]
			if kind == "removed" {
				v = c["old"]
			}
			out[c["key"].(string)] = fmt.Sprint(v)
		}
		return out
	}
	return map[string]string{}
}

// TestDryRunMovesItems: a snippet that moves items between two gadgets shows its diff and
// changes nothing (state, live instances, subscribers) until committed; the commit applies
// both gadgets' writes, the live instances then read them and the subscribers get the dry
// run's events; a dry run is committed once.
func TestDryRunMovesItems(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, inbox, archive := dryWorkspace(t, s.user(t, "ada"))
	events := newCollector()
	await(t, ws.Call(ctx, "gadget", "inbox").Call(ctx, "subscribe", events.fn))

	res, d := dryRun(t, ws, moveSnippet)
	if res["value"] != float64(2) || d["id"] == "" {
		t.Fatalf("dry run = %v", res)
	}
	added := changes(t, d, "archive", "added")
	if len(added) != 3 || !strings.Contains(added["todo/0000000001"], "milk") || !strings.Contains(added["todo/0000000002"], "bread") || added["next-id"] != "3" {
		t.Fatalf("archive's added keys = %v", added)
	}
	removed := changes(t, d, "inbox", "removed")
	if len(removed) != 2 || !strings.Contains(removed["todo/0000000001"], "milk") {
		t.Fatalf("inbox's removed keys = %v", removed)
	}

	// Nothing moved: the live instances read the state as it was, and the dry run's events
	// reached nobody (the first event the subscriber gets is this real call's).
	if got := titles(t, inbox); !reflect.DeepEqual(got, []string{"milk", "bread"}) {
		t.Fatalf("inbox after the dry run = %v", got)
	}
	if got := titles(t, archive); len(got) != 0 {
		t.Fatalf("archive after the dry run = %v", got)
	}
	await(t, inbox.Call(ctx, "toggle", 2))
	if ev := events.wait(t, 1)[0]; ev["payload"].(map[string]any)["kind"] != "toggled" {
		t.Fatalf("the subscriber's first event = %v, want the real toggle", ev)
	}

	// The toggle changed a key the dry run read: committing it now conflicts and applies
	// nothing, to either gadget.
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "CONFLICT", `key "todo/0000000002" of gadget inbox changed since the dry run`)
	if got := titles(t, archive); len(got) != 0 {
		t.Fatalf("archive after a conflict = %v", got)
	}
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "NOT_FOUND", "run the snippet again")

	// Run again and commit: both gadgets change, and their live instances see it.
	_, d = dryRun(t, ws, moveSnippet)
	got := await(t, ws.Call(ctx, "commitDryRun", d["id"])).(map[string]any)
	if a := got["actions"].([]any); len(a) != 0 {
		t.Fatalf("commitDryRun = %v", got)
	}
	if got := titles(t, inbox); len(got) != 0 {
		t.Fatalf("inbox after the commit = %v", got)
	}
	if got := titles(t, archive); !reflect.DeepEqual(got, []string{"milk", "bread"}) {
		t.Fatalf("archive after the commit = %v", got)
	}
	// The committed dry run's events reach the subscriber now, after the real toggle.
	for i, ev := range events.wait(t, 3)[1:] {
		if p := ev["payload"].(map[string]any); p["kind"] != "removed" || p["todo"].(map[string]any)["id"] != float64(i+1) {
			t.Fatalf("event %d after the commit = %v, want the removal of item %d", i+1, ev, i+1)
		}
	}
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "NOT_FOUND", "was committed or discarded")
	if !hasAuditLine(t, ws, "code.dry_run") || !hasAuditLine(t, ws, "code.commit_dry_run") {
		t.Fatal("the dry run and its commit are not in the audit log")
	}

	// A dry run that changes nothing holds nothing; a discarded one cannot be committed.
	if _, d := dryRun(t, ws, `export default async (env) => env.inbox.list()`); d["id"] != "" {
		t.Fatalf("a read-only dry run was held: %v", d)
	}
	_, d = dryRun(t, ws, `export default async (env) => env.inbox.add("eggs")`)
	await(t, ws.Call(ctx, "discardDryRun", d["id"]))
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "NOT_FOUND", "discarded")
	if got := titles(t, inbox); len(got) != 0 {
		t.Fatalf("inbox after a discarded dry run = %v", got)
	}
	if !hasAuditLine(t, ws, "code.discard_dry_run") {
		t.Fatal("the discard is not in the audit log")
	}
}

// hasAuditLine reports whether the workspace's audit log has a line of action.
func hasAuditLine(t *testing.T, ws *capnweb.Promise, action string) bool {
	t.Helper()
	for _, l := range await(t, ws.Call(ctx, "auditLog", 100)).([]any) {
		if l.(map[string]any)["action"] == action {
			return true
		}
	}
	return false
}

// TestDryRunComponentGadget: a component gadget's dry run leaves its live instance as it was
// (a binary value shows as base64); the commit replaces the instance, which then reads the
// committed count.
func TestDryRunComponentGadget(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _, app := home(t, s.user(t, "ada"))
	_, d := dryRun(t, ws, `export default async (env) => env.counter.increment(41)`)
	g := d["gadgets"].([]any)[0].(map[string]any)
	c := g["changed"].([]any)[0].(map[string]any)
	newCount, err := base64.StdEncoding.DecodeString(fmt.Sprint(c["new"]))
	if c["binary"] != true || err != nil || binary.LittleEndian.Uint64(newCount) != 42 {
		t.Fatalf("the counter's change = %v", c)
	}
	if got := await(t, app.Call(ctx, "get")); got != float64(1) {
		t.Fatalf("get() after the dry run = %v, want 1", got)
	}
	await(t, ws.Call(ctx, "commitDryRun", d["id"]))
	if got := await(t, app.Call(ctx, "get")); got != float64(42) {
		t.Fatalf("get() after the commit = %v, want 42", got)
	}
}

// TestDryRunOwnerAndExpiry: only the user who made a dry run commits or discards it, with the
// access they have at commit (an agent of theirs within its scope); a dry run expires after
// 15 minutes.
func TestDryRunOwnerAndExpiry(t *testing.T) {
	var skew atomic.Int64
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws, inbox, _ := dryWorkspace(t, ada)
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "addCollaborator", "bob", "build"))
	bws := bob.Call(ctx, "openWorkspace", id)

	_, d := dryRun(t, ws, moveSnippet)
	refused(t, bws.Call(ctx, "commitDryRun", d["id"]), "FORBIDDEN", "made by another user")
	refused(t, bws.Call(ctx, "discardDryRun", d["id"]), "FORBIDDEN", "made by another user")
	// Ada's agent whose scope leaves out the archive cannot commit her dry run that writes it.
	ag := await(t, ada.Call(ctx, "createAgent", "helper", agentScope(id, "use", "inbox"))).(map[string]any)
	bot := s.dial(t).Call(ctx, "authenticate", ag["token"]).Call(ctx, "openWorkspace", id)
	refused(t, bot.Call(ctx, "commitDryRun", d["id"]), "FORBIDDEN", "may not use gadget archive (outside its scope)")

	// Bob's own dry run, after his access was revoked, commits nothing.
	_, bd := dryRun(t, bws, `export default async (env) => env.inbox.add("bob's")`)
	await(t, ws.Call(ctx, "removeCollaborator", "bob"))
	refused(t, bws.Call(ctx, "commitDryRun", bd["id"]), "FORBIDDEN", "no access")
	if got := titles(t, inbox); len(got) != 2 {
		t.Fatalf("inbox after a revoked user's commit = %v", got)
	}

	// Past 15 minutes the dry run is gone.
	skew.Store(int64(16 * time.Minute))
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "NOT_FOUND", "expired")
	if got := titles(t, inbox); len(got) != 2 {
		t.Fatalf("inbox after an expired commit = %v", got)
	}
}

// fillGadget writes n values of 512 KiB in one call.
const fillGadget = `export class Gadget {
  fill(n) {
    for (let i = 0; i < n; i++) this.storage.put("k" + i, "x".repeat(512 * 1024));
    return n;
  }
}`

// TestDryRunBound: a snippet whose writes exceed the dry run's bound is refused as a whole,
// even when it catches the error, and nothing is held or written.
func TestDryRunBound(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	await(t, ws.Call(ctx, "createGadget", "filler", map[string]any{"server.js": fillGadget}, jsGrants))
	refused(t, ws.Call(ctx, "executeCode", `export default async (env) => { try { await env.filler.fill(9); } catch (e) { return "caught"; } }`,
		map[string]any{"dryRun": true}), "RESOURCE_EXHAUSTED", "the dry run would hold more than 4194304 bytes")
	// Nothing was written: a small dry run shows key k0 as added, not changed.
	if _, d := dryRun(t, ws, `export default async (env) => env.filler.fill(1)`); len(changes(t, d, "filler", "added")) != 1 {
		t.Fatalf("a small dry run after the refused one = %v", d)
	}
}

// relayGadget adds to-do items through its binding "sink".
const relayGadget = `export class Gadget {
  async push(title) { return await this.env.sink.add(title); }
}`

// TestDryRunThroughBindings: a gadget's calls through its bindings during a dry run go to
// the fork of the gadget they reach, which the diff shows and the live gadget does not see.
func TestDryRunThroughBindings(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, inbox, _ := dryWorkspace(t, s.user(t, "ada"))
	await(t, ws.Call(ctx, "createGadget", "relay", map[string]any{"server.js": relayGadget}, jsGrants))
	await(t, ws.Call(ctx, "bind", "relay", "sink", "inbox"))
	_, d := dryRun(t, ws, `export default async (env) => env.relay.push("through a binding")`)
	if added := changes(t, d, "inbox", "added"); !strings.Contains(added["todo/0000000003"], "through a binding") {
		t.Fatalf("inbox's added keys = %v", added)
	}
	if got := titles(t, inbox); len(got) != 2 {
		t.Fatalf("inbox after the dry run = %v", got)
	}
}

// TestDryRunsHeld: one user holds at most 8 dry runs in a workspace, and a workspace 16;
// discarding one makes room.
func TestDryRunsHeld(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _, _ := dryWorkspace(t, s.user(t, "ada"))
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	others := map[string]*capnweb.Promise{}
	for _, name := range []string{"bob", "cy"} {
		u := s.user(t, name)
		await(t, ws.Call(ctx, "addCollaborator", name, "use"))
		others[name] = u.Call(ctx, "openWorkspace", id)
	}
	add := `export default async (env) => env.inbox.add("one more")`
	var first any
	for i := range 8 {
		_, d := dryRun(t, ws, add)
		if i == 0 {
			first = d["id"]
		}
	}
	refused(t, ws.Call(ctx, "executeCode", add, map[string]any{"dryRun": true}), "RESOURCE_EXHAUSTED", "you hold 8 dry runs")
	for range 8 {
		dryRun(t, others["bob"], add)
	}
	refused(t, others["cy"].Call(ctx, "executeCode", add, map[string]any{"dryRun": true}), "RESOURCE_EXHAUSTED", "holds 16 dry runs, the most it may")
	await(t, ws.Call(ctx, "discardDryRun", first))
	dryRun(t, others["cy"], add)
}

// TestDryRunConflicts: a commit conflicts, applying nothing, when a key appeared under a
// prefix the dry run listed, when a gadget it ran was redeployed, or deleted.
func TestDryRunConflicts(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, inbox, archive := dryWorkspace(t, s.user(t, "ada"))
	copyAll := `export default async (env) => { for (const it of await env.inbox.list()) await env.archive.add(it.title); }`

	_, d := dryRun(t, ws, copyAll)
	await(t, inbox.Call(ctx, "add", "late"))
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "CONFLICT", `the keys listed under prefix "todo/" of gadget inbox changed`)

	_, d = dryRun(t, ws, copyAll)
	await(t, ws.Call(ctx, "gadget", "inbox").Call(ctx, "deploy", jsFiles(t, todoJSGadget)))
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "CONFLICT", "gadget inbox is at version 2 now, the dry run ran version 1")

	_, d = dryRun(t, ws, copyAll)
	await(t, ws.Call(ctx, "gadget", "inbox").Call(ctx, "delete"))
	refused(t, ws.Call(ctx, "commitDryRun", d["id"]), "CONFLICT", "gadget inbox was deleted since the dry run")
	if got := titles(t, archive); len(got) != 0 {
		t.Fatalf("archive after three conflicts = %v", got)
	}
}
