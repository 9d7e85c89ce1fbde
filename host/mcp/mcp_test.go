package mcp_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/mcp"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/sdk/guesttest"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	os.Exit(m.Run())
}

var ctx = context.Background()

// server is a kernel on a real bbolt file behind the real gateway.
type server struct {
	http *httptest.Server
	k    *kernel.Kernel
}

func startServer(t *testing.T) *server {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(os.TempDir(), "atelier-mcp-test-cache"), Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		t.Fatal(err)
	}
	k := kernel.New(kernel.Config{Runtime: rt, Store: db, Limits: runtime.Limits{Timeout: 5 * time.Second}, Password: auth.TestParams, Version: "test"})
	s := &server{http: httptest.NewServer(gateway.New(gateway.Config{Kernel: k})), k: k}
	t.Cleanup(func() {
		s.http.CloseClientConnections()
		s.http.Close()
		k.Close()
		rt.Close()
		db.Close()
	})
	return s
}

func await(t *testing.T, p *capnweb.Promise) any {
	t.Helper()
	v, err := p.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// fixture signs ada up over Cap'n Web, gives her a workspace with a Go counter and a JS
// to-do list and a second workspace, and returns her session token, the agent token scoped
// to the first workspace, the second workspace's id and the first workspace.
func fixture(t *testing.T, s *server) (userToken, agentToken, otherWS string, home *capnweb.Promise) {
	t.Helper()
	sess, err := capnweb.DialWebSocket(ctx, "ws"+strings.TrimPrefix(s.http.URL, "http")+"/api", capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	root := sess.Main()
	userToken = await(t, root.Call(ctx, "signup", "ada", "correct horse battery")).(string)
	api := root.Call(ctx, "authenticate", userToken)
	ws := api.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "createGadget", "counter", guesttest.Bytes(t, "gadgets/counter-go"), []string{"atelier:host/kv", "atelier:host/log"}))
	src, err := os.ReadFile("../../gadgets/todo-jsgadget/server.ts")
	if err != nil {
		t.Fatal(err)
	}
	lib, err := os.ReadFile("../../gadgets/todo-jsgadget/todo.ts")
	if err != nil {
		t.Fatal(err)
	}
	await(t, ws.Call(ctx, "createGadget", "todo", map[string]any{"server.ts": string(src), "todo.ts": string(lib)},
		[]string{"atelier:host/kv", "atelier:host/log", "atelier:host/events", "atelier:host/bindings"}))
	other := api.Call(ctx, "createWorkspace", "other")
	otherWS = await(t, other.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, other.Call(ctx, "createGadget", "secret", guesttest.Bytes(t, "gadgets/counter-go"), []string{"atelier:host/kv", "atelier:host/log"}))
	scope := map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "use", "gadgets": []string{"*"}}}}
	agentToken = await(t, api.Call(ctx, "createAgent", "helper", scope)).(map[string]any)["token"].(string)
	return userToken, agentToken, otherWS, ws
}

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	if b.token != "" {
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// connect opens an MCP session with the official client over streamable HTTP.
func connect(s *server, token string) (*gomcp.ClientSession, error) {
	c := gomcp.NewClient(&gomcp.Implementation{Name: "test", Version: "1"}, nil)
	return c.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: s.http.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token}}, MaxRetries: -1}, nil)
}

