package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"atelier/host/runtime/wit/tsdecl"
	"atelier/host/store"
	"atelier/jsruntime"
)

// Code Mode: a principal runs a snippet in a fresh sandbox whose env holds the gadgets it may
// call in one workspace, by binding name (bindingNames). Every binding re-checks the caller's
// access on each call and is revoked when the snippet ends (jsruntime.ExecuteCode).

// Bounds of executeCode.
const (
	maxSnippet        = 1 << 20
	maxSnippetTimeout = 60 * time.Second
)

// CodeOptions are executeCode's options.
type CodeOptions struct {
	// TimeoutMs bounds the snippet's run (default 5000, at most 60000).
	TimeoutMs int `json:"timeoutMs"`
	// TypeScript strips types from the snippet first.
	TypeScript bool `json:"typescript"`
	// Gatekeepers binds the caller's gatekeeper accounts for this run, by binding name
	// (name -> account id); users only (an agent's come from its scope).
	Gatekeepers map[string]string `json:"gatekeepers"`
	// DryRun runs every gadget call against a copy-on-write fork of the gadget's state and
	// records gatekeeper actions instead of queuing them; the result's DryRun shows the diff,
	// held for commitDryRun or discardDryRun (dryexec.go).
	DryRun bool `json:"dryRun"`
}

// CodeResult is what a snippet did: its value, or the error it failed with, and its console.
type CodeResult struct {
	// Value is what the default export resolved to (as JSON); absent when it failed.
	Value any `json:"value"`
	// Error is set when the snippet threw, did not parse, or was stopped by a limit.
	Error *CodeError `json:"error,omitempty"`
	// Console holds its console lines in order.
	Console []ConsoleLine `json:"console"`
	// DryRun is what a dry run would change (options.dryRun); its ID is "" when it would
	// change nothing (then nothing is held).
	DryRun *DryRunInfo `json:"dryRun,omitempty"`
}

