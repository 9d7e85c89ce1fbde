package bindgen_test

import (
	"context"
	"encoding/binary"
	"os"
	"strings"
	"sync"
	"testing"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/sdk/guesttest"
)

// TestCounterGen runs gadgets/counter-gen, written against generated bindings of the project's
// atelier:gadget world, with the kernel's real capabilities: its kv state and console log.
func TestCounterGen(t *testing.T) {
	src, err := os.ReadFile(guesttest.Path(t, "gadgets/counter-gen"))
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus()
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: kernel.HostInterfaces(bus)})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	comp, err := rt.Compile(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	store := kv.NewMemory(0)
	var mu sync.Mutex
	var console []string
	inst, err := rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{
		Grants: append(runtime.WASIBaseline(), kv.Grant, log.Grant),
		Bind:   map[string]any{kv.Grant: store, events.Grant: bus},
		Console: func(l runtime.ConsoleLine) {
			mu.Lock()
			console = append(console, l.Text)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	ctx := context.Background()
	for _, step := range []struct {
		fn   string
		args []any
		want any
	}{
		{"increment", []any{2}, uint64(2)},
		{"increment", []any{40}, uint64(42)},
		{"get", nil, uint64(42)},
		{"echo", []any{"héllo"}, "héllo"},
		{"reset", nil, nil},
		{"get", nil, uint64(0)},
	} {
		got, err := inst.Call(ctx, step.fn, step.args...)
		if err != nil || got != step.want {
			t.Fatalf("%s%v = %#v, %v; want %#v", step.fn, step.args, got, err, step.want)
		}
	}
	if _, err := inst.Call(ctx, "increment", 7); err != nil {
		t.Fatal(err)
	}
	v, ok, err := store.Get(ctx, "count")
	if err != nil || !ok || binary.LittleEndian.Uint64(v) != 7 {
		t.Errorf("kv count = %v, %v, %v; want 7", v, ok, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if joined := strings.Join(console, "\n"); !strings.Contains(joined, "increment by 40 -> 42") || !strings.Contains(joined, "reset") {
		t.Errorf("console = %q, want the gadget's log lines", joined)
	}
}
