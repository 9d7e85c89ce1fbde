package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
)

// boardBuild is the package of the tutorial's board gatekeeper (docs/tutorial-gatekeeper.md),
// made once per test process with `atelier new gatekeeper --lang go board` and `atelier build`.
var boardBuild struct {
	once sync.Once
	path string
	err  string
}

// boardPackage returns the path of the board gatekeeper's package.
func boardPackage(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: builds the board gatekeeper with go and the npm tools")
	}
	boardBuild.once.Do(func() {
		dir, err := os.MkdirTemp("", "atelier-board-")
		if err != nil {
			boardBuild.err = err.Error()
			return
		}
		project := filepath.Join(dir, "board")
		if r := atelier(context.Background(), "", "new", "gatekeeper", "--lang", "go", "--dir", project, "board"); r.code != 0 {
			boardBuild.err = "atelier new: " + r.err
			return
		}
		if r := atelier(context.Background(), "", "build", project); r.code != 0 {
			boardBuild.err = "atelier build: " + r.err
			return
		}
		boardBuild.path = filepath.Join(project, "build", "board.gkp")
	})
	if boardBuild.err != "" {
		t.Fatal(boardBuild.err)
	}
	return boardBuild.path
}

// boardServer starts a server, installs the board gatekeeper on it as the admin and signs ada
// up, whose login the commands use from then on.
func boardServer(t *testing.T) {
	t.Helper()
	pkg := boardPackage(t)
	isolate(t)
	url, out := serveOut(t)
	t.Setenv("ATELIER_SERVER", url)
	m := adminTokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("atelier serve printed no admin token: %s", out.String())
	}
	t.Setenv("ATELIER_TOKEN", m[1])
	ok(t, "gatekeeper", "install", pkg)
	t.Setenv("ATELIER_TOKEN", "")
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
}

