package jsruntime

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"

	"atelier/host/runtime"
)

// GadgetConfig describes a JS gadget: its files and what its instances are given.
type GadgetConfig struct {
	// Name identifies the gadget's instances (console lines, published events).
	Name string
	// Files are the gadget's source files by name: "server.js" (or "server.ts") exports
	// `class Gadget` and may import the other .js and .ts files by relative name ("./util.js"
	// finds util.js or util.ts). Files with other extensions are not loaded.
	Files map[string]string
	// Grants are the gadget's grants; the engine imports everything in GadgetGrants, so all of
	// it must be granted.
	Grants []string
	// Bind hands the instances their capabilities, as for a component gadget: kv.Grant -> the
	// gadget's kv.Store, events.Grant -> an events.Publisher, bindings.Grant -> a
	// bindings.Caller.
	Bind map[string]any
	// Console receives the gadget's console lines (Stream "log").
	Console func(runtime.ConsoleLine)
	// Limits bound every load and method call.
	Limits Limits
}

// Gadget is a JS gadget: one live engine instance that has loaded the gadget's files and
// constructed its class, replaced by a fresh one (its state is in kv) when a call stops it.
// Calls are serialised; it is safe for concurrent use.
type Gadget struct {
	e     *Engine
	cfg   GadgetConfig
	files []any                 // the engine's list<file>
	maps  map[string]*sourceMap // of the stripped TypeScript files, by loaded name

	mu      sync.Mutex // guards everything below, and serialises calls
	inst    *runtime.Instance
	methods []string // sorted; nil until the first load
	closed  bool
}

// NewGadget prepares a JS gadget: TypeScript files are stripped (a *SyntaxError names the
// file, line and column of a problem) and the files are checked. Nothing runs until the first
// Call or Methods.
func (e *Engine) NewGadget(cfg GadgetConfig) (*Gadget, error) {
	lim, err := cfg.Limits.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("gadget %s: %w", cfg.Name, err)
	}
	cfg.Limits = lim
	g := &Gadget{e: e, cfg: cfg, maps: make(map[string]*sourceMap)}
	names := make([]string, 0, len(cfg.Files))
	for name := range cfg.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	loaded := make(map[string]string) // loaded name -> file name
	for _, name := range names {
		js := jsName(name)
		if !strings.HasSuffix(js, ".js") {
			continue
		}
		if other, dup := loaded[js]; dup {
			return nil, fmt.Errorf("gadget %s: files %s and %s would both load as %s", cfg.Name, other, name, js)
		}
		loaded[js] = name
		code, sm, err := strip(name, cfg.Files[name])
		if err != nil {
			return nil, fmt.Errorf("gadget %s: %w", cfg.Name, err)
		}
		if sm != nil {
			g.maps[js] = sm
		}
		g.files = append(g.files, map[string]any{"name": js, "source": code})
	}
	if _, ok := loaded["server.js"]; !ok {
		return nil, fmt.Errorf("gadget %s: no server.js (or server.ts) among its files", cfg.Name)
	}
	return g, nil
}

// Methods returns the gadget's public methods (loading it first if needed): the functions of
// its class's prototype chain except `constructor` and names starting with "_", sorted.
func (g *Gadget) Methods(ctx context.Context) ([]string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.instance(ctx); err != nil {
		return nil, err
	}
	return slices.Clone(g.methods), nil
}

// Call calls a public method with JSON-ish arguments and returns the JSON-decoded value its
// result resolves to. What JavaScript throws is a *Error (the instance lives on); a call
// stopped by a limit returns an error matching ErrStopped, and the next call runs on a fresh
// instance.
func (g *Gadget) Call(ctx context.Context, method string, args ...any) (any, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	inst, err := g.instance(ctx)
	if err != nil {
		return nil, err
	}
	if _, ok := slices.BinarySearch(g.methods, method); !ok {
		return nil, fmt.Errorf("gadget %s: no method %q (it has %v)", g.cfg.Name, method, g.methods)
	}
	if args == nil {
		args = []any{}
	}
	text, err := json.Marshal(args)
	if err != nil {
		return nil, fmt.Errorf("gadget %s: call %s: arguments: %w", g.cfg.Name, method, err)
	}
	out, err := inst.Call(ctx, "call", method, string(text), nowNanos())
	if err != nil {
		return nil, fmt.Errorf("gadget %s: call %s: %w", g.cfg.Name, method, failure(err, g.maps, g.cfg.Limits))
	}
	var v any
	if err := g.cfg.Limits.decodeResult(out, &v); err != nil {
		return nil, fmt.Errorf("gadget %s: call %s: %w", g.cfg.Name, method, err)
	}
	return v, nil
}

// instance returns the live instance, creating and loading one when there is none or the
// last one was stopped. g.mu is held.
func (g *Gadget) instance(ctx context.Context) (*runtime.Instance, error) {
	if g.closed {
		return nil, fmt.Errorf("gadget %s: %w", g.cfg.Name, runtime.ErrClosed)
	}
	if g.inst != nil && g.inst.Retired() == nil {
		return g.inst, nil
	}
	if g.inst != nil {
		_ = g.inst.Close()
		g.inst = nil
	}
	inst, err := g.e.rt.Instantiate(ctx, g.e.gadget, runtime.InstanceConfig{
		Name:    g.cfg.Name,
		Grants:  g.cfg.Grants,
		Limits:  g.cfg.Limits.runtime(),
		Account: g.cfg.Limits.Account,
		Console: g.console,
		Bind:    g.cfg.Bind,
	})
	if err != nil {
		return nil, fmt.Errorf("gadget %s: %w", g.cfg.Name, failure(err, nil, g.cfg.Limits))
	}
	lim := g.cfg.Limits
	out, err := inst.Call(ctx, "load", g.files, uint32(lim.Memory), uint32(lim.Stack), nowNanos())
	if err != nil {
		_ = inst.Close()
		return nil, fmt.Errorf("gadget %s: load: %w", g.cfg.Name, failure(err, g.maps, lim))
	}
	list, _ := out.([]any)
	methods := make([]string, 0, len(list))
	for _, m := range list {
		s, ok := m.(string)
		if !ok {
			_ = inst.Close()
			return nil, fmt.Errorf("gadget %s: load: the engine returned %T for a method name", g.cfg.Name, m)
		}
		methods = append(methods, s)
	}
	slices.Sort(methods)
	g.inst, g.methods = inst, methods
	return inst, nil
}

// console hands a console line to GadgetConfig.Console, with positions in the user's source.
func (g *Gadget) console(l runtime.ConsoleLine) {
	if g.cfg.Console != nil {
		l.Text = sourceText(l.Text, g.maps)
		g.cfg.Console(l)
	}
}

// Trim trims the live engine instance, if any (runtime.Instance.Trim: the pages it would read
// the same from fresh memory go back to the kernel), and returns the bytes given back. It
// waits for a call in flight.
func (g *Gadget) Trim() int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.inst == nil {
		return 0
	}
	return g.inst.Trim()
}

// Close releases the live instance. Idempotent.
func (g *Gadget) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	if g.inst == nil {
		return nil
	}
	err := g.inst.Close()
	g.inst = nil
	return err
}
