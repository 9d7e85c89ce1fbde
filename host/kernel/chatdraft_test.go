package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

// scriptAgent runs the script the test set last and reports each run's outcome.
type scriptAgent struct {
	script  atomic.Pointer[func(context.Context, kernel.ChatRun) error]
	results chan error
}

func newScriptAgent() *scriptAgent { return &scriptAgent{results: make(chan error, 16)} }

func (a *scriptAgent) Run(ctx context.Context, run kernel.ChatRun) error {
	err := (*a.script.Load())(ctx, run)
	a.results <- err
	return err
}

func (a *scriptAgent) set(fn func(context.Context, kernel.ChatRun) error) { a.script.Store(&fn) }

// result waits for the next run's outcome.
func (a *scriptAgent) result(t *testing.T) error {
	t.Helper()
	select {
	case err := <-a.results:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("no run ended")
		return nil
	}
}

// want checks that err is set and says want.
func want(err error, what string) error {
	if err == nil || !strings.Contains(err.Error(), what) {
		return fmt.Errorf("got %v, want an error saying %q", err, what)
	}
	return nil
}

const (
	plainAdd = "const todo: Todo = { id, title, done: false };"
	loudAdd  = "const todo: Todo = { id, title: title.toUpperCase(), done: false };"
)

// shout is the agent's edit of the to-do gadget: titles in capitals.
func shout(ctx context.Context, run kernel.ChatRun) error {
	if _, err := run.EditFile(ctx, "todo", "server.ts", "this.", "that."); want(err, "times") != nil {
		return want(err, "found")
	}
	if err := want(func() error { _, err := run.EditFile(ctx, "todo", "server.ts", "not in the file", "x"); return err }(), "found 0 times"); err != nil {
		return err
	}
	f, err := run.EditFile(ctx, "todo", "server.ts", plainAdd, loudAdd)
	if err != nil {
		return err
	}
	if f.Status != "modified" || !strings.Contains(f.Diff, "+    "+loudAdd) || !strings.Contains(f.Diff, "-    "+plainAdd) {
		return fmt.Errorf("editFile = %+v", f)
	}
	src, err := run.ReadFile(ctx, "todo", "server.ts")
	if err != nil || !strings.Contains(src, loudAdd) {
		return fmt.Errorf("readFile after the edit: %v", err)
	}
	return nil
}

func addTodo(t *testing.T, ws *capnweb.Promise, title string) string {
	t.Helper()
	return await(t, ws.Call(ctx, "gadget", "todo").Call(ctx, "connect").Call(ctx, "add", title)).(map[string]any)["title"].(string)
}

