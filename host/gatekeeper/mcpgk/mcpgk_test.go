package mcpgk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/host/gatekeeper"
	"atelier/host/runtime/wit"
)

// TestMethodName: tool names become JavaScript identifiers that cannot shadow what objects
// and promises use.
func TestMethodName(t *testing.T) {
	for in, want := range map[string]string{
		"write_file": "write_file", "get-sum": "get_sum", "a.b/c d": "a_b_c_d", "9lives": "_9lives",
		"then": "then_", "constructor": "constructor_", "__proto__": "__proto___", "": "_", "émoji": "__moji",
	} {
		if got := MethodName(in); got != want {
			t.Errorf("MethodName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestParseStdio: the admin's NAME=COMMAND.
func TestParseStdio(t *testing.T) {
	name, argv, err := ParseStdio("files=npx -y  server /srv")
	if err != nil || name != "files" || strings.Join(argv, "|") != "npx|-y|server|/srv" {
		t.Fatalf("ParseStdio = %q %q %v", name, argv, err)
	}
	for _, bad := range []string{"files", "files=", "=cmd", "a b=cmd", "../x=cmd"} {
		if _, _, err := ParseStdio(bad); err == nil || !strings.Contains(err.Error(), "want NAME=COMMAND") {
			t.Errorf("ParseStdio(%q) = %v, want a refusal", bad, err)
		}
	}
}

// TestGrant: HTTP URLs and installed stdio servers are granted; other schemes, user info and
// unknown stdio names are refused with what to do.
func TestGrant(t *testing.T) {
	gk, err := New(Config{Stdio: map[string][]string{"fs": {"true"}}})
	if err != nil {
		t.Fatal(err)
	}
	for res, kind := range map[string]string{"https://mcp.example.com/mcp": KindHTTP, "http://10.0.0.1:8080/x?k=1": KindHTTP, "stdio:fs": KindStdio} {
		if g, err := gk.GrantFor(res); err != nil || g.Kind != kind {
			t.Errorf("GrantFor(%s) = %v, %v", res, g, err)
		}
	}
	for res, want := range map[string]string{"stdio:sh": "installs one with `atelier serve --mcp-stdio", "file:///etc/passwd": "want an http://",
		"https://u:p@x.example/mcp": "no user info", "https://x.example/mcp#f": "no user info"} {
		if _, err := gk.GrantFor(res); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("GrantFor(%s) = %v, want %q", res, err, want)
		}
	}
	if _, err := New(Config{Stdio: map[string][]string{"bad name": {"x"}}}); err == nil {
		t.Error("a stdio server with a bad name was accepted")
	}
	if _, err := New(Config{AllowAddrs: []string{"localhost"}}); err == nil {
		t.Error("an allowed address that is not IP:PORT was accepted")
	}
}

// TestDeclare: schemas become TypeScript types; what a server writes stays inside comments
// and string literals, bounded in depth and size.
func TestDeclare(t *testing.T) {
	deep := map[string]any{"type": "string"}
	for range 20 {
		deep = map[string]any{"type": "object", "properties": map[string]any{"d": deep}}
	}
	huge := map[string]any{}
	for i := range 2000 {
		huge[strings.Repeat("p", 20)+string(rune('a'+i%26))+strings.Repeat("x", i%50)] = map[string]any{"type": "string"}
	}
	cn := &conn{server: "evil */ server", tools: map[string]*gomcp.Tool{
		"write": {Name: "write", Description: "Writes.\n*/ alert(1) /*\u2028x\x00y", InputSchema: map[string]any{
			"type": "object", "required": []any{"path"},
			"properties": map[string]any{
				"path":      map[string]any{"type": "string", "description": "where */ evil()"},
				"mode":      map[string]any{"enum": []any{"a", "b*/c", 3.0}},
				"tags":      map[string]any{"type": "array", "items": map[string]any{"type": "string"}},
				"either":    map[string]any{"anyOf": []any{map[string]any{"type": "number"}, map[string]any{"type": "null"}}},
				"not-ident": map[string]any{"type": "boolean"},
				"meta":      map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}},
			}}},
		"read": {Name: "read", Annotations: &gomcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: deep},
		"big":  {Name: "big", InputSchema: map[string]any{"type": "object", "properties": huge}},
	}}
	ts := declare(cn)
	for _, want := range []string{
		"write(args: {", "path: string;", `mode?: "a" | "b*\u002fc" | 3;`, "tags?: Array<string>;", "either?: (number | null);",
		`"not-ident"?: boolean;`, "meta?: Record<string, number>;", "): Promise<McpQueued>;",
		"read(args?: {", "): Promise<McpToolResult>;", "unknown", `(waits for approval): Writes.`, `*\/ alert(1) /*`,
		"big(args?: Record<string, unknown> /* the schema is too large to declare */): Promise<McpQueued>;",
	} {
		if !strings.Contains(ts, want) {
			t.Errorf("declarations lack %q:\n%s", want, ts)
		}
	}
	if strings.Contains(ts, "\x00") || strings.Contains(ts, "\u2028") {
		t.Error("control characters or line separators reached the declarations")
	}
	code := regexp.MustCompile(`(?s)/\*.*?\*/`).ReplaceAllString(ts, "")
	code = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`).ReplaceAllString(code, `""`)
	for _, bad := range []string{"alert", "evil", "*/"} {
		if strings.Contains(code, bad) {
			t.Errorf("%q is outside comments and strings:\n%s", bad, code)
		}
	}
	if strings.Count(ts, "d?: {") > maxSchemaDepth+1 {
		t.Errorf("the deep schema was declared past depth %d", maxSchemaDepth)
	}
}

// TestTimeoutAndApply: against a Go MCP server over HTTP, with a MemoryQueue: a call past the
// call timeout fails and the connection stays usable; an action's large result is applied
// and cut to 4 KiB in the queue entry (the tool has run).
func TestTimeoutAndApply(t *testing.T) {
	ctx := context.Background()
	srv := gomcp.NewServer(&gomcp.Implementation{Name: "t"}, nil)
	obj := map[string]any{"type": "object"}
	srv.AddTool(&gomcp.Tool{Name: "slow", InputSchema: obj, Annotations: &gomcp.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, _ *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
	srv.AddTool(&gomcp.Tool{Name: "ping", InputSchema: obj, Annotations: &gomcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
			return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: "pong"}}}, nil
		})
	srv.AddTool(&gomcp.Tool{Name: "dump", InputSchema: obj},
		func(context.Context, *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
			return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: strings.Repeat("y", 100<<10)}}}, nil
		})
	hs := httptest.NewServer(gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return srv }, nil))
	defer hs.Close()
	gk, err := New(Config{AllowAddrs: []string{strings.TrimPrefix(hs.URL, "http://")}, CallTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	q := gatekeeper.NewMemoryQueue()
	inst, err := gk.Start(ctx, gatekeeper.Account{Name: "a", Resource: hs.URL, Queue: q})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	s, err := inst.OpenSession(ctx, "tester")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Call(ctx, "slow", "[]"); err == nil || !strings.Contains(err.Error(), "no answer within the time allowed") || errors.Is(err, gatekeeper.ErrUnavailable) {
		t.Fatalf("slow = %v, want a timeout", err)
	}
	if out, err := s.Call(ctx, "ping", "[{}]"); err != nil || !strings.Contains(out, "pong") {
		t.Fatalf("ping after the timeout = %s, %v", out, err)
	}
	if _, err := s.Call(ctx, "ping", `["not an object"]`); err == nil || !strings.Contains(err.Error(), "want one object") {
		t.Fatalf("ping with a string = %v", err)
	}
	out, err := s.Call(ctx, "dump", "[]")
	if err != nil || !strings.Contains(out, `"state":"pending"`) {
		t.Fatalf("dump = %s, %v", out, err)
	}
	var id uint64
	for _, e := range q.List() {
		if e.Type == gatekeeper.Acted {
			id = e.ID
		}
	}
	if err := q.Approve(ctx, id); err != nil {
		t.Fatalf("approve dump: %v", err)
	}
	for _, e := range q.List() {
		if e.ID == id && (e.State != gatekeeper.Applied || !strings.Contains(e.Result, "bytes more)") || len(e.Result) > 5000) {
			t.Fatalf("the applied dump: %s, %d bytes: %.100s", e.State, len(e.Result), e.Result)
		}
	}
}

// hostileServer is a Go MCP server over streamable HTTP whose read-only tools "huge" and
// "trickle" are answered by the test itself, not the SDK: "huge" streams a JSON-RPC answer of
// hugeSize bytes, made on the fly (as application/json, or as one event of a
// text/event-stream when sse is set), and "trickle" sends a byte of white space (or an SSE
// comment) every 50 ms and never ends. written receives how many bytes each streamed answer
// wrote before the client stopped reading (or all of them); cut receives a value when a
// trickle ends because the client went away.
type hostileServer struct {
	sse     bool
	written chan int64
	cut     chan struct{}
	sdk     http.Handler
}

const hugeSize = 200 << 20

func newHostileServer(sse bool) *hostileServer {
	srv := gomcp.NewServer(&gomcp.Implementation{Name: "hostile", Version: "1"}, nil)
	ro := &gomcp.ToolAnnotations{ReadOnlyHint: true}
	for _, name := range []string{"huge", "trickle", "ping"} {
		srv.AddTool(&gomcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: ro},
			func(context.Context, *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
				return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: "pong"}}}, nil
			})
	}
	return &hostileServer{sse: sse, written: make(chan int64, 4), cut: make(chan struct{}, 4),
		sdk: gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return srv }, nil)}
}

func (h *hostileServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		h.sdk.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var req struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal(body, &req)
	if req.Method != "tools/call" || req.Params.Name == "ping" {
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.sdk.ServeHTTP(w, r)
		return
	}
	if h.sse {
		w.Header().Set("Content-Type", "text/event-stream")
	} else {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
	prefix, suffix := `{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{"content":[{"type":"text","text":"`, `"}]}}`
	if h.sse {
		prefix, suffix = "event: message\ndata: "+prefix, suffix+"\n\n"
	}
	if req.Params.Name == "trickle" {
		for {
			b := []byte(" ")
			if h.sse {
				b = []byte(": still here\n\n")
			}
			if _, err := w.Write(b); err != nil {
				h.cut <- struct{}{}
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				h.cut <- struct{}{}
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	n, err := io.WriteString(w, prefix)
	written := int64(n)
	for written < hugeSize && err == nil {
		n, err = w.Write(chunk)
		written += int64(n)
	}
	if err == nil {
		n, _ = io.WriteString(w, suffix)
		written += int64(n)
	}
	h.written <- written
}

// TestHugeAnswerBounded: an HTTP server answers a read-only tool with 200 MB of JSON-RPC (as
// JSON, then as one SSE event), made on the fly: the host reads a few megabytes of it, not
// all, and the call fails with the size error the kernel reports as RESOURCE_EXHAUSTED; the
// connection still serves the next call. A server that trickles an answer that never ends
// is cut at the call's deadline.
func TestHugeAnswerBounded(t *testing.T) {
	for _, sse := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "sse"}[sse], func(t *testing.T) {
			ctx := context.Background()
			h := newHostileServer(sse)
			hs := httptest.NewServer(h)
			defer hs.Close()
			session := func(timeout time.Duration) *gatekeeper.Session {
				gk, err := New(Config{AllowAddrs: []string{strings.TrimPrefix(hs.URL, "http://")}, CallTimeout: timeout})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(gk.Close)
				inst, err := gk.Start(ctx, gatekeeper.Account{Name: "a", Resource: hs.URL, Queue: gatekeeper.NewMemoryQueue()})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { inst.Close() })
				s, err := inst.OpenSession(ctx, "tester")
				if err != nil {
					t.Fatal(err)
				}
				return s
			}
			s := session(time.Minute)

			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err := s.Call(ctx, "huge", "[]")
			runtime.ReadMemStats(&after)
			var se *wit.SizeError
			if !errors.As(err, &se) || se.Limit != DefaultMaxResult || se.Size <= DefaultMaxResult {
				t.Fatalf("huge = %v, want a *wit.SizeError over %d bytes", err, DefaultMaxResult)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 32<<20 {
				t.Fatalf("reading the huge answer allocated %d MiB", grew>>20)
			}
			if written := <-h.written; written >= hugeSize {
				t.Fatalf("the server wrote all %d bytes: the host read the whole answer", written)
			}
			t.Logf("refused with %v, %d KiB allocated", err, (after.TotalAlloc-before.TotalAlloc)>>10)
			if out, err := s.Call(ctx, "ping", "[]"); err != nil || !strings.Contains(out, "pong") {
				t.Fatalf("ping after the huge answer = %s, %v", out, err)
			}

			if _, err := session(2*time.Second).Call(ctx, "trickle", "[]"); err == nil || !strings.Contains(err.Error(), "no answer within the time allowed") {
				t.Fatalf("trickle = %v, want the call's deadline", err)
			}
			select {
			case <-h.cut:
			case <-time.After(30 * time.Second):
				t.Fatal("the trickling answer was still being read 30 s after the call's deadline")
			}
		})
	}
}

// countingServer is a Go MCP server over streamable HTTP that counts the sessions it was
// asked to start (initialize requests) and end (DELETE); restart forgets every session, as a
// server that restarted would.
type countingServer struct {
	inits, deletes atomic.Int64
	handler        atomic.Pointer[http.Handler]
}

func newCountingServer() *countingServer {
	c := &countingServer{}
	c.restart()
	return c
}

func (c *countingServer) restart() {
	srv := gomcp.NewServer(&gomcp.Implementation{Name: "counting", Version: "1"}, nil)
	obj := map[string]any{"type": "object"}
	srv.AddTool(&gomcp.Tool{Name: "ping", InputSchema: obj, Annotations: &gomcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
			return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: "pong"}}}, nil
		})
	srv.AddTool(&gomcp.Tool{Name: "write", InputSchema: obj},
		func(context.Context, *gomcp.CallToolRequest) (*gomcp.CallToolResult, error) {
			return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: "written"}}}, nil
		})
	var h http.Handler = gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return srv }, nil)
	c.handler.Store(&h)
}

func (c *countingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodDelete:
		c.deletes.Add(1)
	case http.MethodPost:
		body, _ := io.ReadAll(r.Body)
		var req struct{ Method string }
		if json.Unmarshal(body, &req) == nil && req.Method == "initialize" {
			c.inits.Add(1)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	(*c.handler.Load()).ServeHTTP(w, r)
}

// eventually waits (at most 20 s) for cond.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("still not %s after 20 s", what)
		}
	}
}

// TestConnectionCache: the instances of an account share one connection: a snippet's two
// instances and an approval's make one session on the server, not three; after the server
// forgot the session (it restarted) the next call connects again by itself; a disconnected
// account's connection is closed and its open instance refused; idle connections close after
// IdleTimeout and past MaxIdle; closing the gatekeeper closes them all.
func TestConnectionCache(t *testing.T) {
	ctx := context.Background()
	cs := newCountingServer()
	hs := httptest.NewServer(cs)
	defer hs.Close()
	allow := []string{strings.TrimPrefix(hs.URL, "http://")}
	gk, err := New(Config{AllowAddrs: allow, IdleTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer gk.Close()
	q := gatekeeper.NewMemoryQueue()
	acct := gatekeeper.Account{Name: "acct_a", Resource: hs.URL, Queue: q}
	start := func(acct gatekeeper.Account) *gatekeeper.Instance {
		t.Helper()
		inst, err := gk.Start(ctx, acct)
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	snippet := func() {
		t.Helper()
		tools := start(acct)
		if m, err := tools.SessionMethods(ctx); err != nil || !slices.Contains(m, "ping") {
			t.Fatalf("SessionMethods = %v, %v", m, err)
		}
		tools.Close()
		inst := start(acct)
		defer inst.Close()
		s, err := inst.OpenSession(ctx, "tester")
		if err != nil {
			t.Fatal(err)
		}
		if out, err := s.Call(ctx, "ping", "[]"); err != nil || !strings.Contains(out, "pong") {
			t.Fatalf("ping = %s, %v", out, err)
		}
		if out, err := s.Call(ctx, "write", "[{}]"); err != nil || !strings.Contains(out, "pending") {
			t.Fatalf("write = %s, %v", out, err)
		}
	}
	approve := func() {
		t.Helper()
		entries := q.List()
		last := entries[len(entries)-1]
		inst := start(acct)
		defer inst.Close()
		if out, err := inst.ApplyAction(ctx, last.ID, last.Payload); err != nil || out != "written" {
			t.Fatalf("apply = %q, %v", out, err)
		}
	}
	for range 3 {
		snippet()
		approve()
	}
	if n := cs.inits.Load(); n != 1 {
		t.Fatalf("3 snippets and 3 approvals made %d sessions on the server, want 1", n)
	}
	c := start(acct).Guest().(*guest).c
	if n := c.pool.connects.Load(); n != 1 {
		t.Fatalf("%d connections made, want 1", n)
	}

	// The server restarts and forgets the session: the next call connects again, once.
	cs.restart()
	snippet()
	if n := cs.inits.Load(); n != 2 {
		t.Fatalf("after the server's restart: %d sessions, want 2", n)
	}

	// The account is disconnected while an instance of it is open.
	open := start(acct)
	s, err := open.OpenSession(ctx, "tester")
	if err != nil {
		t.Fatal(err)
	}
	deletes := cs.deletes.Load()
	c.CloseAccount("acct_a")
	if _, err := s.Call(ctx, "ping", "[]"); err == nil || !strings.Contains(err.Error(), "was disconnected") {
		t.Fatalf("ping after the disconnect = %v", err)
	}
	eventually(t, "closed on the server", func() bool { return cs.deletes.Load() > deletes })
	open.Close()
	if entries, conns := c.pool.size(); entries != 0 || conns != 0 {
		t.Fatalf("after the disconnect the pool holds %d entries, %d connections", entries, conns)
	}

	// Idle connections close after IdleTimeout, and past MaxIdle.
	short, err := New(Config{AllowAddrs: allow, IdleTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer short.Close()
	inst, err := short.Start(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	sc := inst.Guest().(*guest).c
	if _, err := inst.SessionMethods(ctx); err != nil {
		t.Fatal(err)
	}
	deletes = cs.deletes.Load()
	inst.Close()
	eventually(t, "closed once idle", func() bool { e, _ := sc.pool.size(); return e == 0 && cs.deletes.Load() == deletes+1 })
	one, err := New(Config{AllowAddrs: allow, MaxIdle: 1})
	if err != nil {
		t.Fatal(err)
	}
	var oc *code
	deletes = cs.deletes.Load()
	for _, name := range []string{"acct_1", "acct_2", "acct_3"} {
		inst, err := one.Start(ctx, gatekeeper.Account{Name: name, Resource: hs.URL, Queue: q})
		if err != nil {
			t.Fatal(err)
		}
		oc = inst.Guest().(*guest).c
		if _, err := inst.SessionMethods(ctx); err != nil {
			t.Fatal(err)
		}
		inst.Close()
	}
	if entries, conns := oc.pool.size(); entries != 1 || conns != 1 {
		t.Fatalf("with MaxIdle 1: %d entries, %d connections", entries, conns)
	}
	eventually(t, "the two oldest closed", func() bool { return cs.deletes.Load() == deletes+2 })
	one.Close()
	if entries, _ := oc.pool.size(); entries != 0 || cs.deletes.Load() != deletes+3 {
		t.Fatalf("after Close: %d entries, %d sessions ended, want 3", entries, cs.deletes.Load()-deletes)
	}
	if _, err := one.Start(ctx, acct); err == nil || !strings.Contains(err.Error(), "is closed") {
		t.Fatalf("Start after Close = %v", err)
	}
}

// watchServer is a Go MCP server over streamable HTTP with one subscribable resource,
// "test://doc"; it reports subscriptions and unsubscriptions. With huge set, its long-lived
// GET stream (where notifications go) sends one endless event instead, counted in gets and
// written.
type watchServer struct {
	srv            *gomcp.Server
	subs, unsubs   chan string
	huge           bool
	gets           atomic.Int64
	written        chan int64
	sdk            http.Handler
	updatedContent atomic.Value
}

func newWatchServer(huge bool) *watchServer {
	ws := &watchServer{subs: make(chan string, 16), unsubs: make(chan string, 16), huge: huge, written: make(chan int64, 16)}
	ws.updatedContent.Store("v1")
	ws.srv = gomcp.NewServer(&gomcp.Implementation{Name: "watch", Version: "1"}, &gomcp.ServerOptions{
		SubscribeHandler:   func(_ context.Context, r *gomcp.SubscribeRequest) error { ws.subs <- r.Params.URI; return nil },
		UnsubscribeHandler: func(_ context.Context, r *gomcp.UnsubscribeRequest) error { ws.unsubs <- r.Params.URI; return nil },
	})
	ws.srv.AddResource(&gomcp.Resource{URI: "test://doc", Name: "doc"}, func(_ context.Context, r *gomcp.ReadResourceRequest) (*gomcp.ReadResourceResult, error) {
		return &gomcp.ReadResourceResult{Contents: []*gomcp.ResourceContents{{URI: r.Params.URI, Text: ws.updatedContent.Load().(string)}}}, nil
	})
	ws.sdk = gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return ws.srv }, nil)
	return ws
}

func (ws *watchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !ws.huge || r.Method != http.MethodGet {
		ws.sdk.ServeHTTP(w, r)
		return
	}
	ws.gets.Add(1)
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	n, err := io.WriteString(w, "event: message\ndata: ")
	written := int64(n)
	for written < hugeSize && err == nil {
		n, err = w.Write(chunk)
		written += int64(n)
	}
	ws.written <- written
}

// TestWatchHook: a resource-updated watch against a Go server: each update fires with the
// uri and the contents read then; closing the account, or the instance, stops the watch (it
// unsubscribes). A server whose notification stream sends an endless event is cut per event
// (the watch reads a few megabytes of it, then connects again later), not read whole.
func TestWatchHook(t *testing.T) {
	ctx := context.Background()
	ws := newWatchServer(false)
	hs := httptest.NewServer(ws)
	defer hs.Close()
	gk, err := New(Config{AllowAddrs: []string{strings.TrimPrefix(hs.URL, "http://")}, CallTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer gk.Close()
	watchOf := func(account string) (s *gatekeeper.Session, inst *gatekeeper.Instance, fires chan []byte, stop func()) {
		t.Helper()
		inst, err := gk.Start(ctx, gatekeeper.Account{Name: account, Resource: hs.URL, Queue: gatekeeper.NewMemoryQueue()})
		if err != nil {
			t.Fatal(err)
		}
		s, err = inst.OpenSession(ctx, "hook:hk_1")
		if err != nil {
			t.Fatal(err)
		}
		fires = make(chan []byte, 16)
		stop, err = s.WatchHook(ctx, gatekeeper.Hook{ID: "hk_1", Event: HookResourceUpdated, Params: `{"uri":"test://doc","contents":true}`}, func(p []byte) { fires <- p })
		if err != nil {
			t.Fatal(err)
		}
		if uri := <-ws.subs; uri != "test://doc" {
			t.Fatalf("subscribed to %q", uri)
		}
		return s, inst, fires, stop
	}
	_, inst, fires, _ := watchOf("acct_w")
	for _, v := range []string{"v2", "v3"} {
		ws.updatedContent.Store(v)
		if err := ws.srv.ResourceUpdated(ctx, &gomcp.ResourceUpdatedNotificationParams{URI: "test://doc"}); err != nil {
			t.Fatal(err)
		}
		select {
		case p := <-fires:
			if !strings.Contains(string(p), `"uri":"test://doc"`) || !strings.Contains(string(p), `"text":"`+v+`"`) {
				t.Fatalf("fire = %s, want the uri and %s", p, v)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no fire within 20 s of the update")
		}
	}
	inst.Guest().(*guest).c.CloseAccount("acct_w")
	if uri := <-ws.unsubs; uri != "test://doc" {
		t.Fatalf("unsubscribed from %q", uri)
	}
	inst.Close()

	_, inst, _, _ = watchOf("acct_x")
	inst.Close()
	if uri := <-ws.unsubs; uri != "test://doc" {
		t.Fatalf("unsubscribed from %q after the instance closed", uri)
	}

	// An endless event on the notification stream.
	huge := newWatchServer(true)
	hh := httptest.NewServer(huge)
	defer hh.Close()
	gkh, err := New(Config{AllowAddrs: []string{strings.TrimPrefix(hh.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	defer gkh.Close()
	hinst, err := gkh.Start(ctx, gatekeeper.Account{Name: "acct_h", Resource: hh.URL, Queue: gatekeeper.NewMemoryQueue()})
	if err != nil {
		t.Fatal(err)
	}
	defer hinst.Close()
	hs2, err := hinst.OpenSession(ctx, "hook:hk_2")
	if err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	stop, err := hs2.WatchHook(ctx, gatekeeper.Hook{ID: "hk_2", Event: HookResourceUpdated, Params: `{"uri":"test://doc"}`}, func([]byte) {})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	for i := range 2 { // the first stream, and the one of the connection made again
		if written := <-huge.written; written >= hugeSize {
			t.Fatalf("stream %d: the server wrote all %d bytes: the host read the whole event", i, written)
		}
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 48<<20 {
		t.Fatalf("two endless events allocated %d MiB", grew>>20)
	} else {
		t.Logf("two endless events allocated %d KiB", grew>>10)
	}
}
