package kernel_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// agentFunc is a scripted AgentRunner.
type agentFunc func(ctx context.Context, run kernel.ChatRun) error

func (f agentFunc) Run(ctx context.Context, run kernel.ChatRun) error { return f(ctx, run) }

// chatServer starts a server whose chats answer with agent and know model "m1".
func chatServer(t *testing.T, path string, agent kernel.AgentRunner) *server {
	t.Helper()
	s := startServer(t, path, func(c *kernel.Config) { c.Agent = agent })
	s.k.SetTestModels(map[string]kernel.ModelSpec{"m1": {ID: "m1", Name: "scripted", Provider: "openai", Model: "scripted"}}, "be brief")
	return s
}

// done waits for the n-th "done" event and returns why the run ended.
func (c collector) done(t *testing.T, n int) string {
	t.Helper()
	var dones []string
	c.Await(t, 10*time.Second, fmt.Sprintf("the end of run %d", n), func(got []map[string]any) bool {
		dones = dones[:0]
		for _, e := range got {
			if e["type"] == "done" {
				dones = append(dones, e["text"].(string))
			}
		}
		return len(dones) >= n
	})
	return dones[n-1]
}

// history reads one page of a chat's history.
func history(t *testing.T, ws *capnweb.Promise, chat string, before any) ([]map[string]any, bool) {
	t.Helper()
	page := await(t, ws.Call(ctx, "getChatHistory", chat, before)).(map[string]any)
	var out []map[string]any
	for _, m := range page["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out, page["more"].(bool)
}

// lastText returns the text of a chat's newest message.
func lastText(t *testing.T, ws *capnweb.Promise, chat string) string {
	t.Helper()
	ms, _ := history(t, ws, chat, nil)
	return ms[len(ms)-1]["text"].(string)
}

func TestChatHistoryIsDurablePagedAndFenced(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	s := startServer(t, path)
	ada, bob, eve := s.user(t, "ada"), s.user(t, "bob"), s.user(t, "eve")
	ws := ada.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	bws := bob.Call(ctx, "openWorkspace", id)

	chat := await(t, bws.Call(ctx, "newChat", "hello there\nsecond line", nil)).(map[string]any)
	chatID := chat["id"].(string)
	if chat["title"] != "hello there" || chat["creator"] != "bob" || chat["running"] != false || chat["modelId"] != nil {
		t.Fatalf("newChat = %v", chat)
	}
	events := newCollector()
	await(t, ws.Call(ctx, "subscribeChat", chatID, events.fn))
	for i := range 60 {
		await(t, bws.Call(ctx, "sendChatMessage", chatID, fmt.Sprintf("m%d", i)))
	}
	events.waitFor(t, "the last message", func(e map[string]any) bool {
		m, _ := e["message"].(map[string]any)
		return e["type"] == "message" && m["text"] == "m59" && m["author"] == "bob"
	})

	// Pages: the newest 50, oldest first, then the rest.
	check := func(ws *capnweb.Promise) {
		t.Helper()
		page, more := history(t, ws, chatID, nil)
		if len(page) != 50 || !more || page[0]["id"] != float64(12) || page[49]["text"] != "m59" {
			t.Fatalf("newest page: %d messages, more %v, first %v", len(page), more, page[0])
		}
		page, more = history(t, ws, chatID, 12)
		if len(page) != 11 || more || page[0]["text"] != "hello there\nsecond line" || page[0]["role"] != "user" {
			t.Fatalf("oldest page: %d messages, more %v, first %v", len(page), more, page[0])
		}
	}
	check(ws)

	// Hostile or wrong input is refused, and only the creator or the owner renames or deletes.
	refused(t, bws.Call(ctx, "sendChatMessage", chatID, strings.Repeat("x", 256<<10+1)), "RESOURCE_EXHAUSTED", "at most 262144")
	refused(t, bws.Call(ctx, "newChat", strings.Repeat("x", 256<<10+1), nil), "RESOURCE_EXHAUSTED", "at most 262144")
	refused(t, bws.Call(ctx, "newChat", "  ", nil), "INVALID_ARGUMENT", "empty")
	refused(t, bws.Call(ctx, "setChatTitle", chatID, strings.Repeat("t", 201)), "INVALID_ARGUMENT", "want 1 to 200 bytes")
	refused(t, bws.Call(ctx, "newChat", "hi", "no-such-model"), "NOT_FOUND", "listModels shows the models you may use")
	await(t, ada.Call(ctx, "createWorkspace", "other"))
	await(t, ws.Call(ctx, "addCollaborator", "eve", "build"))
	ews := eve.Call(ctx, "openWorkspace", id)
	refused(t, ews.Call(ctx, "setChatTitle", chatID, "mine"), "FORBIDDEN", "creator")
	refused(t, ews.Call(ctx, "deleteChat", chatID), "FORBIDDEN", "creator")
	await(t, ws.Call(ctx, "setChatTitle", chatID, "renamed by the owner"))
	events.waitFor(t, "the status event", func(e map[string]any) bool {
		info, _ := e["info"].(map[string]any)
		return e["type"] == "status" && info["title"] == "renamed by the owner"
	})

	// Another workspace's chat is unreachable, with the words of a missing one.
	own := eve.Call(ctx, "createWorkspace", "eve's")
	refused(t, own.Call(ctx, "getChatHistory", chatID, nil), "NOT_FOUND", "has no chat")
	refused(t, own.Call(ctx, "sendChatMessage", chatID, "hi"), "NOT_FOUND", "has no chat")
	refused(t, own.Call(ctx, "getChatHistory", "ch_missing", nil), "NOT_FOUND", "has no chat")
	await(t, ws.Call(ctx, "removeCollaborator", "eve"))
	refused(t, ews.Call(ctx, "listChats"), "FORBIDDEN", "no access")

	// An agent's token reaches no chat, even inside its scope.
	tok := await(t, ada.Call(ctx, "createAgent", "bot", map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "build", "gadgets": []any{"*"}}}})).(map[string]any)["token"].(string)
	bot := s.dial(t).Call(ctx, "authenticate", tok).Call(ctx, "openWorkspace", id)
	refused(t, bot.Call(ctx, "listChats"), "FORBIDDEN", "chats are for people")

	// Everything survives a restart of the server over the same data file.
	s.stop()
	s = startServer(t, path)
	root := s.dial(t)
	ws = root.Call(ctx, "authenticate", await(t, root.Call(ctx, "login", "ada", "password-ada"))).Call(ctx, "openWorkspace", id)
	check(ws)
	list := await(t, ws.Call(ctx, "listChats")).([]any)
	if len(list) != 1 || list[0].(map[string]any)["title"] != "renamed by the owner" {
		t.Fatalf("listChats after restart = %v", list)
	}
	await(t, ws.Call(ctx, "deleteChat", chatID))
	refused(t, ws.Call(ctx, "getChat", chatID), "NOT_FOUND", "has no chat")
}

