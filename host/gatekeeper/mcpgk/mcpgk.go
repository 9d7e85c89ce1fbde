// Package mcpgk is the built-in MCP gatekeeper: it connects a user's account to any Model
// Context Protocol server, over streamable HTTP (the account's resource is the server's URL)
// or over stdio to a server the admin installed on the host (resource "stdio:NAME"), using
// the client of github.com/modelcontextprotocol/go-sdk.
//
// A session's methods are the server's tools, their names mapped to JavaScript identifiers
// (every character other than a letter, digit, _ or $ becomes _), plus listResources,
// readResource, listPrompts and getPrompt. A tool annotated readOnlyHint runs at once and is
// recorded as an observation; any other tool call becomes an action in the approval queue
// (kind: the tool's name, payload: the tool and its arguments) that runs when approved, and
// that a user rule may auto-approve per tool. TypeScriptTypes declares the tools from their
// JSON input schemas (typescript.go). Results larger than Config.MaxResult are refused (a
// *wit.SizeError, RESOURCE_EXHAUSTED in the kernel), and so is an HTTP server's answer while
// it is read, before it is held in memory (body.go); a server that cannot be reached or goes
// away during a call fails it with gatekeeper.ErrUnavailable, and the next call connects
// again. The instances of one account share one connection, kept a while after the last one
// closed (pool.go).
package mcpgk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/host/agent/provider"
	"atelier/host/capability/approvals"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/runtime/wit"
)

// ID is the gatekeeper ID of the MCP gatekeeper (connectAccount's gatekeeperId).
const ID = "builtin:mcp"

// Name is the MCP gatekeeper's name.
const Name = "mcp"

// Resource kinds.
const (
	// KindHTTP is a streamable HTTP server, granted by its URL.
	KindHTTP = "http"
	// KindStdio is a server the admin installed on the host, granted as "stdio:NAME".
	KindStdio = "stdio"
)

// Defaults of Config.
const (
	DefaultCallTimeout = 60 * time.Second
	DefaultMaxResult   = 4 << 20
	// maxTools bounds the tools read from one server.
	maxTools = 1024
	// connectTimeout bounds connecting and listing the tools.
	connectTimeout = 30 * time.Second
)

// Config configures the MCP gatekeeper.
type Config struct {
	// AllowAddrs lists loopback or private "ip:port" addresses HTTP servers may be reached
	// at (as outboundhttp.Options.AllowAddrs); other addresses must be public.
	AllowAddrs []string
	// Stdio maps the name of each stdio server the admin installed to its command line
	// (program and arguments). Users pick one by name ("stdio:NAME"); they never give a
	// command. The process gets only PATH, HOME and LANG from the host's environment.
	Stdio map[string][]string
	// CallTimeout bounds each call to a server (default DefaultCallTimeout).
	CallTimeout time.Duration
	// MaxResult bounds a result, JSON-encoded, in bytes (default DefaultMaxResult).
	MaxResult int
	// Version is the client version sent to servers.
	Version string
	// IdleTimeout is how long an account's connection (for stdio, its process) stays open
	// after the last instance of the account closed, for the next one to reuse (default
	// DefaultIdleTimeout; negative: closed with the last instance).
	IdleTimeout time.Duration
	// MaxIdle bounds the connections kept open without an instance (default DefaultMaxIdle;
	// negative: none).
	MaxIdle int
}

// builtinMethods are the session methods every MCP session has besides the tools.
var builtinMethods = []string{"getPrompt", "listPrompts", "listResources", "readResource"}