func TestChatDraftAcceptRejectAndStale(t *testing.T) {
	agent := newScriptAgent()
	s := chatServer(t, filepath.Join(t.TempDir(), "a.db"), agent)
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	files := map[string]string{}
	for name, src := range jsFiles(t, todoJSGadget) {
		files[name] = src.(string)
	}

	// The agent creates the gadget: it is only a draft until ada accepts it.
	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		return run.CreateGadget(ctx, "todo", files, "")
	})
	chat1 := await(t, ws.Call(ctx, "newChat", "make me a to-do list", "m1")).(map[string]any)["id"].(string)
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	if gs := await(t, ws.Call(ctx, "listGadgets")).([]any); len(gs) != 0 {
		t.Fatalf("a draft made gadgets: %v", gs)
	}
	d := await(t, ws.Call(ctx, "getDraft", chat1)).(map[string]any)
	if ng := d["newGadgets"].([]any); len(ng) != 1 || ng[0].(map[string]any)["name"] != "todo" || len(d["files"].([]any)) != 3 {
		t.Fatalf("draft = %v", d)
	}
	for _, f := range d["files"].([]any) {
		f := f.(map[string]any)
		if f["status"] != "added" || !strings.Contains(f["diff"].(string), "+++ b/todo/"+f["file"].(string)) {
			t.Fatalf("draft file = %v", f)
		}
	}
	deployed := await(t, ws.Call(ctx, "acceptDraft", chat1)).([]any)
	if v := deployed[0].(map[string]any)["versions"].([]any)[0].(map[string]any); v["chat"] != chat1 {
		t.Fatalf("the first version does not name the chat: %v", v)
	}
	if got := addTodo(t, ws, "milk"); got != "milk" {
		t.Fatalf("add = %q", got)
	}
	if got := lastText(t, ws, chat1); got != "ada accepted the draft: todo version 1." {
		t.Fatalf("after acceptance the chat ends with %q", got)
	}
	refused(t, ws.Call(ctx, "acceptDraft", chat1), "FAILED_PRECONDITION", "has no draft")

	// A second chat edits it; rejecting leaves the gadget as it was.
	agent.set(shout)
	chat2 := await(t, ws.Call(ctx, "newChat", "shout the titles", "m1")).(map[string]any)["id"].(string)
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	d = await(t, ws.Call(ctx, "getDraft", chat2)).(map[string]any)
	if fs := d["files"].([]any); len(fs) != 1 || fs[0].(map[string]any)["status"] != "modified" || len(d["stale"].([]any)) != 0 {
		t.Fatalf("draft = %v", d)
	}
	await(t, ws.Call(ctx, "rejectDraft", chat2))
	if got := addTodo(t, ws, "bread"); got != "bread" {
		t.Fatalf("after a rejection add = %q", got)
	}
	if vs := await(t, ws.Call(ctx, "gadget", "todo").Call(ctx, "versions")).([]any); len(vs) != 1 {
		t.Fatalf("a rejected draft made versions: %v", vs)
	}

	// A draft whose gadget moved is refused until the agent rebases it by reading the gadget.
	await(t, ws.Call(ctx, "sendChatMessage", chat2, "again"))
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	await(t, ws.Call(ctx, "gadget", "todo").Call(ctx, "deploy", jsFiles(t, todoJSGadget)))
	refused(t, ws.Call(ctx, "acceptDraft", chat2), "CONFLICT", "rebase")
	if d = await(t, ws.Call(ctx, "getDraft", chat2)).(map[string]any); fmt.Sprint(d["stale"]) != "[todo]" {
		t.Fatalf("stale draft = %v", d)
	}
	if got := lastText(t, ws, chat2); !strings.Contains(got, "could not accept the draft: gadget todo changed") {
		t.Fatalf("the agent was not told: %q", got)
	}
	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		src, err := run.ReadFile(ctx, "todo", "server.ts")
		if err != nil || !strings.Contains(src, loudAdd) {
			return fmt.Errorf("the rebased draft lost its edit: %v", err)
		}
		return nil
	})
	await(t, ws.Call(ctx, "sendChatMessage", chat2, "rebase it"))
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	if got := lastText(t, ws, chat2); !strings.Contains(got, "moved from version 1 to 2") {
		t.Fatalf("no rebase notice: %q", got)
	}
	deployed = await(t, ws.Call(ctx, "acceptDraft", chat2)).([]any)
	info := deployed[0].(map[string]any)
	vs := info["versions"].([]any)
	if info["current"] != float64(3) || vs[2].(map[string]any)["chat"] != chat2 {
		t.Fatalf("accepted = %v", info)
	}
	if got := addTodo(t, ws, "eggs"); got != "EGGS" {
		t.Fatalf("after the accepted edit add = %q", got)
	}
	log := await(t, ws.Call(ctx, "auditLog", 50)).([]any)
	found := false
	for _, e := range log {
		e := e.(map[string]any)
		found = found || e["actor"] == "ada/chat:"+chat2 && e["action"] == "chat.tool" && e["target"] == "editFile"
	}
	if !found {
		t.Fatalf("no audit line of the chat's editFile: %v", log)
	}
}

