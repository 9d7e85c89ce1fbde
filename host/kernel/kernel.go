// Package kernel is Atelier's core: it owns the gadgets, runs each as an actor (one live
// instance, calls one at a time in arrival order, a crashed instance replaced on the next call
// with its state intact), keeps their code and state in the store, and serves them over
// Cap'n Web.
//
// This first version is single-user: one set of gadgets per data file. Users, workspaces,
// agents and sharing build on it.
package kernel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"atelier/host/capability/clock"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	hostlog "atelier/host/capability/log"
	"atelier/host/runtime"
	"atelier/host/store"
)

// Config configures a Kernel.
type Config struct {
	// Runtime runs the components; it must provide the atelier:host interfaces (see
	// HostInterfaces).
	Runtime *runtime.Runtime
	// Store holds gadgets and their state.
	Store *store.DB
	// Events receives what gadgets publish.
	Events *events.Bus
	// Limits bound every gadget call and instance; zero fields take the runtime's defaults.
	Limits runtime.Limits
	// Logger receives gadget console lines and kernel events; nil uses slog.Default().
	Logger *slog.Logger
}

// Kernel owns the gadgets of one data file. It is safe for concurrent use.
type Kernel struct {
	cfg Config
	log *slog.Logger

	mu     sync.Mutex
	actors map[string]*actor
	closed bool
}

// New returns a kernel over cfg's runtime and store.
func New(cfg Config) *Kernel {
	l := cfg.Logger
	if l == nil {
		l = slog.Default()
	}
	return &Kernel{cfg: cfg, log: l, actors: map[string]*actor{}}
}

// HostInterfaces returns the atelier:host capabilities the kernel's runtime must provide, with
// events going to bus.
func HostInterfaces(bus *events.Bus) []runtime.HostInterface {
	return []runtime.HostInterface{
		hostlog.New(), clock.New(time.Now), kv.New(kv.Limits{}), events.New(bus, events.Limits{}),
	}
}

// ErrClosed is returned by a kernel after Close.
var ErrClosed = errors.New("kernel closed")

// Deploy compiles code, checks that grants cover every import it makes, stores it as the new
// current version of gadget name and replaces the live instance, if any. State is kept.
func (k *Kernel) Deploy(ctx context.Context, name string, code []byte, grants []string) (store.Gadget, error) {
	if err := validName(name); err != nil {
		return store.Gadget{}, err
	}
	comp, err := k.cfg.Runtime.Compile(ctx, code)
	if err != nil {
		return store.Gadget{}, fmt.Errorf("deploy gadget %s: %w", name, err)
	}
	defer comp.Close()
	if err := comp.Audit().Check(k.cfg.Runtime, grantSet(grants)); err != nil {
		return store.Gadget{}, fmt.Errorf("deploy gadget %s: %w", name, err)
	}
	g, err := k.cfg.Store.Deploy(ctx, name, code, grants)
	if err != nil {
		return store.Gadget{}, err
	}
	k.retire(name)
	return g, nil
}

// Rollback makes an earlier version of gadget name current and replaces its live instance.
func (k *Kernel) Rollback(ctx context.Context, name string, version int) (store.Gadget, error) {
	g, err := k.cfg.Store.Rollback(ctx, name, version)
	if err != nil {
		return store.Gadget{}, err
	}
	k.retire(name)
	return g, nil
}

// Delete stops gadget name and removes it with its state.
func (k *Kernel) Delete(ctx context.Context, name string) error {
	k.retire(name)
	return k.cfg.Store.Delete(ctx, name)
}

// Gadgets lists the gadgets.
func (k *Kernel) Gadgets(ctx context.Context) ([]store.Gadget, error) {
	return k.cfg.Store.Gadgets(ctx)
}

// Call calls export fn of gadget name with JSON-ish args, starting its actor if needed.
func (k *Kernel) Call(ctx context.Context, name, fn string, args []any) (any, error) {
	a, err := k.actor(ctx, name)
	if err != nil {
		return nil, err
	}
	res, err := a.slot.Call(ctx, fn, args...)
	if err != nil {
		return nil, fmt.Errorf("gadget %s: %s: %w", name, fn, err)
	}
	return res, nil
}

// Audit returns the imports and exports of gadget name's current version.
func (k *Kernel) Audit(ctx context.Context, name string) (*runtime.Audit, error) {
	a, err := k.actor(ctx, name)
	if err != nil {
		return nil, err
	}
	return a.comp.Audit(), nil
}

// Close stops every actor. Calls in flight finish first.
func (k *Kernel) Close() error {
	k.mu.Lock()
	k.closed = true
	actors := k.actors
	k.actors = map[string]*actor{}
	k.mu.Unlock()
	for _, a := range actors {
		a.close()
	}
	return nil
}

// actor is one gadget's live side: its compiled current version and the slot that holds its
// instance.
type actor struct {
	comp *runtime.Component
	slot *runtime.Slot
}

func (a *actor) close() {
	a.slot.Close()
	a.comp.Close()
}

// actor returns the live actor of gadget name, loading it from the store on first use.
func (k *Kernel) actor(ctx context.Context, name string) (*actor, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.closed {
		return nil, ErrClosed
	}
	if a := k.actors[name]; a != nil {
		return a, nil
	}
	g, code, err := k.cfg.Store.Gadget(ctx, name)
	if err != nil {
		return nil, err
	}
	comp, err := k.cfg.Runtime.Compile(ctx, code)
	if err != nil {
		return nil, fmt.Errorf("load gadget %s: %w", name, err)
	}
	a := &actor{comp: comp, slot: k.cfg.Runtime.NewSlot(comp, runtime.InstanceConfig{
		Name:   name,
		Grants: grantSet(g.Grants),
		Limits: k.cfg.Limits,
		Console: func(l runtime.ConsoleLine) {
			k.log.Info(l.Text, "gadget", l.Instance, "stream", l.Stream, "level", l.Level)
		},
		Bind: map[string]any{kv.Grant: stateStore{k.cfg.Store.State(name)}},
	})}
	k.actors[name] = a
	return a, nil
}

// retire stops the live actor of gadget name; the next call loads the current version.
func (k *Kernel) retire(name string) {
	k.mu.Lock()
	a := k.actors[name]
	delete(k.actors, name)
	k.mu.Unlock()
	if a != nil {
		a.close()
	}
}

// grantSet is what a gadget may import: the harmless WASI baseline plus its grants.
func grantSet(grants []string) []string {
	return append(runtime.WASIBaseline(), slices.Clone(grants)...)
}

// validName accepts gadget names that are safe in URLs, logs and file names.
func validName(name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("gadget name %q: want 1 to 64 characters", name)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return fmt.Errorf("gadget name %q: use lowercase letters, digits, '-' and '_'", name)
		}
	}
	return nil
}