// New returns the MCP gatekeeper.
func New(cfg Config) (*gatekeeper.Gatekeeper, error) {
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeout
	}
	if cfg.MaxResult <= 0 {
		cfg.MaxResult = DefaultMaxResult
	}
	if cfg.IdleTimeout == 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxIdle == 0 {
		cfg.MaxIdle = DefaultMaxIdle
	}
	for name, argv := range cfg.Stdio {
		if !validStdioName(name) || len(argv) == 0 || argv[0] == "" {
			return nil, fmt.Errorf("mcp gatekeeper: stdio server %q: want a name of letters, digits, _ and - and a command", name)
		}
	}
	hc, err := provider.NewHTTPClient(provider.EgressOptions{AllowAddrs: cfg.AllowAddrs, What: "the MCP server", Flag: "--gatekeeper-allow-addr"})
	if err != nil {
		return nil, fmt.Errorf("mcp gatekeeper: %w", err)
	}
	c := &code{cfg: cfg, http: hc, pool: newPool(cfg.IdleTimeout, cfg.MaxIdle)}
	return gatekeeper.NewBuiltin(gatekeeper.Builtin{
		ID: ID,
		Manifest: gatekeeper.Manifest{
			Name: Name, Version: "1.0.0", Vendor: "Atelier",
			Credentials: []gatekeeper.Credential{{Name: "token", Description: "A bearer token for the server (optional; sent as Authorization: Bearer)",
				Header: "Authorization", Template: "Bearer {secret}", Optional: true}},
			Resources: []gatekeeper.ResourcePattern{
				{Kind: KindHTTP, URLPattern: "https://HOST/PATH (the URL of any streamable HTTP MCP server)"},
				{Kind: KindStdio, URLPattern: "stdio:NAME (a server the admin installed on this host)"},
			},
			AutoApprovable: []string{"*"},
			Session:        &gatekeeper.SessionAPI{Methods: builtinMethods, Type: "McpServer"},
			Hooks:          hookSpecs,
		},
		Vendor: gatekeeper.Vendor{DisplayName: "MCP", URL: "https://modelcontextprotocol.io",
			Tagline: "Any Model Context Protocol server", Description: "Calls the tools of an MCP server: read-only tools are observations, others wait for approval."},
		Kinds: []gatekeeper.ResourceKind{
			{Kind: KindHTTP, Title: "MCP server (HTTP)", Description: "A streamable HTTP MCP endpoint"},
			{Kind: KindStdio, Title: "MCP server (on this host)", Description: "An MCP server the admin installed, run over stdio"},
		},
		Code:  c,
		Grant: c.grant,
	}), nil
}

// ParseStdio parses an admin's NAME=COMMAND (atelier serve --mcp-stdio): the command line is
// split at white space (no quoting); its first word is the program.
func ParseStdio(v string) (name string, argv []string, err error) {
	name, command, _ := strings.Cut(v, "=")
	name, argv = strings.TrimSpace(name), strings.Fields(command)
	if !validStdioName(name) || len(argv) == 0 {
		return "", nil, fmt.Errorf("%q: want NAME=COMMAND, NAME of letters, digits, _ and - (e.g. files=npx -y @modelcontextprotocol/server-filesystem /srv/share)", v)
	}
	return name, argv, nil
}

func validStdioName(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == ""
}

// code is the gatekeeper.Code of the MCP gatekeeper.
type code struct {
	cfg     Config
	http    *http.Client
	pool    *pool
	watches watches
}

// grant accepts an http(s) URL without user info or fragment, or "stdio:NAME" of an
// installed server.
func (c *code) grant(resource string) (*gatekeeper.Grant, error) {
	if name, ok := strings.CutPrefix(resource, "stdio:"); ok {
		if _, ok := c.cfg.Stdio[name]; !ok {
			have := slices.Sorted(maps.Keys(c.cfg.Stdio))
			return nil, fmt.Errorf("no MCP server %q is installed on this host (installed: %v); the admin installs one with `atelier serve --mcp-stdio NAME=COMMAND`", name, have)
		}
		return &gatekeeper.Grant{Kind: KindStdio}, nil
	}
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("MCP server %.200q: want an http:// or https:// URL of a streamable HTTP server, or stdio:NAME", resource)
	}
	if u.User != nil || u.Fragment != "" {
		return nil, fmt.Errorf("MCP server %.200q: no user info or fragment allowed (give a token as the credential)", resource)
	}
	return &gatekeeper.Grant{Kind: KindHTTP, Prefixes: []string{resource}}, nil
}

// Start implements gatekeeper.Code: the guest shares its account's connection (pool.go),
// made on first use.
func (c *code) Start(_ context.Context, gc gatekeeper.GuestConfig) (gatekeeper.Guest, error) {
	g := &guest{c: c, name: gc.Name, resource: gc.Resource, sink: gc.Sink}
	if gc.Policy != nil {
		g.headers = gc.Policy.Headers
		for _, s := range gc.Policy.Secrets {
			if len(s) >= 8 {
				g.secrets = append(g.secrets, s)
			}
		}
	}
	e, err := c.pool.acquire(poolKey(gc.Name, gc.Resource, g.headers), gc.Name)
	if err != nil {
		return nil, err
	}
	g.entry = e
	return g, nil
}

