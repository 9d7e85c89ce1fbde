package main

import (
	"encoding/json"
	"os"
	"testing"

	"atelier/host/kernel"
)

// TestObserverRequirementCommands: the owner requires use collaborators to read the board
// binding themselves; bob, a use collaborator, is refused the gadget list with what to do,
// cannot pick an account of another board, connects his own for the board and picks it, and
// then lists the gadgets; disconnecting it locks him out again; --clear lifts the requirement.
func TestObserverRequirementCommands(t *testing.T) {
	boardServer(t)
	u := &users{t, map[string]string{"ada": os.Getenv("XDG_CONFIG_HOME"), "bob": t.TempDir()}}
	u.as("bob")
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "bob")
	t.Setenv("ATELIER_PASSWORD", "")
	u.as("ada")

	okIn(t, `{"token": "s3cret"}`, "account", "connect", "board", board, "--credentials-file", "-")
	ok(t, "workspace", "create", "planning")
	ok(t, append([]string{"gadget", "deploy", "todo-list"}, todoJS...)...)
	ok(t, "gadget", "bind-gatekeeper", "todo-list", "board", "board")
	ok(t, "collaborator", "add", "bob", "--role", "use")
	want(t, ok(t, "share", "requirements"), "asks no collaborator", "atelier share require ROLE GADGET.NAME")
	fails(t, 1, []string{"share", "require", "use", "todo-list.nope"}, "no gatekeeper binding todo-list.nope", "atelier gadget gatekeeper-bindings")
	fails(t, 2, []string{"share", "require", "use"}, "want a role (build or use) and the bindings")
	want(t, ok(t, "share", "require", "use", "todo-list.board"), "Collaborators with the role use now see this workspace only once",
		"todo-list.board: board "+board)
	want(t, ok(t, "share", "requirements", "use"), "BINDING", "todo-list.board", "use", "board", board, "met")
	id := ok(t, "workspace", "list", "--json")
	var wss []kernel.WorkspaceInfo
	if err := json.Unmarshal([]byte(id), &wss); err != nil || len(wss) != 1 {
		t.Fatalf("workspace list --json = %s (%v)", id, err)
	}

	u.as("bob")
	ok(t, "workspace", "use", string(wss[0].ID))
	fails(t, 1, []string{"gadget", "list"}, "FAILED_PRECONDITION", "needs you to be able to read "+board+" yourself",
		"connect an account of board for "+board, "atelier share satisfy todo-list.board ACCOUNT")
	want(t, ok(t, "share", "requirements"), "todo-list.board", "to do", "To do (todo-list.board): this workspace needs you")
	fails(t, 1, []string{"share", "requirements", "build"}, "only your own role's")
	okIn(t, `{"token": "bobs"}`, "account", "connect", "board", "https://api.example.com/boards/ops", "--credentials-file", "-")
	fails(t, 1, []string{"share", "satisfy", "todo-list.board", "https://api.example.com/boards/ops"}, "needs an account of gatekeeper board for "+board)
	okIn(t, `{"token": "bobs"}`, "account", "connect", "board", board, "--credentials-file", "-")
	fails(t, 1, []string{"gadget", "list"}, "pick your account for it: `atelier share satisfy todo-list.board acct_")
	want(t, ok(t, "share", "satisfy", "todo-list.board", board), "You read todo-list.board with your account acct_",
		"You met all of this workspace's requirements")
	want(t, ok(t, "gadget", "list"), "todo-list")
	var reqs []kernel.ObserverRequirement
	if err := json.Unmarshal([]byte(ok(t, "share", "requirements", "--json")), &reqs); err != nil || len(reqs) != 1 ||
		!reqs[0].Satisfied || reqs[0].Resource != board || reqs[0].Account == "" {
		t.Fatalf("share requirements --json = %+v (%v)", reqs, err)
	}
	ok(t, "account", "disconnect", board)
	fails(t, 1, []string{"gadget", "list"}, "FAILED_PRECONDITION", "the account "+reqs[0].Account+" you picked for it was disconnected")

	u.as("ada")
	want(t, ok(t, "share", "require", "use", "--clear"), "need no account of their own any more")
	u.as("bob")
	want(t, ok(t, "gadget", "list"), "todo-list")

	for _, c := range []string{"require", "requirements", "satisfy"} {
		want(t, ok(t, "help", "share", c), "Examples:", "\n  atelier share "+c+" ", "--json", "FAILED_PRECONDITION")
	}
}
