package runtime_test

import (
	"context"
	"sync"
	"testing"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/runtime"
)

// harness is one gadget's world as the kernel would give it: a kv store, an event bus and a
// console, which outlive the instances that use them.
type harness struct {
	store *kv.Memory
	bus   *events.Bus

	mu      sync.Mutex // guards console and events
	console []runtime.ConsoleLine
	events  []events.Event
}

func newHarness(t *testing.T) *harness {
	h := &harness{store: kv.NewMemory(0), bus: events.NewBus()}
	t.Cleanup(h.bus.Subscribe(func(ev events.Event) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.events = append(h.events, ev)
	}))
	return h
}

// config returns an instance configuration with the WASI baseline and grants.
func (h *harness) config(name string, grants ...string) runtime.InstanceConfig {
	return runtime.InstanceConfig{
		Name:   name,
		Grants: append(runtime.WASIBaseline(), grants...),
		Console: func(l runtime.ConsoleLine) {
			h.mu.Lock()
			defer h.mu.Unlock()
			h.console = append(h.console, l)
		},
		Bind: map[string]any{kv.Grant: h.store, events.Grant: h.bus},
	}
}

// instantiate creates an instance of the guest built from dir, closed when t ends.
func (h *harness) instantiate(t *testing.T, dir, name string, grants ...string) *runtime.Instance {
	t.Helper()
	inst, err := sharedRuntime(t).Instantiate(context.Background(), component(t, dir), h.config(name, grants...))
	if err != nil {
		t.Fatalf("instantiate %s: %v", dir, err)
	}
	t.Cleanup(func() { inst.Close() })
	return inst
}

func (h *harness) lines() []runtime.ConsoleLine {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]runtime.ConsoleLine(nil), h.console...)
}

func (h *harness) published() []events.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]events.Event(nil), h.events...)
}

// call calls fn on inst and fails the test on error.
func call(t *testing.T, inst *runtime.Instance, fn string, args ...any) any {
	t.Helper()
	res, err := inst.Call(context.Background(), fn, args...)
	if err != nil {
		t.Fatalf("%s%v: %v", fn, args, err)
	}
	return res
}