// Close implements gatekeeper.Code: it closes every connection (stdio servers' processes
// end) and refuses new instances.
func (c *code) Close() {
	c.watches.stop(nil)
	c.pool.close()
}

// CloseAccount closes the connection of account (an Account.Name), in use or not, and ends
// its hook watches: the account was disconnected. Its instances' next calls are refused.
func (c *code) CloseAccount(account string) {
	c.watches.stop(func(g *guest) bool { return g.name == account })
	c.pool.closeAccount(account)
}

// guest is one instance of the MCP gatekeeper. Its calls go over its account's connection,
// made on first use and again after it failed. It is safe for concurrent use.
type guest struct {
	c        *code
	name     string
	resource string
	headers  []outboundhttp.Header
	secrets  []string
	sink     approvals.Sink
	entry    *entry

	mu       sync.Mutex
	closed   bool
	sessions uint64
}

// session returns the account's live connection, connecting when there is none.
func (g *guest) session(ctx context.Context) (*conn, error) {
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return nil, errors.New("the MCP gatekeeper instance is closed")
	}
	return g.entry.get(ctx, g.connect)
}

// drop closes cn if it is still the account's connection, so that the next call connects
// again.
func (g *guest) drop(cn *conn) { g.entry.drop(cn) }

// withConn runs f on the account's connection. When f fails because the connection had
// ended before f's request was sent (a stdio server's process exited while the connection
// was idle: the SDK refused the call, or writing to the process failed) or the HTTP server
// no longer knows the session (it restarted; it ran nothing), it connects again, once, and
// runs f again.
func (g *guest) withConn(ctx context.Context, f func(cn *conn) error) error {
	for retried := false; ; retried = true {
		cn, err := g.session(ctx)
		if err != nil {
			return err
		}
		err = f(cn)
		if err == nil || retried || !(errors.Is(err, gomcp.ErrConnectionClosed) || errors.Is(err, gomcp.ErrSessionMissing) || errors.Is(err, syscall.EPIPE)) {
			return err
		}
		g.drop(cn)
	}
}

// transport returns the MCP transport of the account's resource; over HTTP, with the
// long-lived GET stream of server notifications when listen is set (hook watches).
func (g *guest) transport(listen bool) (gomcp.Transport, error) {
	if name, ok := strings.CutPrefix(g.resource, "stdio:"); ok {
		argv, ok := g.c.cfg.Stdio[name]
		if !ok {
			return nil, fmt.Errorf("no MCP server %q is installed on this host any more; ask the admin", name)
		}
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "LANG=" + os.Getenv("LANG")}
		return &gomcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
	hc := *g.c.http
	hc.Transport = headerTransport{base: g.c.http.Transport, headers: g.headers, maxResult: g.c.cfg.MaxResult}
	return &gomcp.StreamableClientTransport{Endpoint: g.resource, HTTPClient: &hc, MaxRetries: -1, DisableStandaloneSSE: !listen}, nil
}

// dial connects to the server with opts (listen: see transport), within connectTimeout and
// ctx. The connection keeps none of ctx's values (it outlives the call that made it).
func (g *guest) dial(ctx context.Context, opts *gomcp.ClientOptions, listen bool) (*conn, error) {
	t, err := g.transport(listen)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	cctx, slot := withSizeSlot(cctx)
	client := gomcp.NewClient(&gomcp.Implementation{Name: "atelier", Version: g.c.cfg.Version}, opts)
	cs, err := client.Connect(cctx, t, nil)
	if err != nil {
		if se, _ := slot.get(); se != nil {
			return nil, fmt.Errorf("connect to MCP server %s: its answer to initialize: %w", g.resource, se)
		}
		return nil, fmt.Errorf("%w: connect to MCP server %s: %v", gatekeeper.ErrUnavailable, g.resource, err)
	}
	g.c.pool.connects.Add(1)
	return newConn(cs), nil
}

