// Package mcp serves Atelier's Code Mode to AI agents over the Model Context Protocol
// (streamable HTTP, github.com/modelcontextprotocol/go-sdk), statelessly: the server keeps no
// MCP session, so an agent cannot make it hold anything between requests. Every request
// carries an agent token (Authorization: Bearer atl_...); the tools act as that agent, within
// the scope its owner gave it, and every tool call is in the workspace's audit log naming the
// agent and its owner:
//
//   - list_bindings {workspace?}: the gadgets the agent's snippets can call, as env.NAME
//   - describe_binding {name, workspace?}: TypeScript declarations of one binding
//   - execute_code {code, workspace?, timeout_ms?, typescript?, dry_run?}: runs
//     `export default async function (env, ctx) { ... }` in a fresh sandbox; returns the
//     value and the console output. With dry_run, gadget writes go to a fork and gatekeeper
//     actions are recorded: the result shows the diff and a dry run id
//   - commit_dry_run {id, workspace?}: applies a dry run (CONFLICT when a key it touched
//     changed since: run the snippet again) and queues its actions for approval
//   - discard_dry_run {id, workspace?}: drops a dry run
//
// workspace is a workspace id; it may be left out when the agent's scope names one workspace.
package mcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/host/kernel"
	"atelier/host/store"
	"atelier/internal/membudget"
)

// Config configures the MCP handler.
type Config struct {
	// Kernel runs the tools.
	Kernel *kernel.Kernel
	// Logger receives transport errors; nil logs nothing.
	Logger *slog.Logger
	// BodyMemory bounds the bytes of request bodies the endpoint holds at once, each from the
	// moment it arrives until its request is answered (0 means DefaultBodyMemory); one client
	// address holds at most a quarter of it. Past it a request is answered 503, past the
	// address's share 429, both with Retry-After.
	BodyMemory int64
}

// DefaultBodyMemory is Config.BodyMemory when left zero.
const DefaultBodyMemory = 128 << 20

// bodyTimeout bounds how long a request may take to send its body (past it: 408).
const bodyTimeout = 30 * time.Second

// sessionKey is the TokenInfo.Extra key of the request's *kernel.AgentSession.
const sessionKey = "atelier.agent"

// maxBody bounds one request body (a snippet is at most 1 MiB).
const maxBody = 4 << 20

// New returns the MCP endpoint's HTTP handler (mounted at /mcp by host/gateway).
func New(cfg Config) http.Handler {
	srv := gomcp.NewServer(&gomcp.Implementation{Name: "atelier", Title: "Atelier Code Mode", Version: cfg.Kernel.Version()}, &gomcp.ServerOptions{
		Instructions: "Call gadgets of an Atelier workspace by running JavaScript: list_bindings shows what env holds, " +
			"describe_binding gives a binding's TypeScript types, execute_code runs `export default async function (env, ctx) { ... }` " +
			"and returns its value and console output.",
	})
	gomcp.AddTool(srv, &gomcp.Tool{Name: "list_bindings", Description: "List the gadgets your code can call in a workspace, as env.NAME with their methods."}, listBindings)
	gomcp.AddTool(srv, &gomcp.Tool{Name: "describe_binding", Description: "TypeScript declarations of one binding of env: its methods, argument and result types."}, describeBinding)
	gomcp.AddTool(srv, &gomcp.Tool{Name: "execute_code", Description: "Run a JavaScript (or TypeScript) module whose default export is " +
		"`async function (env, ctx)` in a fresh sandbox; env.NAME.method(...) calls gadgets (see list_bindings). " +
		"Returns the resolved value as JSON and the console output. No network, timers or modules. " +
		"With dry_run, nothing changes: gadget writes go to a fork and gatekeeper actions are recorded; the result shows " +
		"the diff and a dry run id for commit_dry_run or discard_dry_run (held 15 minutes)."}, executeCode)
	gomcp.AddTool(srv, &gomcp.Tool{Name: "commit_dry_run", Description: "Apply a dry run of execute_code: all its writes at once, " +
		"unless a key it touched changed since (then nothing is applied: run the snippet again), and queue its gatekeeper actions for approval."}, commitDryRun)
	gomcp.AddTool(srv, &gomcp.Tool{Name: "discard_dry_run", Description: "Drop a dry run of execute_code."}, discardDryRun)
	h := gomcp.NewStreamableHTTPHandler(func(*http.Request) *gomcp.Server { return srv },
		&gomcp.StreamableHTTPOptions{Logger: cfg.Logger, Stateless: true, MaxRequestBodyBytes: maxBody})
	verify := func(ctx context.Context, token string, req *http.Request) (*auth.TokenInfo, error) {
		s, err := cfg.Kernel.AuthenticateAgent(ctx, token, remoteHost(req), "mcp")
		var ke *kernel.Error
		if errors.As(err, &ke) && ke.Code == kernel.CodeUnauthorized {
			return nil, fmt.Errorf("%w: %s", auth.ErrInvalidToken, ke.Msg)
		}
		if err != nil {
			return nil, err
		}
		return &auth.TokenInfo{UserID: s.AgentID(), Extra: map[string]any{sessionKey: s}}, nil
	}
	bodies := membudget.New(cmp.Or(cfg.BodyMemory, DefaultBodyMemory), 0)
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(boundBodies(h, bodies))
}