func TestChatDraftBounds(t *testing.T) {
	agent := newScriptAgent()
	s := chatServer(t, filepath.Join(t.TempDir(), "a.db"), agent)
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	await(t, ws.Call(ctx, "createGadget", "counter", guesttest.Bytes(t, counterGo), counterGrants))
	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		many := map[string]string{}
		for i := range 65 {
			many[fmt.Sprintf("f%d.js", i)] = "export {}"
		}
		huge := strings.Repeat("x", 9<<20)
		_, errName := run.WriteFile(ctx, "new", "../x.js", "x")
		_, errHuge := run.WriteFile(ctx, "counter", "server.js", huge)
		_, errComp := run.ReadFile(ctx, "counter", "server.js")
		return errors.Join(
			want(run.CreateGadget(ctx, "many", many, ""), "at most 64"),
			want(run.CreateGadget(ctx, "both", map[string]string{"server.js": "x"}, "bp_1"), "not both"),
			want(run.CreateGadget(ctx, "big", map[string]string{"server.js": huge}, ""), "the draft would hold"),
			want(run.CreateGadget(ctx, "counter", map[string]string{"server.js": "x"}, ""), "has a gadget counter already"),
			want(run.CreateGadget(ctx, "other", nil, "bp_not_mine"), "no blueprint"),
			want(errName, "no gadget"),
			want(errHuge, "compiled component"),
			want(errComp, "compiled component"),
		)
	})
	chat := await(t, ws.Call(ctx, "newChat", "try", "m1")).(map[string]any)["id"].(string)
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	if d := await(t, ws.Call(ctx, "getDraft", chat)).(map[string]any); len(d["files"].([]any))+len(d["newGadgets"].([]any)) != 0 {
		t.Fatalf("refused changes left a draft: %v", d)
	}
}

func TestChatAgentIsBoundByTheUsersRole(t *testing.T) {
	agent := newScriptAgent()
	s := chatServer(t, filepath.Join(t.TempDir(), "a.db"), agent)
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws := ada.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	files := map[string]any{"server.js": "export class Gadget { hi() { return 1 } }", "client.js": "// ui"}
	await(t, ws.Call(ctx, "createGadget", "todo", files, jsGrants))
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	bws := bob.Call(ctx, "openWorkspace", id)

	// A use collaborator's agent reads the UI script but drafts nothing.
	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		ui, err := run.ReadFile(ctx, "todo", "client.js")
		if err != nil || ui != "// ui" {
			return fmt.Errorf("readFile client.js = %q, %v", ui, err)
		}
		_, errRead := run.ReadFile(ctx, "todo", "server.js")
		_, errWrite := run.WriteFile(ctx, "todo", "server.js", "x")
		_, errEdit := run.EditFile(ctx, "todo", "client.js", "ui", "x")
		return errors.Join(want(errRead, "needs the build role"), want(errWrite, "needs the build role"), want(errEdit, "needs the build role"),
			want(run.CreateGadget(ctx, "mine", map[string]string{"server.js": "x"}, ""), "needs the build role"))
	})
	chat := await(t, bws.Call(ctx, "newChat", "change it", "m1")).(map[string]any)["id"].(string)
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	refused(t, bws.Call(ctx, "acceptDraft", chat), "FORBIDDEN", "needs the build role")

	// Removing bob cancels his running agent; its next call fails and the run ends.
	started, release := make(chan struct{}), make(chan struct{})
	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		close(started)
		<-release
		if ctx.Err() == nil {
			return errors.New("the run's context outlived bob's access")
		}
		_, err := run.Append(context.Background(), kernel.ChatMessage{Role: kernel.ChatAssistant, Text: "still here"})
		return want(err, "no access")
	})
	await(t, bws.Call(ctx, "sendChatMessage", chat, "keep going"))
	<-started
	await(t, ws.Call(ctx, "removeCollaborator", "bob"))
	close(release)
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(lastText(t, ws, chat), "no longer has access"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the chat ends with %q", lastText(t, ws, chat))
		}
	}
	refused(t, bws.Call(ctx, "getChatHistory", chat, nil), "FORBIDDEN", "no access")
}