// connect connects to the server and reads its tools.
func (g *guest) connect(ctx context.Context) (*conn, error) {
	ctx, cancel := context.WithTimeout(ctx, connectTimeout)
	defer cancel()
	cn, err := g.dial(ctx, nil, false)
	if err != nil {
		return nil, err
	}
	cs := cn.cs
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		cn.server = strings.TrimSpace(ir.ServerInfo.Name + " " + ir.ServerInfo.Version)
	}
	if ir := cs.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Tools != nil {
		byMethod := map[string]string{}
		for _, m := range builtinMethods {
			byMethod[m] = "(the built-in method " + m + ")"
		}
		n := 0
		ctx, _ := withSizeSlot(ctx)
		for tool, err := range cs.Tools(ctx, nil) {
			if err != nil {
				cs.Close()
				return nil, g.callErr(ctx, nil, "tools/list", err)
			}
			if n++; n > maxTools {
				cs.Close()
				return nil, fmt.Errorf("MCP server %s has more than %d tools", g.resource, maxTools)
			}
			m := MethodName(tool.Name)
			if other, dup := byMethod[m]; dup {
				cs.Close()
				return nil, fmt.Errorf("MCP server %s: tool %.100q maps to method %s, which is taken by %.100q; the server's tools cannot be told apart in JavaScript, so this server cannot be used", g.resource, tool.Name, m, other)
			}
			byMethod[m] = tool.Name
			cn.tools[m] = tool
		}
	}
	return cn, nil
}

// MethodName maps an MCP tool name to the JavaScript method name of a session: every
// character other than an ASCII letter, digit, _ or $ becomes _, a leading digit gets a _
// before it, and names Object.prototype or promises use ("constructor", "then") get a _ after.
func MethodName(tool string) string {
	b := []byte(tool)
	for i, c := range b {
		if !(c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	s := string(b)
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		s = "_" + s
	}
	switch s {
	case "constructor", "__proto__", "prototype", "then", "toString", "valueOf", "hasOwnProperty", "isPrototypeOf",
		"propertyIsEnumerable", "toLocaleString", "__defineGetter__", "__defineSetter__", "__lookupGetter__", "__lookupSetter__":
		s += "_"
	}
	return s
}

// headerTransport adds the account's credential headers to every request and bounds every
// answer while it is read (boundedBody): an answer over the bound fails its body with a
// *wit.SizeError, recorded in the size slot of the request's context (withSizeSlot) for the
// call to return.
type headerTransport struct {
	base      http.RoundTripper
	headers   []outboundhttp.Header
	maxResult int
}

// RoundTrip implements http.RoundTripper.
func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(h.headers) > 0 {
		r = r.Clone(r.Context())
		for _, hd := range h.headers {
			r.Header.Set(hd.Name, hd.Value)
		}
	}
	resp, err := h.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	var onLimit func(*wit.SizeError, bool)
	if slot, ok := r.Context().Value(sizeSlotKey{}).(*sizeSlot); ok {
		onLimit = slot.set
	}
	resp.Body = newBoundedBody(resp, h.maxResult, onLimit)
	return resp, nil
}

// codeRejected is the JSON-RPC error code the SDK gives a request its transport could not
// deliver or answer (the connection failed).
const codeRejected = -32005

// callErr describes a failed request what of cn (nil while connecting), made with ctx: an
// answer over the size bound is a *wit.SizeError; an error the server answered with is its
// message; anything else means the connection failed, which is dropped so that the next call
// connects again (gatekeeper.ErrUnavailable).
func (g *guest) callErr(ctx context.Context, cn *conn, what string, err error) error {
	var rpc *jsonrpc.Error
	slot, _ := ctx.Value(sizeSlotKey{}).(*sizeSlot)
	if se, fatal := slot.get(); se != nil {
		if fatal && cn != nil {
			g.drop(cn) // the SDK failed the connection on the body's error
		}
		return fmt.Errorf("%s: the MCP server's answer: %w", what, se)
	}
	switch {
	case errors.As(err, &rpc) && rpc.Code != codeRejected:
		return fmt.Errorf("MCP server %s: %s: %s", g.resource, what, rpc.Message)
	case errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("MCP server %s: %s: no answer within the time allowed: %w", g.resource, what, err)
	case errors.Is(err, context.Canceled):
		return fmt.Errorf("MCP server %s: %s: %w", g.resource, what, err)
	}
	if cn != nil {
		g.drop(cn)
	}
	return fmt.Errorf("%w: MCP server %s: %s: the connection failed (%w); the next call connects again", gatekeeper.ErrUnavailable, g.resource, what, err)
}