// okIn runs args with stdin and fails the test unless the command succeeds.
func okIn(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	r := atelier(context.Background(), stdin, args...)
	if r.code != 0 {
		t.Fatalf("atelier %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.err)
	}
	return r.stdout
}

const (
	board      = "https://api.example.com/boards/team"
	pinSnippet = `export default async (env) => {
  const hi = await env.board.hello("ada");
  const queued = await env.board.pin("ship it");
  return { hi, queued };
}`
)

// pin runs pinSnippet with the board account bound as env.board and returns the queued
// action's ID.
func pin(t *testing.T, account string) string {
	t.Helper()
	out := okIn(t, pinSnippet, "exec", "--gatekeeper", "board="+account, "-")
	var v struct {
		Hi     string
		Queued struct{ Action json.Number }
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil || v.Hi != "hello ada from board team" || v.Queued.Action == "" {
		t.Fatalf("exec of the pin snippet printed %q (%v)", out, err)
	}
	return v.Queued.Action.String()
}

// TestAccountCommands: connect an account with the credentials from a file, from standard
// input, refused without them (standard input is not a terminal) and with a field missing or
// extra; list it (table and JSON); disconnect it by its resource.
func TestAccountCommands(t *testing.T) {
	boardServer(t)
	want(t, ok(t, "account", "list"), "No accounts yet", "atelier account connect")
	fails(t, 1, []string{"account", "connect", "board", board}, "standard input is not a terminal", "--credentials-file", `{"token": "SECRET"}`)
	fails(t, 1, []string{"account", "connect", "nope", board, "--credentials-file", "-"}, "the credentials file - is not a JSON object")
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fails(t, 1, []string{"account", "connect", "nope", board, "--credentials-file", file("ok.json", `{"token": "s3cret"}`)},
		`no gatekeeper "nope" is installed; there are: board, mcp`)
	fails(t, 1, []string{"account", "connect", "board", board, "--credentials-file", file("empty.json", `{}`)},
		`credential "token"`, "is missing", "board asks for: token")
	fails(t, 1, []string{"account", "connect", "board", board, "--credentials-file", file("extra.json", `{"token": "x", "password": "y"}`)},
		`takes no credential "password"`, "board asks for: token")
	fails(t, 1, []string{"account", "connect", "board", "https://elsewhere.example/x", "--credentials-file", file("ok2.json", `{"token": "s3cret"}`)},
		"must match one of board's patterns: https://api.example.com/boards/:board")

	out := ok(t, "account", "connect", "board", board, "--credentials-file", filepath.Join(dir, "ok.json"))
	want(t, out, "Connected board "+board+" as acct_", "atelier exec --gatekeeper board=")
	var second accountInfo
	if err := json.Unmarshal([]byte(okIn(t, `{"token": "other"}`, "account", "connect", "board", "https://api.example.com/boards/ops", "--credentials-file", "-", "--json")), &second); err != nil ||
		second.Resource != "https://api.example.com/boards/ops" || second.Name != "board" || second.Kind != "board" {
		t.Fatalf("account connect --json from standard input = %+v, %v", second, err)
	}
	list := ok(t, "account", "list")
	want(t, list, "GATEKEEPER", board, "https://api.example.com/boards/ops")
	if strings.Contains(list, "s3cret") {
		t.Fatalf("account list shows a credential: %s", list)
	}
	var accts []accountInfo
	if err := json.Unmarshal([]byte(ok(t, "account", "list", "--json")), &accts); err != nil || len(accts) != 2 {
		t.Fatalf("account list --json = %v, %v", accts, err)
	}
	fails(t, 1, []string{"account", "disconnect", "board"}, "2 of your accounts are on gatekeeper board", "resource URL or ID")
	want(t, ok(t, "account", "disconnect", "https://api.example.com/boards/ops"), "Disconnected board https://api.example.com/boards/ops")
	want(t, ok(t, "account", "disconnect", "board"), "Disconnected board "+board)
	fails(t, 1, []string{"account", "disconnect", second.ID}, "you have no account", "atelier account list")
	want(t, ok(t, "account", "list"), "No accounts yet")
}

// acctID is the form of an account's ID, which approvals list must not show in place of the
// gatekeeper's name and the resource.
var acctID = regexp.MustCompile(`acct_\w+`)

// TestApprovalsCommands follows the gatekeeper tutorial's CLI path (connect, exec with
// --gatekeeper, list, approve) and the rest of the approval commands: approving twice,
// rejecting with a reason, auto-approval rules, exec with an unknown account, and an account
// disconnected under a gadget binding.
func TestApprovalsCommands(t *testing.T) {
	boardServer(t)
	okIn(t, `{"token": "s3cret"}`, "account", "connect", "board", board, "--credentials-file", "-")
	ok(t, "workspace", "create", "planning")
	want(t, ok(t, "approvals", "list"), "No actions wait for a decision")

	r := atelier(context.Background(), pinSnippet, "exec", "--gatekeeper", "board=https://api.example.com/boards/nope", "-")
	if r.code != 1 || !strings.Contains(r.err, `--gatekeeper board=https://api.example.com/boards/nope: you have no account`) || !strings.Contains(r.err, "atelier account list") {
		t.Fatalf("exec with an unknown account: exit %d, %q", r.code, r.err)
	}
	fails(t, 2, []string{"exec", "--gatekeeper", "board", "x.js"}, "is not NAME=ACCOUNT")

	id := pin(t, board)
	list := ok(t, "approvals", "list")
	t.Logf("approvals list:\n%s", list)
	want(t, list, "GATEKEEPER", id+"  ", "pending", "board", board, "ada", `Pin "ship it"`)
	if acctID.MatchString(list) || strings.Contains(list, "Greeted") {
		t.Fatalf("approvals list shows an account ID or an observation:\n%s", list)
	}
	var pending []actionEntry
	if err := json.Unmarshal([]byte(ok(t, "approvals", "list", "--json")), &pending); err != nil || len(pending) != 1 ||
		pending[0].Gatekeeper != "board" || pending[0].Resource != board || pending[0].State != "pending" {
		t.Fatalf("approvals list --json = %+v, %v", pending, err)
	}
	want(t, ok(t, "approvals", "approve", id), "Approved action "+id, `Pin "ship it" on `+board, "applied")
	fails(t, 1, []string{"approvals", "approve", id}, "action "+id+" was already decided", "applied, not pending", "atelier approvals list --all")
	fails(t, 1, []string{"approvals", "approve", "1"}, "no action 1 of yours", "atelier approvals list")
	fails(t, 1, []string{"approvals", "reject", "999"}, "NOT_FOUND", "atelier approvals list")
	fails(t, 2, []string{"approvals", "approve", "two"}, `"two" is not an action ID`)
	pinned := okIn(t, `export default async (env) => env.board.pinned()`, "exec", "--gatekeeper", "board=board", "-")
	if strings.Join(strings.Fields(pinned), "") != `["shipit"]` {
		t.Fatalf("pinned after the approval = %q", pinned)
	}

	id = pin(t, "board")
	want(t, ok(t, "approvals", "reject", id, "--reason", "wrong board"), "Rejected action "+id, "rejected: wrong board")
	all := ok(t, "approvals", "list", "--all")
	t.Logf("approvals list --all:\n%s", all)
	want(t, all, "recorded", "Greeted ada", "applied", "rejected", "-> wrong board")
	want(t, ok(t, "approvals", "list"), "No actions wait")

	want(t, ok(t, "approvals", "auto", "list"), "No auto-approval rules")
	fails(t, 1, []string{"approvals", "auto", "add", "board", "hello"}, "INVALID_ARGUMENT", `does not allow auto-approving "hello"`)
	fails(t, 1, []string{"approvals", "auto", "add", "nope", "pin"}, `no gatekeeper "nope"`)
	want(t, ok(t, "approvals", "auto", "add", "board", "pin"), "Actions of kind pin from your accounts on board are applied without asking",
		"atelier approvals auto remove board pin")
	want(t, ok(t, "approvals", "auto", "list"), "GATEKEEPER", "board", "pin", "sha256:")
	var rules []autoRule
	if err := json.Unmarshal([]byte(ok(t, "approvals", "auto", "list", "--json")), &rules); err != nil || len(rules) != 1 || rules[0].Name != "board" || rules[0].Kind != "pin" {
		t.Fatalf("approvals auto list --json = %+v, %v", rules, err)
	}
	id = pin(t, "board")
	want(t, ok(t, "approvals", "list"), "No actions wait")
	want(t, ok(t, "approvals", "list", "--all", "--limit", "1"), id, "applied (auto)")
	want(t, ok(t, "approvals", "auto", "remove", "board", "pin"), "wait for your approval again")
	want(t, ok(t, "approvals", "auto", "list"), "No auto-approval rules")
	id = pin(t, "board")
	want(t, ok(t, "approvals", "list"), id, "pending")

	// A gadget bound to the account, until the account is disconnected.
	ok(t, append([]string{"gadget", "deploy", "todo-list"}, todoJS...)...)
	want(t, ok(t, "gadget", "gatekeeper-bindings"), "No gadget reaches a gatekeeper account")
	fails(t, 1, []string{"gadget", "bind-gatekeeper", "todo-list", "board", "nope"}, `you have no account "nope"`)
	want(t, ok(t, "gadget", "bind-gatekeeper", "todo-list", "board", "board"), "todo-list reaches board "+board+" as board")
	want(t, ok(t, "gadget", "gatekeeper-bindings"), "todo-list", "board", "ada", board)
	ok(t, "account", "disconnect", "board")
	want(t, ok(t, "gadget", "gatekeeper-bindings"), "disconnected account acct_")
	want(t, ok(t, "gadget", "unbind-gatekeeper", "todo-list", "board"), "Removed the gatekeeper binding board of todo-list")
	r = atelier(context.Background(), pinSnippet, "exec", "--gatekeeper", "board=board", "-")
	if r.code != 1 || !strings.Contains(r.err, `you have no account "board"`) {
		t.Fatalf("exec with a disconnected account: exit %d, %q", r.code, r.err)
	}
}

// TestAgentCommands: an agent made with the board account in its scope runs a snippet with its
// token; list shows its scope by names; once revoked its token is refused on the next call.
func TestAgentCommands(t *testing.T) {
	boardServer(t)
	okIn(t, `{"token": "s3cret"}`, "account", "connect", "board", board, "--credentials-file", "-")
	ok(t, "workspace", "create", "planning")
	ok(t, append([]string{"gadget", "deploy", "todo-list"}, todoJS...)...)
	want(t, ok(t, "agent", "list"), "No agents yet")
	fails(t, 2, []string{"agent", "create", "helper"}, "--role use or --role build is required")
	fails(t, 1, []string{"agent", "create", "helper", "--role", "use", "--workspace", "nowhere"}, `no workspace with the ID or name "nowhere"`)
	fails(t, 1, []string{"agent", "create", "helper", "--role", "use", "--gatekeeper", "board=nope"}, `--gatekeeper board=nope: you have no account "nope"`)

	out := ok(t, "agent", "create", "helper", "--workspace", "planning", "--role", "use", "--gadget", "todo-list", "--gatekeeper", "board="+board)
	want(t, out, "Created agent helper", "use in workspace planning, gadgets todo-list", "gatekeeper accounts board=board "+board, "shown only this once", "ATELIER_TOKEN")
	token := regexp.MustCompile(`\n  (atl_\S+)\n`).FindStringSubmatch(out)
	if token == nil {
		t.Fatalf("agent create printed no token: %q", out)
	}
	var made struct{ ID, Token string }
	if err := json.Unmarshal([]byte(ok(t, "agent", "create", "ci", "--role", "build", "--gadget", "*", "--json")), &made); err != nil || made.Token == "" || made.ID == "" {
		t.Fatalf("agent create --json = %+v, %v", made, err)
	}
	list := ok(t, "agent", "list")
	t.Logf("agent create:\n%s\nagent list:\n%s", out, list)
	want(t, list, "helper", "planning: use, gadgets todo-list, board=board "+board, "ci", "planning: build, gadgets all")
	var ags []agentInfo
	if err := json.Unmarshal([]byte(ok(t, "agent", "list", "--json")), &ags); err != nil || len(ags) != 2 {
		t.Fatalf("agent list --json = %+v, %v", ags, err)
	}

	t.Setenv("ATELIER_TOKEN", token[1])
	hello := `export default async (env) => env.board.hello("helper")`
	if got := okIn(t, hello, "exec", "-"); strings.TrimSpace(got) != `"hello helper from board team"` {
		t.Fatalf("the agent's snippet printed %q", got)
	}
	fails(t, 1, []string{"agent", "list"}, "FORBIDDEN")
	// The agent lists the queue (naming the gatekeeper from its scope) but decides nothing.
	want(t, ok(t, "approvals", "list", "--all"), "board  ", board, "ada/agent:helper", "Greeted helper")
	fails(t, 1, []string{"approvals", "approve", "1"}, "agents may not decide actions")
	fails(t, 1, []string{"approvals", "auto", "list"}, "agents have no approval rules")
	t.Setenv("ATELIER_TOKEN", "")
	want(t, ok(t, "approvals", "list", "--all"), "Greeted helper", "ada/agent:helper")

	fails(t, 1, []string{"agent", "revoke", "nobody"}, `you have no agent named "nobody"`, "atelier agent list")
	want(t, ok(t, "agent", "revoke", "helper"), "Revoked agent helper", "refused from now on")
	t.Setenv("ATELIER_TOKEN", token[1])
	r := atelier(context.Background(), hello, "exec", "-")
	if r.code != 1 || !strings.Contains(r.err, "UNAUTHORIZED") && !strings.Contains(r.err, "The token in ATELIER_TOKEN was refused") {
		t.Fatalf("the revoked agent's next call: exit %d, %q", r.code, r.err)
	}
	t.Setenv("ATELIER_TOKEN", "")
	want(t, ok(t, "agent", "revoke", made.ID), "Revoked agent ci")
	want(t, ok(t, "agent", "list"), "No agents yet")
}

// TestGatekeeperCommandsHelp: the account, approvals and agent commands, the gadget's
// gatekeeper-binding commands and exec show examples in their help, and each command that
// prints data has --json.
func TestGatekeeperCommandsHelp(t *testing.T) {
	paths := [][]string{{"exec"}, {"account"}, {"approvals"}, {"approvals", "auto"}, {"agent"}}
	for _, group := range [][]string{{"account"}, {"approvals"}, {"approvals", "auto"}, {"agent"}} {
		cs := commands()
		var c command
		for _, name := range group {
			for _, x := range cs {
				if x.name == name {
					c, cs = x, x.subcommands
				}
			}
		}
		for _, s := range c.subcommands {
			if s.flags != nil {
				paths = append(paths, append(append([]string{}, group...), s.name))
			}
		}
	}
	for _, s := range []string{"bind-gatekeeper", "unbind-gatekeeper", "gatekeeper-bindings"} {
		paths = append(paths, []string{"gadget", s})
	}
	if len(paths) < 20 {
		t.Fatalf("only %d commands to check: %v", len(paths), paths)
	}
	printsData := map[string]bool{"account connect": true, "account list": true, "approvals list": true, "approvals approve": true,
		"approvals reject": true, "approvals auto list": true, "agent create": true, "agent list": true, "gadget gatekeeper-bindings": true}
	for _, p := range paths {
		h := ok(t, append([]string{"help"}, p...)...)
		if !strings.Contains(h, "Example") || !strings.Contains(h, "\n  atelier "+strings.Join(p, " ")) {
			t.Errorf("atelier help %s has no examples:\n%s", strings.Join(p, " "), h)
		}
		if printsData[strings.Join(p, " ")] && !strings.Contains(h, "-json") {
			t.Errorf("atelier %s has no --json:\n%s", strings.Join(p, " "), h)
		}
	}
}
