package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// todoJS is the JS to-do gadget's folder and the grants it needs (deployed without a build).
var todoJS = []string{filepath.Join("..", "..", "gadgets", "todo-jsgadget"),
	"--grant", "atelier:host/kv,atelier:host/log,atelier:host/events,atelier:host/bindings"}

// failsIn is fails with stdin as standard input.
func failsIn(t *testing.T, stdin string, code int, args []string, want ...string) {
	t.Helper()
	r := atelier(context.Background(), stdin, args...)
	if r.code != code {
		t.Fatalf("atelier %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.err)
	}
	for _, w := range want {
		if !strings.Contains(r.err, w) {
			t.Fatalf("atelier %s: stderr %q does not mention %q", strings.Join(args, " "), r.err, w)
		}
	}
}

// users keeps one credentials directory per user of a test's server, so that commands run
// as whoever `as` names.
type users struct {
	t    *testing.T
	dirs map[string]string
}

// newUsers starts a server for the test and signs up each of names (the first is current).
func newUsers(t *testing.T, names ...string) *users {
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))
	u := &users{t, map[string]string{}}
	for i := len(names) - 1; i >= 0; i-- {
		u.dirs[names[i]] = t.TempDir()
		u.as(names[i])
		t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
		ok(t, "login", "--signup", "--username", names[i])
		t.Setenv("ATELIER_PASSWORD", "")
	}
	return u
}

// as makes the next commands run as user name.
func (u *users) as(name string) { u.t.Setenv("XDG_CONFIG_HOME", u.dirs[name]) }

func want(t *testing.T, out string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(out, p) {
			t.Fatalf("output %q does not mention %q", out, p)
		}
	}
}

// TestGadgetWorkspaceManageCommands renames and deletes gadgets and workspaces from the CLI:
// deletes refuse without --yes when standard input is no terminal, a missing gadget says to
// list the gadgets, and a collaborator whose role is too weak is refused.
func TestGadgetWorkspaceManageCommands(t *testing.T) {
	u := newUsers(t, "ada", "bob")
	ok(t, "workspace", "create", "home")
	ok(t, append([]string{"gadget", "deploy", "todo"}, todoJS...)...)

	want(t, ok(t, "gadget", "rename", "todo", "chores"), "Renamed gadget todo to chores.")
	if out := ok(t, "gadget", "list"); !strings.Contains(out, "chores") || strings.Contains(out, "todo") {
		t.Fatalf("gadget list after the rename = %q", out)
	}
	want(t, ok(t, "gadget", "call", "chores", "add", `"buy milk"`), "buy milk")
	fails(t, 1, []string{"gadget", "rename", "todo", "x"}, "there is no gadget todo in this workspace: run `atelier gadget list`")
	fails(t, 2, []string{"gadget", "rename", "chores"}, "want the gadget's name and its new name", "Usage: atelier gadget rename")
	fails(t, 2, []string{"gadget", "delete"}, "want the name of the gadget to delete", "atelier gadget list")
	fails(t, 1, []string{"gadget", "delete", "--yes", "nothing"}, "there is no gadget nothing in this workspace: run `atelier gadget list`")
	fails(t, 1, []string{"gadget", "delete", "chores"}, "not going to delete gadget chores", "standard input is not a terminal",
		"run `atelier gadget delete chores --yes`")
	want(t, ok(t, "gadget", "list"), "chores")

	// bob may use the workspace: he is refused deleting or renaming its gadget and deleting it.
	ok(t, "collaborator", "add", "bob", "--role", "use")
	u.as("bob")
	want(t, ok(t, "workspace", "use", "home"), "role use")
	fails(t, 1, []string{"gadget", "delete", "--yes", "chores"}, "delete needs the build role", "you have use", "Only the workspace's owner can change your role")
	fails(t, 1, []string{"gadget", "rename", "chores", "mine"}, "needs the build role", "FORBIDDEN")
	fails(t, 1, []string{"workspace", "delete", "--yes", "home"}, "delete needs the owner role", "FORBIDDEN")
	fails(t, 1, []string{"workspace", "rename", "home", "bobs"}, "rename needs the build role")
	u.as("ada")
	want(t, ok(t, "gadget", "list"), "chores")

	want(t, ok(t, "gadget", "delete", "chores", "--yes"), "Deleted gadget chores with its state and 1 version.")
	want(t, ok(t, "gadget", "list"), "No gadgets yet")
	fails(t, 1, []string{"gadget", "delete", "--yes", "chores"}, "there is no gadget chores", "atelier gadget list")

	ok(t, "workspace", "create", "lab")
	want(t, ok(t, "workspace", "rename", "lab", "experiments"), "Renamed workspace lab (ws_", "to experiments.")
	if out := ok(t, "workspace", "list"); !strings.Contains(out, "experiments") || strings.Contains(out, "lab") {
		t.Fatalf("workspace list after the rename = %q", out)
	}
	fails(t, 1, []string{"workspace", "rename", "lab", "x"}, `no workspace with the ID or name "lab"`, "atelier workspace list")
	fails(t, 2, []string{"workspace", "delete"}, "want the ID or name of the workspace to delete")
	fails(t, 1, []string{"workspace", "delete", "experiments"}, "not going to delete workspace experiments", "not a terminal",
		"run `atelier workspace delete experiments --yes`")
	want(t, ok(t, "workspace", "delete", "--yes", "experiments"), "Deleted workspace experiments", "It was the current workspace", "atelier workspace use")
	if out := ok(t, "workspace", "list"); strings.Contains(out, "experiments") || !strings.Contains(out, "home") {
		t.Fatalf("workspace list after the delete = %q", out)
	}
	fails(t, 1, []string{"gadget", "list"}, "no workspace selected")
	if out := ok(t, "workspace", "delete", "--yes", "home"); strings.Contains(out, "current workspace") {
		t.Fatalf("deleting a workspace that is not the current one said %q", out)
	}
	u.as("bob")
	want(t, ok(t, "workspace", "list"), "No workspaces yet")
}