func TestChatsPerWorkspaceAreBounded(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	var last string
	for i := range 200 {
		last = await(t, ws.Call(ctx, "newChat", fmt.Sprintf("chat %d", i), nil)).(map[string]any)["id"].(string)
	}
	refused(t, ws.Call(ctx, "newChat", "one too many", nil), "RESOURCE_EXHAUSTED", "delete one (deleteChat) first")
	await(t, ws.Call(ctx, "deleteChat", last))
	await(t, ws.Call(ctx, "newChat", "room again", nil))
	if n := len(await(t, ws.Call(ctx, "listChats")).([]any)); n != 200 {
		t.Fatalf("listChats has %d chats", n)
	}
}

// BenchmarkSendChatMessage is one person's message through the whole path: WebSocket ->
// kernel -> the message and the chat's record committed (fsync'd) -> reply.
func BenchmarkSendChatMessage(b *testing.B) {
	s := startServer(&testing.T{}, filepath.Join(b.TempDir(), "a.db"))
	defer s.stop()
	root := dialB(b, s)
	tok, err := root.Call(ctx, "signup", "bench", "password-bench").Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ws := root.Call(ctx, "authenticate", tok).Call(ctx, "createWorkspace", "w")
	chat, err := ws.Call(ctx, "newChat", "bench", nil).Get("id").Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer kernel.CPUPerOp(b)()
	for b.Loop() {
		if _, err := ws.Call(ctx, "sendChatMessage", chat, "a message of a few words").Await(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
