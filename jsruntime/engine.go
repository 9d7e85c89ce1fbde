package jsruntime

import (
	"context"
	_ "embed" // the engine components
	"encoding/json"
	"fmt"
	"time"

	"atelier/host/capability/bindings"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

var (
	//go:embed engine/snippet.wasm
	snippetWasm []byte
	//go:embed engine/gadget.wasm
	gadgetWasm []byte
)

// SnippetGrants are the grants every executeCode instance gets: console lines and binding calls.
func SnippetGrants() []string { return []string{log.Grant, bindings.Grant} }

// GadgetGrants are the grants a JS gadget needs: the gadget engine imports all of these, so a
// JS gadget whose owner did not grant one of them is refused before it starts, as a component
// gadget would be.
func GadgetGrants() []string {
	return []string{log.Grant, kv.Grant, events.Grant, bindings.Grant}
}

// Engine runs JavaScript on a runtime: it holds the two compiled engine components. It is safe
// for concurrent use; every ExecuteCode and every Gadget has instances of its own.
type Engine struct {
	rt              *runtime.Runtime
	snippet, gadget *runtime.Component
}

// New compiles the embedded engine components on rt (once per process: rt's artifact cache
// makes later starts cheap). rt must provide atelier:host/log, kv, events and bindings.
func New(ctx context.Context, rt *runtime.Runtime) (*Engine, error) {
	e := &Engine{rt: rt}
	var err error
	if e.snippet, err = compile(ctx, rt, "snippet", snippetWasm, SnippetGrants()); err != nil {
		return nil, err
	}
	if e.gadget, err = compile(ctx, rt, "gadget", gadgetWasm, GadgetGrants()); err != nil {
		e.snippet.Close()
		return nil, err
	}
	return e, nil
}

// compile compiles one engine component and checks that rt provides everything it imports.
func compile(ctx context.Context, rt *runtime.Runtime, name string, wasm []byte, grants []string) (*runtime.Component, error) {
	c, err := rt.Compile(ctx, wasm)
	if err != nil {
		return nil, fmt.Errorf("jsruntime: %s engine: %w", name, err)
	}
	if err := c.Audit().Check(rt, grants); err != nil {
		c.Close()
		return nil, fmt.Errorf("jsruntime: %s engine: the runtime cannot run it: %w", name, err)
	}
	return c, nil
}

// Close releases the compiled engines; close every Gadget first.
func (e *Engine) Close() {
	e.snippet.Close()
	e.gadget.Close()
}

// Limits bound one script. Zero fields take the defaults.
type Limits struct {
	// Timeout bounds each engine call (a snippet's run, a gadget's load or method call);
	// default DefaultTimeout. A script still running then is stopped (ErrStopped).
	Timeout time.Duration
	// Memory caps the JavaScript heap in bytes (default DefaultMemory): past it, allocation
	// throws a catchable InternalError ("out of memory"). The instance's linear memory is
	// capped a little above it, which stops the engine if the heap limit is ever bypassed.
	Memory int64
	// Stack caps the JavaScript stack in bytes (default DefaultStack, at most MaxStack): deeper
	// recursion throws a catchable InternalError.
	Stack int
	// Account, when set, shares memory out between the instance and others
	// (runtime.InstanceConfig.Account): it may lower the instance's memory cap call by call,
	// or refuse a call.
	Account runtime.MemoryAccount
	// MaxResult bounds the JSON text of what a script returns (a snippet's value, a gadget
	// method's result), default DefaultMaxResult: a larger one is refused with a
	// *wit.SizeError before it is decoded.
	MaxResult int64
}

// Defaults and maxima of Limits.
const (
	DefaultTimeout = 5 * time.Second
	DefaultMemory  = 64 << 20
	MaxMemory      = 1 << 30
	DefaultStack   = 512 << 10
	// MaxStack is three quarters of the engine's 1 MiB wasm stack (see engine/engine.c).
	MaxStack = 768 << 10
	// DefaultMaxResult is the runtime's default bound of a result.
	DefaultMaxResult = runtime.DefaultMaxResult
)

func (l Limits) withDefaults() (Limits, error) {
	switch {
	case l.Timeout < 0:
		return l, fmt.Errorf("limits: negative timeout %v", l.Timeout)
	case l.Memory < 0 || l.Memory > MaxMemory:
		return l, fmt.Errorf("limits: memory %d is outside 0..%d", l.Memory, MaxMemory)
	case l.Stack < 0 || l.Stack > MaxStack:
		return l, fmt.Errorf("limits: stack %d is outside 0..%d", l.Stack, MaxStack)
	}
	if l.Timeout == 0 {
		l.Timeout = DefaultTimeout
	}
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Stack == 0 {
		l.Stack = DefaultStack
	}
	if l.MaxResult <= 0 {
		l.MaxResult = DefaultMaxResult
	}
	return l, nil
}

// maxMemory is the cap of the instance's linear memory: the heap, its fragmentation, the
// 1 MiB stack and the engine's own data.
func (l Limits) maxMemory() int64 { return l.Memory + l.Memory/2 + 8<<20 }

// runtime gives the engine's instance these limits. Its result is the JSON text as a WIT
// string, whose estimate counts the quotes in it escaped: twice MaxResult bounds it, and
// decodeResult checks the text itself.
func (l Limits) runtime() runtime.Limits {
	return runtime.Limits{Timeout: l.Timeout, MaxMemory: l.maxMemory(), MaxResult: 2*l.MaxResult + 2}
}

// decodeResult decodes the JSON text that an engine call returned into v, refusing a text
// longer than MaxResult before decoding it.
func (l Limits) decodeResult(out any, v *any) error {
	text, _ := out.(string)
	if int64(len(text)) > l.MaxResult {
		return &wit.SizeError{Size: int64(len(text)), Limit: l.MaxResult}
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return fmt.Errorf("the engine returned malformed JSON: %w", err)
	}
	return nil
}

// nowNanos is the time the engine's clock (Date.now) shows during one call: the clock does
// not advance while JavaScript runs, which also denies scripts a timer for side channels.
func nowNanos() uint64 { return uint64(time.Now().UnixNano()) }