// TestCollaboratorAndShareCommands shares a workspace from the CLI: collaborators are added,
// get another role and are removed; a share link joins a user, and once revoked it works no
// more and whoever joined through it lost access.
func TestCollaboratorAndShareCommands(t *testing.T) {
	u := newUsers(t, "ada", "bob", "carol", "dave")
	ok(t, "workspace", "create", "home")
	want(t, ok(t, "collaborator", "list"), "The workspace is not shared", "atelier collaborator add")
	want(t, ok(t, "collaborator", "add", "bob", "--role", "use"), "Added bob as a collaborator with the role use.")
	want(t, ok(t, "collaborator", "add", "bob", "--role", "build"), "Changed bob's role from use to build.")
	var cs []map[string]string
	if err := json.Unmarshal([]byte(ok(t, "collaborator", "list", "--json")), &cs); err != nil || len(cs) != 1 ||
		cs[0]["username"] != "bob" || cs[0]["role"] != "build" {
		t.Fatalf("collaborator list --json = %v (%v), want bob with the role build", cs, err)
	}
	want(t, ok(t, "collaborator", "list"), "USER", "bob", "build")
	fails(t, 1, []string{"collaborator", "add", "nobody"}, `there is no user "nobody"`, "sign up")
	fails(t, 1, []string{"collaborator", "add", "carol", "--role", "owner"}, `role "owner": want build or use`, "INVALID_ARGUMENT")
	fails(t, 2, []string{"collaborator", "add"}, "want the username")

	u.as("bob") // build, not owner: may list, not share
	ok(t, "workspace", "use", "home")
	want(t, ok(t, "collaborator", "list"), "bob")
	fails(t, 1, []string{"collaborator", "add", "carol"}, "addCollaborator needs the owner role", "you have build")
	fails(t, 1, []string{"share", "create"}, "createShareLink needs the owner role")
	fails(t, 1, []string{"share", "list"}, "listShareLinks needs the owner role")
	u.as("ada")
	want(t, ok(t, "collaborator", "remove", "bob"), "Removed bob")
	fails(t, 1, []string{"collaborator", "remove", "bob"}, "bob is not a collaborator of this workspace", "atelier collaborator list")
	u.as("bob")
	fails(t, 1, []string{"gadget", "list"}, "you have no access to workspace")

	u.as("ada")
	want(t, ok(t, "share", "list"), "No share links", "atelier share create")
	var link shareLink
	if err := json.Unmarshal([]byte(ok(t, "share", "create", "--role", "use", "--json")), &link); err != nil {
		t.Fatal(err)
	}
	server := strings.TrimSuffix(strings.Replace(os.Getenv("ATELIER_SERVER"), "ws://", "http://", 1), "/api")
	if !regexp.MustCompile(`^`+regexp.QuoteMeta(server)+`/#/join/ws_[^/]+/atl_[A-Za-z0-9_-]+$`).MatchString(link.URL) ||
		!strings.HasPrefix(link.ID, "sl_") || link.Role != "use" || !strings.HasSuffix(link.URL, "/"+link.Key) {
		t.Fatalf("share create --json = %+v, want a link to %s/#/join/WORKSPACE/KEY", link, server)
	}
	out := ok(t, "share", "create", "--role", "build")
	want(t, out, "with the role build (shown once):\n"+server+"/#/join/ws_", "atelier workspace join '")
	if out := ok(t, "share", "list"); strings.Count(out, "sl_") != 2 || !strings.Contains(out, link.ID) {
		t.Fatalf("share list = %q, want both links", out)
	}
	u.as("carol")
	want(t, ok(t, "workspace", "join", link.URL), "Joined workspace home", "of ada with the role use", "current workspace")
	want(t, ok(t, "gadget", "list"), "No gadgets yet")
	fails(t, 2, []string{"workspace", "join", "http://example.com/#/gadgets"}, "not a share link")

	u.as("ada")
	want(t, ok(t, "collaborator", "list"), "carol")
	want(t, ok(t, "share", "revoke", link.ID), "Revoked share link "+link.ID)
	fails(t, 1, []string{"share", "revoke", link.ID}, "this workspace has no share link "+link.ID, "atelier share list")
	if out := ok(t, "share", "list"); strings.Contains(out, link.ID) || strings.Count(out, "sl_") != 1 {
		t.Fatalf("share list after the revoke = %q", out)
	}
	if out := ok(t, "collaborator", "list"); strings.Contains(out, "carol") {
		t.Fatalf("carol joined through the revoked link and is still a collaborator: %q", out)
	}
	u.as("carol")
	fails(t, 1, []string{"gadget", "list"}, "you have no access to workspace")
	u.as("dave")
	fails(t, 1, []string{"workspace", "join", link.URL}, "the share key is not valid", "revoked", "Ask the workspace's owner for a new link")
	want(t, ok(t, "workspace", "list"), "No workspaces yet")
}

