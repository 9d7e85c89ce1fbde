package jsruntime

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"atelier/host/capability/bindings"
	"atelier/host/runtime"
)

// Binding is a capability handed to a snippet: in its env, `env.NAME` is a stub whose methods
// are Methods() and whose calls run Call. The kernel implements it (a gadget stub whose methods
// are the gadget's exports). Call gets the arguments decoded from JSON (numbers are float64)
// and returns a value that encoding/json can encode; an error rejects the call's promise in
// JavaScript with the error's text.
type Binding interface {
	Methods() []string
	Call(ctx context.Context, method string, args []any) (any, error)
}

// Env is what a snippet's `env` holds: only these bindings, by name.
type Env struct {
	Bindings map[string]Binding
}

// Code is a snippet: an ES module whose default export is `async function (env, ctx)`. env
// holds the Env's bindings; ctx is an empty object, reserved for later use.
type Code struct {
	// Source is the module's text.
	Source string
	// TypeScript strips types from Source first; positions in errors still point at Source.
	TypeScript bool
}

// Line is one console line of a snippet.
type Line struct {
	// Level is "debug", "info" (console.log and console.info), "warn" or "error".
	Level string
	Text  string
}

// Result is what a snippet returned.
type Result struct {
	// Value is the resolved value of the default export, as encoding/json decodes its JSON
	// (undefined and null are nil; functions and symbols inside objects are dropped).
	Value any
	// Console holds the console lines in order (at most MaxConsoleLines and MaxConsoleBytes).
	Console []Line
}

// Bounds of a snippet's console output; past them one last "truncated" line is added.
const (
	MaxConsoleLines = 1000
	MaxConsoleBytes = 1 << 20
)

// ExecuteCode runs a snippet in a fresh engine instance that is discarded afterwards, with an
// env that holds only env's bindings. Every binding is revoked when ExecuteCode returns:
// whatever still holds it gets ErrRevoked.
//
// It returns the snippet's value and console output; on failure it returns the console output
// so far with a *Error (what JavaScript threw, with its stack), a *SyntaxError (TypeScript that
// did not parse; JavaScript syntax errors are *Error values named "SyntaxError"), or an error
// matching ErrStopped (deadline, memory cap).
func (e *Engine) ExecuteCode(ctx context.Context, code Code, env Env, lim Limits) (Result, error) {
	lim, err := lim.withDefaults()
	if err != nil {
		return Result{}, fmt.Errorf("executeCode: %w", err)
	}
	name := "snippet.js"
	if code.TypeScript {
		name = "snippet.ts"
	}
	js, sm, err := strip(name, code.Source)
	if err != nil {
		return Result{}, err
	}
	var maps map[string]*sourceMap
	if sm != nil {
		maps = map[string]*sourceMap{"snippet.js": sm}
	}
	sc := newScope(env)
	defer sc.revoke()
	con := console{maps: maps}
	inst, err := e.rt.Instantiate(ctx, e.snippet, runtime.InstanceConfig{
		Name:    "executeCode",
		Grants:  SnippetGrants(),
		Limits:  lim.runtime(),
		Account: lim.Account,
		Console: con.add,
		Bind:    map[string]any{bindings.Grant: sc},
	})
	if err != nil {
		return Result{}, fmt.Errorf("executeCode: %w", failure(err, nil, lim))
	}
	defer inst.Close()
	out, err := inst.Call(ctx, "run", js, sc.describe(), uint32(lim.Memory), uint32(lim.Stack), nowNanos())
	res := Result{Console: con.lines}
	if err != nil {
		return res, failure(err, maps, lim)
	}
	if err := lim.decodeResult(out, &res.Value); err != nil {
		return res, fmt.Errorf("executeCode: %w", err)
	}
	return res, nil
}

// scope is the bindings.Caller of one ExecuteCode: it resolves only the env's bindings and
// methods, and refuses everything once revoked.
type scope struct {
	bindings map[string]Binding
	methods  map[string][]string // sorted
	revoked  atomic.Bool
}

func newScope(env Env) *scope {
	s := &scope{bindings: env.Bindings, methods: make(map[string][]string, len(env.Bindings))}
	for name, b := range env.Bindings {
		m := slices.Clone(b.Methods())
		slices.Sort(m)
		s.methods[name] = slices.Compact(m)
	}
	return s
}

func (s *scope) revoke() { s.revoked.Store(true) }

// describe lists the bindings as the engine's `run` takes them, sorted by name.
func (s *scope) describe() []any {
	names := make([]string, 0, len(s.methods))
	for name := range s.methods {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]any, len(names))
	for i, name := range names {
		methods := make([]any, len(s.methods[name]))
		for j, m := range s.methods[name] {
			methods[j] = m
		}
		out[i] = map[string]any{"name": name, "methods": methods}
	}
	return out
}

// CallBinding implements bindings.Caller.
func (s *scope) CallBinding(ctx context.Context, name, method string, args []any) (any, error) {
	if s.revoked.Load() {
		return nil, fmt.Errorf("binding %s: %w: the executeCode call it was handed to has ended", name, ErrRevoked)
	}
	b, ok := s.bindings[name]
	if !ok {
		return nil, fmt.Errorf("no binding named %q in this snippet's env", name)
	}
	if _, ok := slices.BinarySearch(s.methods[name], method); !ok {
		return nil, fmt.Errorf("binding %s has no method %q", name, method)
	}
	return b.Call(ctx, method, args)
}

// console collects a snippet's console lines, up to the bounds.
type console struct {
	maps  map[string]*sourceMap
	lines []Line
	bytes int
	full  bool
}

func (c *console) add(l runtime.ConsoleLine) {
	if c.full {
		return
	}
	if len(c.lines) >= MaxConsoleLines-1 || c.bytes+len(l.Text) > MaxConsoleBytes {
		c.full = true
		c.lines = append(c.lines, Line{Level: "warn", Text: "(console output truncated)"})
		return
	}
	c.bytes += len(l.Text)
	// The engine has no other stream than atelier:host/log, so every line has a level.
	c.lines = append(c.lines, Line{Level: l.Level, Text: sourceText(l.Text, c.maps)})
}

var _ bindings.Caller = (*scope)(nil)
