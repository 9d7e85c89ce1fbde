package kernel_test

import (
	"path/filepath"
	"slices"
	"testing"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
)

// TestObserverRequirements: the owner requires the use role to read a gadget's notebook
// binding themselves. A collaborator opens the workspace and learns why, but reads nothing
// (gadgets, bindings, a gadget) until they pick an account of their own on the same
// gatekeeper for the same notebook; accounts of another gatekeeper or notebook, and other
// users' accounts, are refused. A build collaborator meets use's requirements too. Agents act
// with their user's status; the owner is never asked. Disconnecting the picked account, or
// rebinding the gadget to another notebook, locks the collaborator out again; requirements and
// picks survive a restart; clearing the requirements opens the workspace.
func TestObserverRequirements(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "a.db")
	s := startServer(t, data, withGatekeepers(t, dir))
	tok, err := s.k.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := s.dial(t).Call(ctx, "authenticate", tok)
	gk := await(t, admin.Call(ctx, "installGatekeeper", probeArchive(t))).(map[string]any)["id"].(string)
	other := probeManifest
	other.Name = "probe-two"
	otherArchive, err := gatekeeper.Pack(other, guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	gk2 := await(t, admin.Call(ctx, "installGatekeeper", otherArchive)).(map[string]any)["id"].(string)

	const work, home = "http://127.0.0.1:9/notebooks/work", "http://127.0.0.1:9/notebooks/home"
	connect := func(who *capnweb.Stub, gk, resource string) string {
		t.Helper()
		return await(t, who.Call(ctx, "connectAccount", gk, resource, map[string]any{"token": "t"})).(map[string]any)["id"].(string)
	}
	ada := s.user(t, "ada")
	adaWork := connect(ada, gk, work)
	ws := ada.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "createGadget", "a", guesttest.Bytes(t, counterGo), counterGrants))
	await(t, ws.Call(ctx, "bindGatekeeper", "a", "notes", adaWork))
	bob, carol := s.user(t, "bob"), s.user(t, "carol")
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	await(t, ws.Call(ctx, "addCollaborator", "carol", "build"))
	bws, cws := bob.Call(ctx, "openWorkspace", id), carol.Call(ctx, "openWorkspace", id)
	await(t, bws.Call(ctx, "listGadgets")) // no requirements yet

	// Only the owner sets them, and only to bindings that exist.
	refused(t, bws.Call(ctx, "setObserverRequirements", "use", []any{"a.notes"}), "FORBIDDEN", "needs the owner role")
	refused(t, ws.Call(ctx, "setObserverRequirements", "use", []any{"a.nosuch"}), "NOT_FOUND", "no gatekeeper binding a.nosuch")
	refused(t, ws.Call(ctx, "setObserverRequirements", "use", []any{"notes"}), "INVALID_ARGUMENT", "want GADGET.NAME")
	refused(t, ws.Call(ctx, "setObserverRequirements", "owner", []any{"a.notes"}), "INVALID_ARGUMENT", "want build or use")
	await(t, ws.Call(ctx, "setObserverRequirements", "use", []any{"a.notes"}))

	list := func(w *capnweb.Promise, role string) []map[string]any {
		t.Helper()
		var out []map[string]any
		for _, r := range await(t, w.Call(ctx, "listObserverRequirements", role)).([]any) {
			out = append(out, r.(map[string]any))
		}
		return out
	}
	got := list(ws, "use")
	if len(got) != 1 || got[0]["binding"] != "a.notes" || got[0]["gatekeeper"] != gk || got[0]["gatekeeperName"] != "probe" ||
		got[0]["kind"] != "notebook" || got[0]["resource"] != work || got[0]["satisfied"] != true || got[0]["role"] != "use" {
		t.Fatalf("the owner's listObserverRequirements(use) = %v", got)
	}

	// bob opens the workspace and learns why he reads nothing.
	await(t, bws.Call(ctx, "info"))
	const needs = "needs you to be able to read " + work + " yourself"
	refused(t, bws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", needs)
	refused(t, bws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", "connect an account of probe for "+work)
	refused(t, bws.Call(ctx, "listGatekeeperBindings"), "FAILED_PRECONDITION", needs)
	refused(t, bws.Call(ctx, "gadget", "a").Call(ctx, "connect"), "FAILED_PRECONDITION", needs)
	refused(t, cws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", needs) // build meets use's too
	got = list(bws, "")
	if len(got) != 1 || got[0]["satisfied"] != false || len(got[0]["candidates"].([]any)) != 0 || got[0]["resource"] != work {
		t.Fatalf("bob's listObserverRequirements = %v, want a.notes unmet with no candidate", got)
	}
	refused(t, bws.Call(ctx, "listObserverRequirements", "build"), "FORBIDDEN", "only your own role's")

	// Accounts of another notebook or gatekeeper, ada's account, other bindings: refused.
	bobHome, bobOther := connect(bob, gk, home), connect(bob, gk2, work)
	refused(t, bws.Call(ctx, "satisfyObserverRequirement", "a.notes", bobHome), "FAILED_PRECONDITION", "needs an account of gatekeeper probe for "+work)
	refused(t, bws.Call(ctx, "satisfyObserverRequirement", "a.notes", bobOther), "FAILED_PRECONDITION", "is of gatekeeper probe-two")
	refused(t, bws.Call(ctx, "satisfyObserverRequirement", "a.notes", adaWork), "NOT_FOUND", "you have no account")
	refused(t, bws.Call(ctx, "satisfyObserverRequirement", "b.notes", bobHome), "NOT_FOUND", "does not require b.notes")
	mine := bob.Call(ctx, "createWorkspace", "mine")
	refused(t, mine.Call(ctx, "satisfyObserverRequirement", "a.notes", bobHome), "INVALID_ARGUMENT", "you own workspace mine")
	refused(t, bws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", needs)

	// With a suitable account, he is told to pick it; once picked, he reads.
	bobWork := connect(bob, gk, work)
	refused(t, bws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", "atelier share satisfy a.notes "+bobWork)
	if got = list(bws, ""); !slices.Equal(got[0]["candidates"].([]any), []any{bobWork}) {
		t.Fatalf("bob's candidates = %v, want [%s]", got[0]["candidates"], bobWork)
	}
	ag := await(t, bob.Call(ctx, "createAgent", "helper", map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "use", "gadgets": []any{"*"}}}})).(map[string]any)
	aws := s.dial(t).Call(ctx, "authenticate", ag["token"]).Call(ctx, "openWorkspace", id)
	refused(t, aws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", needs) // bob's status
	refused(t, aws.Call(ctx, "satisfyObserverRequirement", "a.notes", bobWork), "FORBIDDEN", "their owner picks")
	await(t, bws.Call(ctx, "satisfyObserverRequirement", "a.notes", bobWork))
	if gs := await(t, bws.Call(ctx, "listGadgets")).([]any); len(gs) != 1 {
		t.Fatalf("bob's gadgets once met: %v", gs)
	}
	await(t, aws.Call(ctx, "listGadgets"))
	if got = list(bws, ""); got[0]["satisfied"] != true || got[0]["account"] != bobWork || got[0]["problem"] != nil {
		t.Fatalf("bob's listObserverRequirements once met = %v", got)
	}
	refused(t, cws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", needs) // carol did not pick

	// The owner is never asked, nor are the owner's agents.
	await(t, ws.Call(ctx, "listGadgets"))
	own := await(t, ada.Call(ctx, "createAgent", "builder", map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "build", "gadgets": []any{"*"}}}})).(map[string]any)
	await(t, s.dial(t).Call(ctx, "authenticate", own["token"]).Call(ctx, "openWorkspace", id).Call(ctx, "listGadgets"))
	refused(t, ws.Call(ctx, "satisfyObserverRequirement", "a.notes", adaWork), "INVALID_ARGUMENT", "you own workspace home")

	// Rebinding the gadget to another notebook re-locks, until bob picks an account for it.
	adaHome := connect(ada, gk, home)
	await(t, ws.Call(ctx, "bindGatekeeper", "a", "notes", adaHome))
	refused(t, bws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", "the account "+bobWork+" you picked for it was disconnected or is not for that resource any more")
	await(t, bws.Call(ctx, "satisfyObserverRequirement", "a.notes", bobHome))
	await(t, bws.Call(ctx, "listGadgets"))

	// Requirements and picks survive a restart.
	s.stop()
	s = startServer(t, data, withGatekeepers(t, dir))
	login := func(name string) *capnweb.Stub {
		root := s.dial(t)
		return await(t, root.Call(ctx, "authenticate", await(t, root.Call(ctx, "login", name, "password-"+name)))).(*capnweb.Stub)
	}
	bob, ada = login("bob"), login("ada")
	bws, ws = bob.Call(ctx, "openWorkspace", id), ada.Call(ctx, "openWorkspace", id)
	await(t, bws.Call(ctx, "listGadgets"))
	if got = list(ws, ""); len(got) != 1 || got[0]["binding"] != "a.notes" || got[0]["resource"] != home {
		t.Fatalf("requirements after a restart = %v", got)
	}

	// Disconnecting the picked account locks bob out again.
	await(t, bob.Call(ctx, "disconnectAccount", bobHome))
	refused(t, bws.Call(ctx, "listGadgets"), "FAILED_PRECONDITION", "connect an account of probe for "+home)

	// Without requirements, the workspace opens.
	await(t, ws.Call(ctx, "setObserverRequirements", "use", []any{}))
	await(t, bws.Call(ctx, "listGadgets"))
	if got = list(ws, ""); len(got) != 0 {
		t.Fatalf("requirements after clearing them = %v", got)
	}
}