// boundBodies reads the body of an authenticated request before next handles it: within
// bodyTimeout, and reserving its bytes in bodies as they arrive (held until the request is
// answered), so that an agent cannot make the server hold bodies without bound.
func boundBodies(next http.Handler, bodies *membudget.Budget) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		share := bodies.Share(r.RemoteAddr)
		body, held, ok := membudget.ReadBody(w, r, maxBody, bodyTimeout, share, "MCP requests")
		defer share.Release(held)
		if !ok {
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

// remoteHost is the request's client address without the port.
func remoteHost(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// agent returns the session the request authenticated as, and the workspace the tool acts in:
// ws, or the only one of the agent's scope.
func agent(ctx context.Context, req *gomcp.CallToolRequest, ws string) (*kernel.AgentSession, store.WorkspaceID, error) {
	var s *kernel.AgentSession
	if ti := req.Extra.TokenInfo; ti != nil {
		s, _ = ti.Extra[sessionKey].(*kernel.AgentSession)
	}
	if s == nil {
		return nil, "", errors.New("the request carries no agent token")
	}
	if ws != "" {
		return s, store.WorkspaceID(ws), nil
	}
	list, err := s.Workspaces(ctx)
	if err != nil {
		return nil, "", err
	}
	if len(list) != 1 {
		ids := make([]string, len(list))
		for i, w := range list {
			ids[i] = fmt.Sprintf("%s (%s)", w.ID, w.Name)
		}
		return nil, "", fmt.Errorf("pass workspace: your scope has %d workspaces: %s", len(list), strings.Join(ids, ", "))
	}
	return s, list[0].ID, nil
}

// text is a tool result holding one text.
func text(s string) *gomcp.CallToolResult {
	return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: s}}}
}

// ListBindingsArgs are list_bindings' arguments.
type ListBindingsArgs struct {
	Workspace string `json:"workspace,omitempty" jsonschema:"workspace id; may be left out when your scope names one workspace"`
}

func listBindings(ctx context.Context, req *gomcp.CallToolRequest, in ListBindingsArgs) (*gomcp.CallToolResult, any, error) {
	s, ws, err := agent(ctx, req, in.Workspace)
	if err != nil {
		return nil, nil, err
	}
	bs, err := s.ListBindings(ctx, ws)
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "env of workspace %s (call as `await env.NAME.method(...)`):\n", ws)
	for _, x := range bs {
		what := fmt.Sprintf("gadget %q", x.Gadget)
		if x.Gatekeeper != "" {
			what = fmt.Sprintf("gatekeeper %q on %s; changes wait for approval", x.Gatekeeper, x.Resource)
		}
		fmt.Fprintf(&b, "- %s (%s): %s\n", x.Name, what, strings.Join(x.Methods, ", "))
	}
	res := text(b.String())
	res.StructuredContent = map[string]any{"workspace": ws, "bindings": bs}
	return res, nil, nil
}