// TestPasswordCommand changes a password from standard input and from files; a wrong current
// password changes nothing.
func TestPasswordCommand(t *testing.T) {
	newUsers(t, "ada")
	loginWith := func(pw string) result {
		t.Setenv("ATELIER_PASSWORD", pw)
		defer t.Setenv("ATELIER_PASSWORD", "")
		return atelier(context.Background(), "", "login", "--username", "ada")
	}
	failsIn(t, "wrong password!\nsecond password\n", 1, []string{"password"}, "the current password is wrong, so nothing changed", "run `atelier password` again")
	if r := loginWith("second password"); r.code == 0 {
		t.Fatal("the password changed although the current one given was wrong")
	}
	if r := atelier(context.Background(), "correct horse battery staple\nsecond password\n", "password"); r.code != 0 ||
		!strings.Contains(r.stdout, "Changed the password of ada") {
		t.Fatalf("password from standard input: exit %d, %q %q", r.code, r.stdout, r.err)
	}
	if r := loginWith("correct horse battery staple"); r.code == 0 {
		t.Fatal("the old password still logs in")
	}
	if r := loginWith("second password"); r.code != 0 {
		t.Fatalf("the new password does not log in: %s", r.err)
	}

	dir := t.TempDir()
	oldFile, newFile := filepath.Join(dir, "old"), filepath.Join(dir, "new")
	os.WriteFile(oldFile, []byte("second password\n"), 0o600)
	os.WriteFile(newFile, []byte("third password\n"), 0o600)
	want(t, ok(t, "password", "--old-file", oldFile, "--new-file", newFile), "Changed the password of ada")
	if r := loginWith("third password"); r.code != 0 {
		t.Fatalf("the password from --new-file does not log in: %s", r.err)
	}
	fails(t, 1, []string{"password", "--old-file", oldFile, "--new-file", newFile}, "the current password is wrong")
	failsIn(t, "third password\nshort\n", 1, []string{"password"}, "INVALID_ARGUMENT")
	failsIn(t, "", 1, []string{"password"}, "no current password on standard input", "--old-file")
	failsIn(t, "third password\n", 1, []string{"password"}, "no new password on standard input")
	fails(t, 1, []string{"password", "--old-file", filepath.Join(dir, "missing")}, "read the current password")
	fails(t, 2, []string{"password", "fourth password"}, "password takes no arguments")
	if r := loginWith("third password"); r.code != 0 {
		t.Fatalf("a refused change changed the password: %s", r.err)
	}
}