// bounded returns v as JSON with the account's secrets removed, or a *wit.SizeError when it
// is larger than Config.MaxResult.
func (g *guest) bounded(what string, v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("%s: encode the result: %w", what, err)
	}
	if len(b) > g.c.cfg.MaxResult {
		return "", fmt.Errorf("%s: the MCP server's result: %w", what, &wit.SizeError{Size: int64(len(b)), Limit: int64(g.c.cfg.MaxResult)})
	}
	return g.scrub(string(b)), nil
}

// scrub replaces the account's secrets in s (raw and JSON-escaped) with the marker.
func (g *guest) scrub(s string) string {
	for _, secret := range g.secrets {
		s = strings.ReplaceAll(s, secret, outboundhttp.CredentialMarker)
		if q, err := json.Marshal(secret); err == nil {
			s = strings.ReplaceAll(s, string(q[1:len(q)-1]), outboundhttp.CredentialMarker)
		}
	}
	return s
}

// Describe implements gatekeeper.Guest.
func (g *guest) Describe(context.Context) (gatekeeper.Vendor, error) {
	return gatekeeper.Vendor{DisplayName: "MCP", URL: "https://modelcontextprotocol.io", Tagline: "Any Model Context Protocol server"}, nil
}

// ResourceKinds implements gatekeeper.Guest.
func (g *guest) ResourceKinds(context.Context) ([]gatekeeper.ResourceKind, error) {
	return []gatekeeper.ResourceKind{{Kind: KindHTTP, Title: "MCP server (HTTP)"}, {Kind: KindStdio, Title: "MCP server (on this host)"}}, nil
}

// DescribeResource implements gatekeeper.Guest.
func (g *guest) DescribeResource(ctx context.Context, u string) (gatekeeper.Resource, error) {
	cn, err := g.session(ctx)
	if err != nil {
		return gatekeeper.Resource{}, err
	}
	return gatekeeper.Resource{URL: u, Title: cmp(cn.server, u), Snippet: fmt.Sprintf("%d tools", len(cn.tools)), SuggestedBindingName: "mcp"}, nil
}