// DescribeBindingArgs are describe_binding's arguments.
type DescribeBindingArgs struct {
	Name      string `json:"name" jsonschema:"the binding's name in env, from list_bindings"`
	Workspace string `json:"workspace,omitempty" jsonschema:"workspace id; may be left out when your scope names one workspace"`
}

func describeBinding(ctx context.Context, req *gomcp.CallToolRequest, in DescribeBindingArgs) (*gomcp.CallToolResult, any, error) {
	s, ws, err := agent(ctx, req, in.Workspace)
	if err != nil {
		return nil, nil, err
	}
	decl, err := s.DescribeBinding(ctx, ws, in.Name)
	if err != nil {
		return nil, nil, err
	}
	return text(decl), nil, nil
}

// ExecuteCodeArgs are execute_code's arguments.
type ExecuteCodeArgs struct {
	Code       string `json:"code" jsonschema:"an ES module: export default async function (env, ctx) { ... }"`
	Workspace  string `json:"workspace,omitempty" jsonschema:"workspace id; may be left out when your scope names one workspace"`
	TimeoutMs  int    `json:"timeout_ms,omitempty" jsonschema:"time limit in milliseconds (default 5000, at most 60000)"`
	TypeScript bool   `json:"typescript,omitempty" jsonschema:"strip TypeScript types from code first"`
	DryRun     bool   `json:"dry_run,omitempty" jsonschema:"change nothing: show what the code would write and which actions it would queue, held for commit_dry_run"`
}

func executeCode(ctx context.Context, req *gomcp.CallToolRequest, in ExecuteCodeArgs) (*gomcp.CallToolResult, any, error) {
	s, ws, err := agent(ctx, req, in.Workspace)
	if err != nil {
		return nil, nil, err
	}
	out, err := s.ExecuteCode(ctx, ws, in.Code, kernel.CodeOptions{TimeoutMs: in.TimeoutMs, TypeScript: in.TypeScript, DryRun: in.DryRun})
	if err != nil {
		return nil, nil, err
	}
	var b strings.Builder
	for _, l := range out.Console {
		fmt.Fprintf(&b, "[%s] %s\n", l.Level, l.Text)
	}
	if out.Error != nil {
		fmt.Fprintf(&b, "%s: %s\n%s", out.Error.Name, out.Error.Message, out.Error.Stack)
	} else {
		v, err := json.MarshalIndent(out.Value, "", "  ")
		if err != nil {
			return nil, nil, fmt.Errorf("encode the result: %w", err)
		}
		fmt.Fprintf(&b, "result: %s\n", v)
	}
	if out.DryRun != nil {
		b.WriteString(out.DryRun.Text())
	}
	res := text(b.String())
	res.StructuredContent = out
	res.IsError = out.Error != nil
	return res, nil, nil
}

// DryRunArgs are commit_dry_run's and discard_dry_run's arguments.
type DryRunArgs struct {
	ID        string `json:"id" jsonschema:"the dry run's id, from execute_code with dry_run"`
	Workspace string `json:"workspace,omitempty" jsonschema:"workspace id; may be left out when your scope names one workspace"`
}

func commitDryRun(ctx context.Context, req *gomcp.CallToolRequest, in DryRunArgs) (*gomcp.CallToolResult, any, error) {
	s, ws, err := agent(ctx, req, in.Workspace)
	if err != nil {
		return nil, nil, err
	}
	out, err := s.CommitDryRun(ctx, ws, in.ID)
	if err != nil {
		return nil, nil, err
	}
	res := text(fmt.Sprintf("committed dry run %s; queued actions: %v\n", in.ID, out.Actions))
	res.StructuredContent = out
	return res, nil, nil
}

func discardDryRun(ctx context.Context, req *gomcp.CallToolRequest, in DryRunArgs) (*gomcp.CallToolResult, any, error) {
	s, ws, err := agent(ctx, req, in.Workspace)
	if err != nil {
		return nil, nil, err
	}
	if err := s.DiscardDryRun(ctx, ws, in.ID); err != nil {
		return nil, nil, err
	}
	return text(fmt.Sprintf("discarded dry run %s\n", in.ID)), nil, nil
}