// TestAuditCommand reads the workspace's audit log with filters and paging, as a table and as
// JSON; a collaborator with the use role is refused.
func TestAuditCommand(t *testing.T) {
	u := newUsers(t, "ada", "bob")
	ok(t, "workspace", "create", "home")
	ok(t, append([]string{"gadget", "deploy", "todo"}, todoJS...)...)
	ok(t, "collaborator", "add", "bob", "--role", "build")
	u.as("bob")
	ok(t, "workspace", "use", "home")
	ok(t, "gadget", "rename", "todo", "chores")
	u.as("ada")
	ok(t, "collaborator", "add", "bob", "--role", "use")

	var all []map[string]any
	if err := json.Unmarshal([]byte(ok(t, "audit", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	var actions []string
	for i, l := range all {
		actions = append(actions, l["actor"].(string)+" "+l["action"].(string))
		if i > 0 && l["seq"].(float64) >= all[i-1]["seq"].(float64) {
			t.Fatalf("audit --json is not newest first: %v", all)
		}
	}
	wantActions := []string{"ada collaborator.add", "bob gadget.rename", "ada collaborator.add", "ada gadget.create", "ada workspace.create"}
	if strings.Join(actions, ",") != strings.Join(wantActions, ",") {
		t.Fatalf("audit lines %q, want %q", actions, wantActions)
	}
	out := ok(t, "audit")
	want(t, out, "SEQ", "ACTOR", "ACTION", "bob", "gadget.rename", "chores")
	if strings.Count(out, "\n") != len(all)+1 {
		t.Fatalf("audit = %q, want a header and %d lines", out, len(all))
	}
	r := atelier(context.Background(), "", "audit", "--limit", "2")
	if r.code != 0 || strings.Count(r.stdout, "\n") != 3 || !strings.Contains(r.stdout, "gadget.rename") || strings.Contains(r.stdout, "gadget.create") {
		t.Fatalf("audit --limit 2: exit %d, %q", r.code, r.stdout)
	}
	seq := int(all[1]["seq"].(float64))
	want(t, r.err, "Older lines: add --before "+strconv.Itoa(seq))
	if out := ok(t, "audit", "--before", strconv.Itoa(seq)); strings.Contains(out, "gadget.rename") || !strings.Contains(out, "gadget.create") ||
		strings.Count(out, "\n") != 4 {
		t.Fatalf("audit --before %d = %q, want the 3 lines before it", seq, out)
	}
	if out := ok(t, "audit", "--actor", "bob"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "gadget.rename") {
		t.Fatalf("audit --actor bob = %q", out)
	}
	if out := ok(t, "audit", "--action", "collaborator.", "--limit", "1"); strings.Count(out, "\n") != 2 || !strings.Contains(out, "collaborator.add") ||
		!strings.Contains(out, "use") {
		t.Fatalf("audit --action collaborator. --limit 1 = %q", out)
	}
	want(t, ok(t, "audit", "--actor", "nobody"), "No audit lines match.")
	fails(t, 2, []string{"audit", "--limit", "0"}, "want 1 to 1000")
	u.as("bob")
	fails(t, 1, []string{"audit"}, "auditLog needs the build role", "you have use", "Only the workspace's owner can change your role")
}
