package agent_test

import (
	"atelier/host/agent/agenttest"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/agent"
	"atelier/host/auth"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/tests/modelserver"
)

// cacheDir holds the compiled-component cache shared by this run's servers.
var cacheDir string

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	dir, err := os.MkdirTemp("", "atelier-agent-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var ctx = context.Background()

// server is a kernel whose chats are answered by host/agent over the scripted model server.
type server struct {
	url   string
	model *modelserver.Server
}

// startServer starts a kernel with the agent, its model endpoint ms (allowed although it is
// on loopback, as the admin's --model-allow-addr does).
func startServer(t *testing.T, ms *modelserver.Server) *server {
	t.Helper()
	dir := t.TempDir()
	db, err := store.Open(filepath.Join(dir, "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		t.Fatal(err)
	}
	k := kernel.New(kernel.Config{Runtime: rt, Store: db, Limits: runtime.Limits{Timeout: 5 * time.Second}, Password: auth.TestParams,
		KeyFile: filepath.Join(dir, "vault.key"), Agent: agent.New(agent.Config{HTTP: ms.Config().HTTP})})
	srv := httptest.NewServer(gateway.New(gateway.Config{Kernel: k}))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		k.Close()
		rt.Close()
		db.Close()
	})
	return &server{url: "ws" + strings.TrimPrefix(srv.URL, "http") + "/api", model: ms}
}

// user signs name up and returns the authenticated main object.
func (s *server) user(t *testing.T, name string) *capnweb.Stub {
	t.Helper()
	sess, err := capnweb.DialWebSocket(ctx, s.url, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	root := sess.Main()
	tok := await(t, root.Call(ctx, "signup", name, "password-"+name)).(string)
	return await(t, root.Call(ctx, "authenticate", tok)).(*capnweb.Stub)
}

// addModel adds the scripted model as u's own and returns its id.
func (s *server) addModel(t *testing.T, u *capnweb.Stub) string {
	t.Helper()
	m := await(t, u.Call(ctx, "addModel", map[string]any{"name": "scripted", "provider": string(modelserver.Anthropic), "baseUrl": s.model.URL(), "model": "scripted"}))
	return m.(map[string]any)["id"].(string)
}

func await(t *testing.T, p *capnweb.Promise) any {
	t.Helper()
	v, err := p.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// gated is turn, served once gate is closed: a test opens the gate once it subscribed to
// the chat, so that no event of the run can come before the subscription.
func gated(gate <-chan struct{}, turn modelserver.Turn) modelserver.Turn {
	return modelserver.Func(func(modelserver.Request) modelserver.Turn {
		<-gate
		return turn
	})
}

// args renders a tool call's arguments as JSON.
func args(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// chatEvents collects a chat subscription's events.
type chatEvents struct{ *agenttest.Events }

// subscribe subscribes to chat in ws.
func subscribe(t *testing.T, ws *capnweb.Promise, chat string) chatEvents {
	t.Helper()
	c := chatEvents{agenttest.NewEvents()}
	await(t, ws.Call(ctx, "subscribeChat", chat, c.Fn))
	return c
}

// waitFor returns the first event for which match holds, waiting up to 20 seconds for it.
func (c chatEvents) waitFor(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	return c.WaitFor(t, 20*time.Second, what, match)
}

// done waits for the run's "done" event and returns why it ended.
func (c chatEvents) done(t *testing.T) string {
	t.Helper()
	return c.waitFor(t, "done event", func(e map[string]any) bool { return e["type"] == "done" })["text"].(string)
}

// types returns the types of the events so far, "message" events left out.
func (c chatEvents) types() string {
	var out []string
	for _, e := range c.Got() {
		if e["type"] != "message" && e["type"] != "status" {
			out = append(out, fmt.Sprint(e["type"]))
		}
	}
	return strings.Join(out, " ")
}

// history returns a chat's newest messages, oldest first.
func history(t *testing.T, ws *capnweb.Promise, chat string) []map[string]any {
	t.Helper()
	page := await(t, ws.Call(ctx, "getChatHistory", chat, nil)).(map[string]any)
	var out []map[string]any
	for _, m := range page["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// todoFiles reads the to-do JS gadget's sources.
func todoFiles(t *testing.T) map[string]string {
	t.Helper()
	dir := filepath.Join("..", "..", "gadgets", "todo-jsgadget")
	out := map[string]string{}
	for _, n := range []string{"server.ts", "todo.ts", "client.js"} {
		b, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			t.Fatal(err)
		}
		out[n] = string(b)
	}
	return out
}