// CodeError is why a snippet failed.
type CodeError struct {
	Name    string `json:"name"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// ConsoleLine is one console line of a snippet.
type ConsoleLine struct {
	Level string `json:"level"`
	Text  string `json:"text"`
}

// BindingInfo describes one binding of a Code Mode env: a gadget, or a gatekeeper account.
type BindingInfo struct {
	// Name is the binding's name in env (bindingNames, or the name the agent's scope or the
	// snippet's options give a gatekeeper account).
	Name string `json:"name"`
	// Gadget is the gadget it calls ("" for a gatekeeper).
	Gadget string `json:"gadget,omitempty"`
	// Gatekeeper, Account and Resource name the gatekeeper account it calls ("" for a gadget).
	Gatekeeper string `json:"gatekeeper,omitempty"`
	Account    string `json:"account,omitempty"`
	Resource   string `json:"resource,omitempty"`
	// Methods are the gadget's exported functions (RPC names) or the gatekeeper's session
	// methods.
	Methods []string `json:"methods"`
}

// envBinding is one binding of a Code Mode env: a gadget (codeBinding) or a gatekeeper
// account (gatekeeperBinding, gkcode.go).
type envBinding interface {
	jsruntime.Binding
	// info describes it for listBindings.
	info() BindingInfo
	// declare returns its TypeScript declarations for describeBinding.
	declare(ctx context.Context) (string, error)
	// close releases what it started, once the snippet has ended.
	close()
}

// codeBinding is one gadget handed to a snippet: a jsruntime.Binding whose calls run on the
// gadget's actor after checking the caller's access again.
type codeBinding struct {
	w      *Workspace
	name   string
	gadget store.Gadget
	sf     *surface
	log    *callLog
	dry    *dryExec // the dry run its calls go to (nil: the gadget's actor)
}

var (
	_ envBinding = (*codeBinding)(nil)
	_ envBinding = (*gatekeeperBinding)(nil)
)

// Methods implements jsruntime.Binding.
func (b *codeBinding) Methods() []string { return slices.Sorted(maps.Keys(b.sf.exports)) }

// info describes the binding for listBindings.
func (b *codeBinding) info() BindingInfo {
	return BindingInfo{Name: b.name, Gadget: b.gadget.Name, Methods: b.Methods()}
}

// declare returns TypeScript declarations generated from the gadget's WIT exports, in the
// JSON value mapping that snippets see.
func (b *codeBinding) declare(context.Context) (string, error) {
	header := fmt.Sprintf("// env.%s calls gadget %q of workspace %s.\n", b.name, b.gadget.Name, b.w.id)
	if b.sf.items == nil {
		return header + tsdecl.DeclareUntyped(b.name, b.Methods()), nil
	}
	return header + tsdecl.Declare(b.name, b.sf.items, tsdecl.JSON), nil
}

// close has nothing to release: a gadget binding holds no instance of its own, and the
// snippet's scope revokes it (jsruntime).
func (*codeBinding) close() {}

// Call implements jsruntime.Binding: the call runs like a connect() call of the caller's (role
// and agent scope checked now, output gate respected), bounded by the call timeout.
func (b *codeBinding) Call(ctx context.Context, method string, args []any) (any, error) {
	b.log.add(b.name + "." + method)
	ctx, cancel := context.WithTimeout(ctx, b.w.k.callTimeout())
	defer cancel()
	var res any
	err := b.w.enter(ctx, store.RoleUse, "call", func(ov *overseer) error {
		rec, err := ov.gadget(b.gadget.ID)
		if err != nil {
			return err
		}
		if err := b.w.p.checkGadget(b.w.id, rec.Name); err != nil {
			return err
		}
		if b.dry != nil {
			s, err := b.dry.shadowOf(ctx, ov, rec.ID)
			if err != nil {
				return err
			}
			res, err = s.call(ctx, method, args)
			return err
		}
		a, err := ov.actor(ctx, rec.ID)
		if err != nil {
			return err
		}
		fn, ok := a.exports[method]
		if !ok {
			return fail(CodeNotFound, "gadget %s has no exported function %q", rec.Name, method)
		}
		if err := fn.checkJSON(method, args); err != nil {
			return err
		}
		res, err = a.call(ctx, fn.name, args) // records come in declaration order (wit.Lift)
		return err
	})
	if err != nil {
		return nil, wrapErr(err, "%s.%s", b.name, method)
	}
	return res, nil
}

// callLog records which binding methods a snippet called, for the audit line.
type callLog struct {
	mu    sync.Mutex
	calls map[string]int
}

func (l *callLog) add(call string) {
	l.mu.Lock()
	if l.calls == nil {
		l.calls = map[string]int{}
	}
	l.calls[call]++
	l.mu.Unlock()
}

func (l *callLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return "no calls"
	}
	parts := make([]string, 0, len(l.calls))
	for _, c := range slices.Sorted(maps.Keys(l.calls)) {
		parts = append(parts, fmt.Sprintf("%s x%d", c, l.calls[c]))
	}
	return "calls " + strings.Join(parts, ", ")
}

// bindingNames maps gadget names to Code Mode binding names: the camelCase of the gadget name
// ("todo-list" -> "todoList"), or the gadget name itself when two gadgets would share one
// camelCase name ("a-b" and "a--b"). A name that is not a JavaScript identifier (it starts with
// a digit) is still a property of env: env["2do"].
func bindingNames(gadgets []string) map[string]string {
	count := map[string]int{}
	for _, g := range gadgets {
		count[tsdecl.Name(g)]++
	}
	out := make(map[string]string, len(gadgets))
	for _, g := range gadgets {
		if n := tsdecl.Name(g); count[n] == 1 {
			out[g] = n
		} else {
			out[g] = g
		}
	}
	return out
}

// codeBindings returns the caller's bindings in the workspace, by binding name: every gadget
// for a user (any role: bindings only call), the gadgets of its scope for an agent; then the
// gatekeeper accounts of an agent's scope, or those a user names in gatekeepers (gkcode.go).
// Gadget methods come from the code (surfaceOf): no instance starts until a snippet calls
// one. A gadget whose code does not load is left out (its load error is logged), and so is
// one whose binding name an agent's gatekeeper binding takes; a user's gatekeeper binding may
// not take a gadget's name.
func (w *Workspace) codeBindings(ctx context.Context, log *callLog, gatekeepers map[string]string, dry *dryExec) (map[string]envBinding, error) {
	out := map[string]envBinding{}
	err := w.enter(ctx, store.RoleUse, "executeCode", func(ov *overseer) error {
		gs, err := ov.gadgetsOf(w.p)
		if err != nil {
			return err
		}
		names := make([]string, len(gs))
		for i, g := range gs {
			names[i] = g.Name
		}
		bn := bindingNames(names)
		for _, g := range gs {
			sf, err := ov.surfaceOf(ctx, g)
			if errors.Is(err, errStopped) {
				return err
			}
			if err != nil {
				w.k.log.Warn("executeCode: a gadget did not load; left out of env", "workspace", w.id, "gadget", g.Name, "err", err)
				continue
			}
			out[bn[g.Name]] = &codeBinding{w: w, name: bn[g.Name], gadget: g, sf: sf, log: log, dry: dry}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if w.p.agent != nil {
		gatekeepers = w.p.agent.Scope.Workspaces[w.id].Gatekeepers
	}
	gks, err := w.gatekeeperBindings(ctx, gatekeepers, log, dry)
	if err != nil {
		return nil, err
	}
	for name, b := range gks {
		if g, ok := out[name].(*codeBinding); ok {
			if w.p.agent == nil {
				return nil, fail(CodeInvalidArgument, "gatekeeper binding %q: gadget %s has that binding name; pick another", name, g.gadget.Name)
			}
			w.k.log.Warn("executeCode: a gatekeeper binding of the agent's scope takes a gadget's binding name; the gadget is left out of env", "workspace", w.id, "agent", w.p.name(), "binding", name, "gadget", g.gadget.Name)
		}
		out[name] = b
	}
	return out, nil
}

// listBindings describes the caller's bindings, sorted by name; gatekeepers adds accounts
// by binding name (a chat's, or a snippet's options).
func (w *Workspace) listBindings(ctx context.Context, gatekeepers map[string]string) ([]BindingInfo, error) {
	bs, err := w.codeBindings(ctx, &callLog{}, gatekeepers, nil)
	if err != nil {
		return nil, err
	}
	out := make([]BindingInfo, 0, len(bs))
	for _, name := range slices.Sorted(maps.Keys(bs)) {
		out = append(out, bs[name].info())
	}
	return out, nil
}

// describeBinding returns TypeScript declarations of one of the caller's bindings (gatekeepers
// as for listBindings).
func (w *Workspace) describeBinding(ctx context.Context, gatekeepers map[string]string, name string) (string, error) {
	bs, err := w.codeBindings(ctx, &callLog{}, gatekeepers, nil)
	if err != nil {
		return "", err
	}
	b, ok := bs[name]
	if !ok {
		return "", fail(CodeNotFound, "no binding %q in your env here (see listBindings)", name)
	}
	return b.declare(ctx)
}

// executeCode runs a snippet with the caller's bindings and audits it; via names the front end
// ("capnweb", "mcp").
func (w *Workspace) executeCode(ctx context.Context, code string, opts CodeOptions, via string) (CodeResult, error) {
	if code == "" || len(code) > maxSnippet {
		return CodeResult{}, fail(CodeInvalidArgument, "executeCode: a snippet of %d bytes: want 1 to %d", len(code), maxSnippet)
	}
	timeout := time.Duration(opts.TimeoutMs) * time.Millisecond
	if opts.TimeoutMs < 0 || timeout > maxSnippetTimeout {
		return CodeResult{}, fail(CodeInvalidArgument, "executeCode: timeoutMs %d: want 0 (default %v) to %d", opts.TimeoutMs, jsruntime.DefaultTimeout, maxSnippetTimeout.Milliseconds())
	}
	if len(opts.Gatekeepers) > 0 {
		if w.p.agent != nil {
			return CodeResult{}, fail(CodeForbidden, "executeCode: an agent's gatekeeper bindings come from its scope, not from options")
		}
		if err := w.k.validGatekeeperBindings(ctx, w.p.userID, opts.Gatekeepers); err != nil {
			return CodeResult{}, wrapErr(err, "executeCode")
		}
	}
	var ov *overseer
	if err := w.k.withCachedOverseer(ctx, w.id, &w.ov, func(o *overseer) error { ov = o; return nil }); err != nil {
		return CodeResult{}, wrapErr(err, "executeCode")
	}
	done, err := ov.startRun()
	if err != nil {
		return CodeResult{}, wrapErr(err, "executeCode")
	}
	defer done()
	log := &callLog{}
	var dry *dryExec
	if opts.DryRun {
		dry = newDryExec(w, maxDryRunBytes)
		defer dry.close()
	}
	bs, err := w.codeBindings(ctx, log, opts.Gatekeepers, dry)
	if err != nil {
		return CodeResult{}, err
	}
	defer func() {
		for _, b := range bs {
			b.close()
		}
	}()
	eng, err := w.k.jsEngine(ctx)
	if err != nil {
		return CodeResult{}, err
	}
	env := jsruntime.Env{Bindings: make(map[string]jsruntime.Binding, len(bs))}
	for name, b := range bs {
		env.Bindings[name] = b
	}
	start := time.Now()
	acc := ov.newAccount(nil)
	res, err := eng.ExecuteCode(ctx, jsruntime.Code{Source: code, TypeScript: opts.TypeScript}, env, jsruntime.Limits{Timeout: timeout, Account: acc, MaxResult: w.k.cfg.Limits.MaxResult})
	err = acc.explain(err)
	took := time.Since(start)
	out := CodeResult{Value: res.Value, Console: make([]ConsoleLine, len(res.Console))}
	for i, l := range res.Console {
		out.Console[i] = ConsoleLine{Level: l.Level, Text: l.Text}
	}
	outcome := "ok"
	if err != nil {
		if out.Error = snippetError(err); out.Error == nil {
			return CodeResult{}, wrapErr(tooLarge(err, "the snippet's value"), "executeCode")
		}
		outcome = out.Error.Name + ": " + out.Error.Message
		if len(outcome) > 200 {
			outcome = outcome[:200] + "..."
		}
	}
	sum := sha256.Sum256([]byte(code))
	detail := fmt.Sprintf("via %s; snippet sha256:%s (%d bytes); %v; %s; %s", via, hex.EncodeToString(sum[:6]), len(code), took.Round(time.Millisecond), log, outcome)
	action := "code.execute"
	if dry != nil {
		action = "code.dry_run"
		if out.DryRun, err = w.holdDryRun(dry); err != nil {
			return CodeResult{}, wrapErr(err, "executeCode")
		}
		detail += "; " + dryRunSummary(out.DryRun)
	}
	if err := w.k.withCachedOverseer(ctx, w.id, &w.ov, func(ov *overseer) error { return ov.audit(ctx, w.p, action, "executeCode", detail) }); err != nil {
		return CodeResult{}, wrapErr(err, "executeCode: audit")
	}
	return out, nil
}

// snippetError describes a failure of the snippet itself, or returns nil for a failure of the
// host.
func snippetError(err error) *CodeError {
	var jsErr *jsruntime.Error
	var synErr *jsruntime.SyntaxError
	switch {
	case errors.As(err, &jsErr):
		name := jsErr.Name
		if name == "" {
			name = "Error"
		}
		return &CodeError{Name: name, Message: jsErr.Message, Stack: jsErr.Stack}
	case errors.As(err, &synErr):
		return &CodeError{Name: "SyntaxError", Message: synErr.Error()}
	case errors.Is(err, jsruntime.ErrStopped):
		return &CodeError{Name: "Stopped", Message: err.Error()}
	}
	return nil
}

// ExecuteCode runs a snippet (`export default async function (env, ctx) { ... }`) in a fresh
// sandbox whose env holds the caller's bindings in this workspace (see ListBindings). It
// resolves to {value, console} or, when the snippet threw, did not parse or ran past its
// timeout, {error, console}. Every call is in the audit log.
func (w *Workspace) ExecuteCode(ctx context.Context, code string, opts CodeOptions) (CodeResult, error) {
	return w.executeCode(ctx, code, opts, "capnweb")
}

// ListBindings lists the caller's Code Mode bindings here: [{name, gadget, methods}].
func (w *Workspace) ListBindings(ctx context.Context) ([]BindingInfo, error) {
	return w.listBindings(ctx, nil)
}

// DescribeBinding returns TypeScript declarations of binding name, generated from the gadget's
// WIT exports.
func (w *Workspace) DescribeBinding(ctx context.Context, name string) (string, error) {
	return w.describeBinding(ctx, nil, name)
}
