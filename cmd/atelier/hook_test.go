package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"atelier/host/kernel"
	"atelier/tests/notessvc"
)

// TestHookCommands: on a server with the notes gatekeeper, ada binds the to-do gadget to her
// notes account and adds hooks from the CLI: a webhook one (whose URL is printed and listed)
// and a poll one with params; the refusals name the next step (unknown gadget, binding, event
// and function, bad params); list filters by gadget and prints JSON; another user can neither
// list nor remove them; a note added at the service fires the webhook hook, whose failure the
// list shows; remove takes one away and a second remove says it is gone.
func TestHookCommands(t *testing.T) {
	svc := notessvc.Start(t)
	pkg := filepath.Join(t.TempDir(), "notes.gkp")
	if err := os.WriteFile(pkg, svc.Archive(t, svc.Manifest(t, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	const webhook, poll = "note-added", "digest" // the notes gatekeeper's hook events
	isolate(t)
	url, out := serveOut(t, "--gatekeeper-allow-addr", svc.Addr)
	t.Setenv("ATELIER_SERVER", url)
	m := adminTokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("atelier serve printed no admin token: %s", out.String())
	}
	t.Setenv("ATELIER_TOKEN", m[1])
	ok(t, "gatekeeper", "install", pkg)
	t.Setenv("ATELIER_TOKEN", "")
	asAda := signupAs(t, "ada")
	okIn(t, `{"token": "`+notessvc.Token+`"}`, "account", "connect", "notes", svc.Notebook(), "--credentials-file", "-")
	ok(t, "workspace", "create", "home")
	ok(t, append([]string{"gadget", "deploy", "todo-list"}, todoJS...)...)
	ok(t, "gadget", "bind-gatekeeper", "todo-list", "notes", "notes")

	want(t, ok(t, "hook", "list"), "No hooks in this workspace", "atelier:host/hooks", "atelier hook add GADGET BINDING EVENT FUNCTION")
	want(t, ok(t, "hook", "list", "--gadget", "todo-list"), "todo-list has no hooks", "atelier hook add todo-list BINDING EVENT FUNCTION")
	if out := strings.TrimSpace(ok(t, "hook", "list", "--json")); out != "[]" {
		t.Fatalf("hook list --json with no hooks = %q, want []", out)
	}

	fails(t, 2, []string{"hook", "add", "todo-list", "notes", webhook}, "want a gadget, its gatekeeper binding, an event and a function")
	fails(t, 2, []string{"hook", "add", "todo-list", "notes", webhook, "add", "--params", "{nope"}, "--params {nope is not JSON")
	fails(t, 2, []string{"hook", "list", "todo-list"}, "--gadget NAME")
	fails(t, 1, []string{"hook", "add", "nothing", "notes", webhook, "add"}, "nothing", "atelier gadget list")
	fails(t, 1, []string{"hook", "add", "todo-list", "mail", webhook, "add"}, "mail", "atelier gadget gatekeeper-bindings")
	fails(t, 1, []string{"hook", "add", "todo-list", "notes", "nothing-happened", "add"}, "nothing-happened", "its events: "+webhook, `"hooks" of its manifest`)
	fails(t, 1, []string{"hook", "add", "todo-list", "notes", webhook, "fly"}, "fly", "atelier inspect")

	out2 := ok(t, "hook", "add", "todo-list", "notes", webhook, "add")
	added := regexp.MustCompile(`Added hook (hk_\w+): ` + regexp.QuoteMeta(webhook) + ` of todo-list's binding notes calls todo-list\.add\.`).FindStringSubmatch(out2)
	if added == nil || !strings.Contains(out2, "atelier hook remove "+added[1]) {
		t.Fatalf("hook add said %q", out2)
	}
	id := added[1]
	hookURL := regexp.MustCompile(`\n  (\S+/hooks/` + id + `)\n`).FindStringSubmatch(out2)
	if hookURL == nil {
		t.Fatalf("hook add printed no URL ending in /hooks/%s: %q", id, out2)
	}
	var polled kernel.HookInfo
	if err := json.Unmarshal([]byte(ok(t, "hook", "add", "todo-list", "notes", poll, "remove", "--params", `{"everyMs": 3600000}`, "--json")), &polled); err != nil ||
		!strings.HasPrefix(polled.ID, "hk_") || polled.Event != poll || polled.Method != "remove" || polled.Source != "poll" {
		t.Fatalf("hook add --json for the poll hook = %+v, %v", polled, err)
	}

	list := ok(t, "hook", "list")
	t.Logf("hook list:\n%s", list)
	want(t, list, "ID", "CREATOR", "LAST ERROR", "ada", id, polled.ID, "todo-list", "notes."+webhook, "notes."+poll, "webhook", "poll", hookURL[1])
	want(t, ok(t, "hook", "list", "--gadget", "todo-list"), id, polled.ID)
	var hs []kernel.HookInfo
	if err := json.Unmarshal([]byte(ok(t, "hook", "list", "--json")), &hs); err != nil || len(hs) != 2 {
		t.Fatalf("hook list --json = %+v, %v; want the two hooks", hs, err)
	}
	for _, h := range hs {
		if h.ID == id && (hookGadget(h) != "todo-list" || h.Binding != "notes" || h.Event != webhook || h.Method != "add" || h.Source != "webhook" ||
			h.URL != hookURL[1] || h.Creator != "ada" || h.Fires != 0 || !h.LastFire.IsZero() || h.LastError != "") {
			t.Errorf("the webhook hook in list --json = %+v", h)
		}
		if h.ID == polled.ID && !strings.Contains(h.Params, "3600000") {
			t.Errorf("the poll hook in list --json = %+v, want its params", h)
		}
	}
	if strings.Contains(ok(t, "hook", "list", "--json"), "secret") {
		t.Error("hook list --json shows a secret")
	}

	// A note added at the service fires the webhook hook: the to-do gadget's add gets the
	// event (an object, not a title), so the firing fails, and the list says so.
	svc.AddNote(t, "from the service")
	fired := waitHook(t, id, func(h kernel.HookInfo) bool { return h.Fires > 0 && h.LastError != "" })
	if fired.LastFire.IsZero() || !strings.Contains(fired.LastError, "title must be a string") {
		t.Errorf("the fired hook = %+v, want its last fire and the gadget's error", fired)
	}
	want(t, ok(t, "hook", "list", "--gadget", "todo-list"), "TypeError: add(title)")

	// Another user can neither see nor remove them.
	home := workspaceID(t, "home")
	signupAs(t, "bob")
	ok(t, "workspace", "create", "lab")
	want(t, ok(t, "hook", "list"), "No hooks in this workspace")
	fails(t, 1, []string{"hook", "remove", id}, "this workspace has no hook "+id, "atelier hook list")
	fails(t, 1, []string{"hook", "remove", id, "-w", home}, "FORBIDDEN")
	fails(t, 1, []string{"hook", "list", "-w", home}, "FORBIDDEN")
	asAda()
	want(t, ok(t, "hook", "list"), id)

	want(t, ok(t, "hook", "remove", id), "Removed hook "+id)
	if out := ok(t, "hook", "list"); strings.Contains(out, id) || !strings.Contains(out, polled.ID) {
		t.Fatalf("hook list after remove = %q, want only %s", out, polled.ID)
	}
	fails(t, 1, []string{"hook", "remove", id}, "this workspace has no hook "+id, "atelier hook list")
	want(t, ok(t, "hook", "remove", polled.ID, "-w", home), "Removed hook "+polled.ID)
	want(t, ok(t, "hook", "list", "--gadget", "todo-list"), "todo-list has no hooks")
}

// waitHook polls `hook list --json` until hook id satisfies done, and returns it; the test fails
// when it does not within a minute.
func waitHook(t *testing.T, id string, done func(kernel.HookInfo) bool) kernel.HookInfo {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var hs []kernel.HookInfo
		if err := json.Unmarshal([]byte(ok(t, "hook", "list", "--json")), &hs); err != nil {
			t.Fatal(err)
		}
		for _, h := range hs {
			if h.ID == id && done(h) {
				return h
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("hook %s did not fire within a minute: %+v", id, hs)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestHookCommandsHelp: every hook command shows examples of itself, and list and add take
// --json.
func TestHookCommandsHelp(t *testing.T) {
	for _, sub := range []string{"", "list", "add", "remove"} {
		args := strings.Fields("help hook " + sub)
		h := ok(t, args...)
		if !strings.Contains(h, "Example") || !strings.Contains(h, "\n  atelier "+strings.Join(args[1:], " ")) {
			t.Errorf("atelier %s has no examples:\n%s", strings.Join(args, " "), h)
		}
		if (sub == "list" || sub == "add") && !strings.Contains(h, "--json") {
			t.Errorf("atelier %s has no --json:\n%s", strings.Join(args, " "), h)
		}
		if (sub == "list" || sub == "add" || sub == "remove") && !strings.Contains(h, "--workspace") {
			t.Errorf("atelier %s has no --workspace:\n%s", strings.Join(args, " "), h)
		}
	}
}