func cmp(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// SessionMethods implements gatekeeper.MethodLister: the tools' methods and the built-in ones.
func (g *guest) SessionMethods(ctx context.Context) ([]string, error) {
	cn, err := g.session(ctx)
	if err != nil {
		return nil, err
	}
	return slices.Sorted(slices.Values(append(slices.Collect(maps.Keys(cn.tools)), builtinMethods...))), nil
}

// TypeScriptTypes implements gatekeeper.Guest.
func (g *guest) TypeScriptTypes(ctx context.Context) (string, error) {
	cn, err := g.session(ctx)
	if err != nil {
		return "", err
	}
	return declare(cn), nil
}

// OpenSession implements gatekeeper.Guest: sessions share the instance's connection.
func (g *guest) OpenSession(ctx context.Context, _, _ string) (uint64, error) {
	if _, err := g.session(ctx); err != nil {
		return 0, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.sessions++
	return g.sessions, nil
}

// CloseSession implements gatekeeper.Guest.
func (g *guest) CloseSession(context.Context, uint64) error { return nil }

// Invoke implements gatekeeper.Guest: args is a JSON array.
func (g *guest) Invoke(ctx context.Context, _ uint64, method, args string) (string, error) {
	var list []json.RawMessage
	if err := json.Unmarshal([]byte(args), &list); err != nil {
		return "", fmt.Errorf("%s: the arguments are not a JSON array: %w", method, err)
	}
	cn, err := g.session(ctx)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, g.c.cfg.CallTimeout)
	defer cancel()
	switch method {
	case "listResources":
		return g.listResources(ctx)
	case "readResource":
		var uri string
		if len(list) != 1 || json.Unmarshal(list[0], &uri) != nil || uri == "" {
			return "", errors.New("readResource(uri: string): want one resource URI")
		}
		return g.readResource(ctx, uri)
	case "listPrompts":
		return g.listPrompts(ctx)
	case "getPrompt":
		var p gomcp.GetPromptParams
		if len(list) < 1 || len(list) > 2 || json.Unmarshal(list[0], &p.Name) != nil || p.Name == "" ||
			len(list) == 2 && json.Unmarshal(list[1], &p.Arguments) != nil {
			return "", errors.New("getPrompt(name: string, args?: Record<string, string>): want a prompt name and string arguments")
		}
		var res *gomcp.GetPromptResult
		err := g.request(ctx, "prompts/get "+p.Name, func(ctx context.Context, cn *conn) (err error) {
			res, err = cn.cs.GetPrompt(ctx, &p)
			return err
		})
		if err != nil {
			return "", err
		}
		return g.observe(ctx, "Read prompt "+p.Name, fmt.Sprintf("Prompt `%s` of MCP server %s.", p.Name, g.resource), "getPrompt", res)
	}
	tool, ok := cn.tools[method]
	if !ok {
		return "", fmt.Errorf("the MCP server %s has no tool for method %q", g.resource, method)
	}
	arguments := map[string]any{}
	switch len(list) {
	case 0:
	case 1:
		if err := json.Unmarshal(list[0], &arguments); err != nil || arguments == nil {
			return "", fmt.Errorf("%s(args): want one object of the tool's arguments", method)
		}
	default:
		return "", fmt.Errorf("%s(args): want one object of the tool's arguments, not %d values", method, len(list))
	}
	if tool.Annotations != nil && tool.Annotations.ReadOnlyHint {
		res, err := g.call(ctx, tool.Name, arguments)
		if err != nil {
			return "", err
		}
		return g.observe(ctx, "Called read-only tool "+tool.Name, fmt.Sprintf("`%s` on MCP server %s with arguments:\n\n```json\n%s\n```", tool.Name, g.resource, preview(arguments)), method, res)
	}
	payload, err := json.Marshal(actionPayload{Tool: tool.Name, Arguments: arguments})
	if err != nil {
		return "", fmt.Errorf("%s: encode the action: %w", method, err)
	}
	id, err := g.sink.SubmitAction(ctx, approvals.Action{
		Title:       "Call tool " + tool.Name,
		Description: fmt.Sprintf("Call `%s` on MCP server %s with arguments:\n\n```json\n%s\n```", tool.Name, g.resource, preview(arguments)),
		Kind:        approvals.ActionKind{Tag: tool.Name, Label: "MCP tool " + tool.Name},
		// Every tool may get a rule (the manifest lists "*"); a rule names one tool.
		AutoApprovable: true,
		Payload:        string(payload),
	})
	if err != nil {
		return "", fmt.Errorf("%s: queue the action: %w", method, err)
	}
	out, _ := json.Marshal(Queued{Action: id, State: "pending", Tool: tool.Name})
	return string(out), nil
}

// Queued is what a call of a tool that is not read-only returns: the action waiting in the
// approval queue.
type Queued struct {
	Action uint64 `json:"action"`
	State  string `json:"state"`
	Tool   string `json:"tool"`
}

// actionPayload is what an action stores: the tool and its arguments, applied as approved.
type actionPayload struct {
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

// request makes one request what to the server: f on the account's connection (withConn),
// with a size slot of its own in ctx; f's error is described by callErr.
func (g *guest) request(ctx context.Context, what string, f func(ctx context.Context, cn *conn) error) error {
	return g.withConn(ctx, func(cn *conn) error {
		ctx, _ := withSizeSlot(ctx)
		if err := f(ctx, cn); err != nil {
			return g.callErr(ctx, cn, what, err)
		}
		return nil
	})
}

// call calls tool; a result the tool marked as an error fails the call with its text.
func (g *guest) call(ctx context.Context, tool string, arguments map[string]any) (*gomcp.CallToolResult, error) {
	var res *gomcp.CallToolResult
	err := g.request(ctx, "tools/call "+tool, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.cs.CallTool(ctx, &gomcp.CallToolParams{Name: tool, Arguments: arguments})
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.IsError {
		return nil, fmt.Errorf("MCP tool %s failed: %s", tool, clip(resultText(res), 2048))
	}
	return res, nil
}

// observe records a read and returns its result.
func (g *guest) observe(ctx context.Context, title, description, what string, res any) (string, error) {
	out, err := g.bounded(what, res)
	if err != nil {
		return "", err
	}
	if g.sink == nil {
		return "", errors.New("this instance may not read (no approvals sink)")
	}
	if err := g.sink.AuthorizeObservation(ctx, approvals.Observation{Title: title, Description: description}); err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

func (g *guest) listResources(ctx context.Context) (string, error) {
	var out []*gomcp.Resource
	err := g.request(ctx, "resources/list", func(ctx context.Context, cn *conn) error {
		out = []*gomcp.Resource{}
		for r, err := range cn.cs.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return g.observe(ctx, "Listed resources", fmt.Sprintf("The resources of MCP server %s (%d).", g.resource, len(out)), "listResources", out)
}

func (g *guest) readResource(ctx context.Context, uri string) (string, error) {
	var res *gomcp.ReadResourceResult
	err := g.request(ctx, "resources/read "+uri, func(ctx context.Context, cn *conn) (err error) {
		res, err = cn.cs.ReadResource(ctx, &gomcp.ReadResourceParams{URI: uri})
		return err
	})
	if err != nil {
		return "", err
	}
	return g.observe(ctx, "Read resource "+clip(uri, 200), fmt.Sprintf("Resource `%s` of MCP server %s.", clip(uri, 1024), g.resource), "readResource", res)
}

func (g *guest) listPrompts(ctx context.Context) (string, error) {
	var out []*gomcp.Prompt
	err := g.request(ctx, "prompts/list", func(ctx context.Context, cn *conn) error {
		out = []*gomcp.Prompt{}
		for p, err := range cn.cs.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	return g.observe(ctx, "Listed prompts", fmt.Sprintf("The prompts of MCP server %s (%d).", g.resource, len(out)), "listPrompts", out)
}

// ApplyAction implements gatekeeper.Guest: it calls the tool with the approved arguments and
// returns the result's text (at most 4 KiB of it: the tool has run, so a large result is cut,
// not refused).
func (g *guest) ApplyAction(ctx context.Context, _ uint64, payload string) (string, error) {
	var p actionPayload
	if err := json.Unmarshal([]byte(payload), &p); err != nil || p.Tool == "" {
		return "", fmt.Errorf("not an MCP tool call: %.100q", payload)
	}
	if _, err := g.session(ctx); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, g.c.cfg.CallTimeout)
	defer cancel()
	res, err := g.call(ctx, p.Tool, p.Arguments)
	if err != nil {
		return "", err
	}
	return clip(g.scrub(resultText(res)), 4096), nil
}

// RejectAction implements gatekeeper.Guest: nothing was done.
func (g *guest) RejectAction(context.Context, uint64, string) error { return nil }

// RevertAction implements gatekeeper.Guest: MCP tools cannot be undone.
func (g *guest) RevertAction(context.Context, uint64, string) (string, error) {
	return "", errors.New("MCP tool calls cannot be reverted")
}

// Close implements gatekeeper.Guest: the instance's hook watches stop, and it lets go of its
// account's connection, which the pool keeps a while for the account's next instance
// (pool.release).
func (g *guest) Close() error {
	g.mu.Lock()
	closed := g.closed
	g.closed = true
	g.mu.Unlock()
	if !closed {
		g.c.watches.stop(func(o *guest) bool { return o == g })
		g.c.pool.release(g.entry)
	}
	return nil
}

// resultText joins the text content of res.
func resultText(res *gomcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*gomcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		return string(b)
	}
	return strings.Join(parts, "\n")
}

// preview is arguments as JSON for a queue entry's description: at most 4 KiB, with
// backquotes escaped so that the text cannot close the markdown code block.
func preview(arguments map[string]any) string {
	b, _ := json.MarshalIndent(arguments, "", "  ")
	return clip(strings.ReplaceAll(string(b), "`", `\u0060`), 4096)
}

// clip shortens s to n bytes with a marker saying how much was left out.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + fmt.Sprintf(" … (%d bytes more)", len(s)-n)
}