func textOf(t *testing.T, res *gomcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*gomcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func call(t *testing.T, cs *gomcp.ClientSession, tool string, args map[string]any) *gomcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func TestCodeModeOverMCP(t *testing.T) {
	s := startServer(t)
	_, agentToken, otherWS, home := fixture(t, s)
	cs, err := connect(s, agentToken)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range tools.Tools {
		names = append(names, tl.Name)
	}
	if !reflect.DeepEqual(names, []string{"commit_dry_run", "describe_binding", "discard_dry_run", "execute_code", "list_bindings"}) {
		t.Fatalf("tools = %v", names)
	}

	res := call(t, cs, "list_bindings", nil)
	if txt := textOf(t, res); res.IsError || !strings.Contains(txt, "- counter (gadget \"counter\"): echo, get, increment") || !strings.Contains(txt, "- todo (gadget \"todo\"): add, echo, list") || strings.Contains(txt, "secret") {
		t.Fatalf("list_bindings: %s", txt)
	}

	res = call(t, cs, "describe_binding", map[string]any{"name": "counter"})
	if txt := textOf(t, res); res.IsError || !strings.Contains(txt, "declare const counter: {") || !strings.Contains(txt, "increment(by: number): Promise<number>;") {
		t.Fatalf("describe_binding: %s", txt)
	}

	res = call(t, cs, "execute_code", map[string]any{"code": `export default async function (env) {
  const n = await env.counter.increment(41);
  const item = await env.todo.add("via mcp");
  console.log("added", item.id);
  return { n: n + 1, title: item.title };
}`})
	txt := textOf(t, res)
	if res.IsError || !strings.Contains(txt, "[info] added 1") || !strings.Contains(txt, `"n": 42`) || !strings.Contains(txt, `"title": "via mcp"`) {
		t.Fatalf("execute_code: %s", txt)
	}
	sc, _ := res.StructuredContent.(map[string]any)
	if v, _ := sc["value"].(map[string]any); v["n"] != float64(42) {
		t.Fatalf("structured result = %v", res.StructuredContent)
	}

	// A snippet that throws is a tool error with its console; one that reaches for a gadget of
	// another workspace finds nothing.
	res = call(t, cs, "execute_code", map[string]any{"code": `export default async function (env) { console.log("a"); return await env.secret.increment(1) }`})
	if txt := textOf(t, res); !res.IsError || !strings.Contains(txt, "[info] a") || !strings.Contains(txt, "TypeError") {
		t.Fatalf("execute_code reaching outside its env: %v %s", res.IsError, txt)
	}
	res = call(t, cs, "list_bindings", map[string]any{"workspace": otherWS})
	if txt := textOf(t, res); !res.IsError || !strings.Contains(txt, "outside its scope") {
		t.Fatalf("list_bindings in another workspace: %v %s", res.IsError, txt)
	}

	// Every tool call is in the audit log, naming the agent and its owner.
	var got []string
	for _, e := range await(t, home.Call(ctx, "auditLog", 4)).([]any) {
		e := e.(map[string]any)
		if e["actor"] != "ada/agent:helper" || !strings.HasPrefix(e["detail"].(string), "via mcp;") {
			t.Fatalf("audit entry %v", e)
		}
		got = append(got, e["action"].(string))
	}
	if want := []string{"code.execute", "code.execute", "code.describe_binding", "code.list_bindings"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("audit actions %v, want %v", got, want)
	}
}

// TestDryRunOverMCP: execute_code with dry_run shows the diff and its id and changes
// nothing; commit_dry_run applies it, discard_dry_run drops another; all audited via mcp.
func TestDryRunOverMCP(t *testing.T) {
	s := startServer(t)
	_, agentToken, _, home := fixture(t, s)
	cs, err := connect(s, agentToken)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	add := map[string]any{"code": `export default async (env) => env.todo.add("via a dry run")`, "dry_run": true}
	res := call(t, cs, "execute_code", add)
	txt := textOf(t, res)
	sc, _ := res.StructuredContent.(map[string]any)
	d, _ := sc["dryRun"].(map[string]any)
	id, _ := d["id"].(string)
	if res.IsError || id == "" || !strings.Contains(txt, "dry run "+id) || !strings.Contains(txt, `+ todo/0000000001 = {"id":1,"title":"via a dry run","done":false}`) {
		t.Fatalf("execute_code with dry_run: %s", txt)
	}
	list := map[string]any{"code": `export default async (env) => (await env.todo.list()).length`}
	if txt := textOf(t, call(t, cs, "execute_code", list)); !strings.Contains(txt, "result: 0") {
		t.Fatalf("after the dry run: %s", txt)
	}
	if res := call(t, cs, "commit_dry_run", map[string]any{"id": id}); res.IsError || !strings.Contains(textOf(t, res), "committed dry run "+id) {
		t.Fatalf("commit_dry_run: %s", textOf(t, res))
	}
	if txt := textOf(t, call(t, cs, "execute_code", list)); !strings.Contains(txt, "result: 1") {
		t.Fatalf("after the commit: %s", txt)
	}
	if res := call(t, cs, "commit_dry_run", map[string]any{"id": id}); !res.IsError || !strings.Contains(textOf(t, res), "was committed or discarded") {
		t.Fatalf("a second commit_dry_run: %s", textOf(t, res))
	}
	sc, _ = call(t, cs, "execute_code", add).StructuredContent.(map[string]any)
	id = sc["dryRun"].(map[string]any)["id"].(string)
	if res := call(t, cs, "discard_dry_run", map[string]any{"id": id}); res.IsError {
		t.Fatalf("discard_dry_run: %s", textOf(t, res))
	}
	var got []string
	for _, e := range await(t, home.Call(ctx, "auditLog", 6)).([]any) {
		e := e.(map[string]any)
		if e["actor"] == "ada/agent:helper" && strings.HasPrefix(e["detail"].(string), "via mcp;") {
			got = append(got, e["action"].(string))
		}
	}
	if want := []string{"code.discard_dry_run", "code.dry_run", "code.execute", "code.commit_dry_run", "code.execute", "code.dry_run"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("audit actions %v, want %v", got, want)
	}
}

func TestMCPRefusesBadTokens(t *testing.T) {
	s := startServer(t)
	userToken, _, _, _ := fixture(t, s)
	for name, tok := range map[string]string{
		"missing":   "",
		"malformed": "not-a-token",
		"unknown":   "atl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"user":      userToken,
	} {
		if cs, err := connect(s, tok); err == nil {
			cs.Close()
			t.Errorf("%s token: connected", name)
		} else if !strings.Contains(err.Error(), "Unauthorized") && !strings.Contains(err.Error(), "401") {
			t.Errorf("%s token: %v, want 401", name, err)
		}
	}
}

// TestMCPKeepsNoSession: the endpoint is stateless, so an agent cannot make the server hold
// anything between requests: an initialize is answered without an Mcp-Session-Id, the GET
// stream and DELETE are refused with 405, and a tool call made without any initialize works.
func TestMCPKeepsNoSession(t *testing.T) {
	s := startServer(t)
	_, agentToken, _, _ := fixture(t, s)
	client := &http.Client{Transport: bearer{agentToken}}
	post := func(body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, s.http.URL+"/mcp", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Mcp-Session-Id") != "" {
		t.Fatalf("initialize: %s, Mcp-Session-Id %q; want 200 and no session", resp.Status, resp.Header.Get("Mcp-Session-Id"))
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(method, s.http.URL+"/mcp", nil)
		req.Header.Set("Accept", "text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Fatalf("%s /mcp: %s, want 405", method, resp.Status)
		}
	}
	resp = post(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"export default async function (env) { return await env.counter.increment(2); }"}}}`)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `result: 2`) {
		t.Fatalf("a tool call without initialize: %s %s, want the snippet's result", resp.Status, body)
	}
}

// TestMCPBodiesAreBounded: the bodies an agent's requests hold at once are bounded by its
// address's share of the endpoint's body memory (here 256 KiB of 1 MiB): while a request
// holds it with a body that never ends, the address's next request is answered 429 with
// Retry-After; once that request is gone a tool call is answered again.
func TestMCPBodiesAreBounded(t *testing.T) {
	s := startServer(t)
	_, agentToken, _, _ := fixture(t, s)
	hs := httptest.NewServer(mcp.New(mcp.Config{Kernel: s.k, BodyMemory: 1 << 20}))
	defer hs.Close()
	// openSlow sends 200 KiB of a 1 MiB body and stops: once it has all arrived the request
	// holds the address's 256 KiB.
	openSlow := func() net.Conn {
		c, err := net.Dial("tcp", hs.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", agentToken, 1<<20)
		if _, err := c.Write(make([]byte, 200<<10)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	slow := openSlow()
	defer func() { slow.Close() }()
	// refusedItself reports whether the slow request was answered (refused: a tool call held
	// part of the share when its body grew).
	refusedItself := func() bool {
		_ = slow.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := slow.Read(make([]byte, 1))
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
	call := func() (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_code","arguments":{"code":"export default async function () { return 40 + 2; }"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := (&http.Client{Transport: bearer{agentToken}}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After") + " " + string(body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, out := call()
		if status == http.StatusTooManyRequests && strings.HasPrefix(out, "5 ") && strings.Contains(out, "from your address") {
			break
		}
		if refusedItself() {
			slow.Close()
			slow = openSlow()
		}
		if time.Now().After(deadline) {
			t.Fatalf("a tool call while a body holds the address's share: %d %.200s, want 429 with Retry-After", status, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
	slow.Close()
	deadline = time.Now().Add(10 * time.Second)
	for {
		status, out := call()
		if status == http.StatusOK && strings.Contains(out, "result: 42") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a tool call after the slow body ended: %d %.200s, want its result", status, out)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
