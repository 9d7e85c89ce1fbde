package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/host/runtime"
	"atelier/sdk/guesttest"
)

// healthy checks that an instance still answers.
func healthy(t *testing.T, inst *runtime.Instance) {
	t.Helper()
	if got, err := inst.Call(context.Background(), "add", 20, 22); err != nil || got != uint32(42) {
		t.Fatalf("bystander instance: %v, %v", got, err)
	}
}

func TestRefuseUngrantedImports(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	ctx := context.Background()
	bystander := f.instance(t, runtime.InstanceConfig{})
	sockets := compileFile(t, f.rt, "testdata/evil-sockets.wat")
	vendor := compileFile(t, f.rt, "testdata/evil-vendor.wat")
	tests := []struct {
		name   string
		comp   *runtime.Component
		grants []string
		want   any // *runtime.UngrantedImportError or *runtime.UnprovidedImportError
		text   string
	}{
		{"sockets_with_baseline", sockets, runtime.WASIBaseline(),
			&runtime.UngrantedImportError{Import: "wasi:sockets/tcp@0.2.0", Grant: "wasi:sockets/tcp"},
			`import "wasi:sockets/tcp@0.2.0" is not granted (grant "wasi:sockets/tcp" would allow it)`},
		{"vendor_no_grants", vendor, nil,
			&runtime.UngrantedImportError{Import: "acme:evil/exfil", Grant: "acme:evil/exfil"}, `grant "acme:evil/exfil"`},
		{"vendor_everything_else", vendor, append(runtime.WASIBaseline(), "atelier:host/kv", "test:echo/host"),
			&runtime.UngrantedImportError{Import: "acme:evil/exfil", Grant: "acme:evil/exfil"}, "not granted"},
		{"vendor_granted_but_unprovided", vendor, []string{"acme:evil/exfil"},
			&runtime.UnprovidedImportError{Import: "acme:evil/exfil"}, "nothing in this host provides it"},
		{"echo_without_grant", f.echo, runtime.WASIBaseline(),
			&runtime.UngrantedImportError{Import: "test:echo/host", Grant: "test:echo/host"}, "not granted"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.rt.Instantiate(ctx, tt.comp, runtime.InstanceConfig{Grants: tt.grants})
			if err == nil || !strings.Contains(err.Error(), tt.text) {
				t.Fatalf("got %v, want an error containing %q", err, tt.text)
			}
			switch want := tt.want.(type) {
			case *runtime.UngrantedImportError:
				var got *runtime.UngrantedImportError
				if !errors.As(err, &got) || *got != *want {
					t.Errorf("got %#v, want %#v", got, want)
				}
			case *runtime.UnprovidedImportError:
				var got *runtime.UnprovidedImportError
				if !errors.As(err, &got) || *got != *want {
					t.Errorf("got %#v, want %#v", got, want)
				}
			}
			// The audit is the same check, without instantiating.
			if err := tt.comp.Audit().Check(f.rt, tt.grants); err == nil {
				t.Error("Audit.Check accepted the imports")
			}
			healthy(t, bystander)
		})
	}
}

// TestRetire runs misbehaving calls: each retires its instance with the right error, a
// bystander instance keeps working, and a Slot gets a fresh instance for the next call.
func TestRetire(t *testing.T) {
	f := newFixture(t, runtime.Config{Fuel: true})
	tests := []struct {
		name   string
		limits runtime.Limits
		ctx    func() (context.Context, context.CancelFunc)
		fn     string
		args   []any
		want   error
	}{
		{name: "unreachable", fn: "boom", want: runtime.ErrTrap},
		{name: "infinite_loop", limits: runtime.Limits{Timeout: 50 * time.Millisecond}, fn: "spin", want: runtime.ErrDeadline},
		{name: "context_deadline", fn: "spin", want: runtime.ErrDeadline,
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 30*time.Millisecond)
			}},
		{name: "out_of_fuel", limits: runtime.Limits{Fuel: 100_000}, fn: "spin", want: runtime.ErrFuel},
		{name: "grow_past_cap", limits: runtime.Limits{MaxMemory: 1 << 20}, fn: "grow", args: []any{64}, want: runtime.ErrMemory},
		{name: "grow_one_page_past_cap", limits: runtime.Limits{MaxMemory: 1 << 20}, fn: "grow", args: []any{16}, want: runtime.ErrMemory},
		{name: "stack_overflow", fn: "deep", args: []any{100_000_000}, want: runtime.ErrTrap},
	}
	bystander := f.instance(t, runtime.InstanceConfig{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if tt.ctx != nil {
				ctx, cancel = tt.ctx()
			}
			defer cancel()
			slot := f.rt.NewSlot(f.echo, runtime.InstanceConfig{Grants: echoGrants, Limits: tt.limits})
			defer slot.Close()
			if _, err := slot.Call(context.Background(), "add", 1, 2); err != nil {
				t.Fatal(err)
			}
			_, err := slot.Call(ctx, tt.fn, tt.args...)
			var te *runtime.TrapError
			if !errors.As(err, &te) || !errors.Is(err, tt.want) {
				t.Fatalf("got %v, want a *TrapError matching %v", err, tt.want)
			}
			if (tt.want == runtime.ErrTrap || tt.want == runtime.ErrMemory) && len(te.Backtrace) == 0 {
				t.Errorf("trap without backtrace: %v", err)
			}
			healthy(t, bystander)
			if got, err := slot.Call(context.Background(), "add", 2, 2); err != nil || got != uint32(4) {
				t.Errorf("slot after %s: %v, %v", tt.name, got, err)
			}
		})
	}
}

func TestRetiredInstanceRefusesCalls(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	inst := f.instance(t, runtime.InstanceConfig{})
	_, trap := inst.Call(context.Background(), "boom")
	if !errors.Is(inst.Retired(), runtime.ErrTrap) {
		t.Fatalf("Retired() = %v after %v", inst.Retired(), trap)
	}
	_, err := inst.Call(context.Background(), "add", 1, 1)
	if !errors.Is(err, runtime.ErrRetired) || !errors.Is(err, runtime.ErrTrap) {
		t.Errorf("call on retired instance: %v", err)
	}
	inst.Close()
	if _, err := inst.Call(context.Background(), "add", 1, 1); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("call on closed instance: %v", err)
	}
}

func TestMemoryCapAtInstantiation(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	big := compileFile(t, f.rt, "testdata/bigmem.wat")
	_, err := f.rt.Instantiate(context.Background(), big, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 4 << 20}})
	if !errors.Is(err, runtime.ErrMemory) {
		t.Fatalf("got %v, want ErrMemory", err)
	}
	inst, err := f.rt.Instantiate(context.Background(), big, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 16 << 20}})
	if err != nil {
		t.Fatalf("under a larger cap: %v", err)
	}
	inst.Close()
}

// TestMemoryCapDuringCalls pins what a refused memory.grow means (echo.wat's memory starts at
// one 64 KiB page; the cap is 16 pages unless said otherwise): only a call that fails after
// the cap refused it memory is ErrMemory; a guest that copes with the refusal goes on, and
// the refusal does not taint later calls.
func TestMemoryCapDuringCalls(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	ctx := context.Background()
	const page = 64 << 10
	type step struct {
		fn   string
		args []any
		want any   // the result, when err is nil
		err  error // the error kind, else
	}
	tests := []struct {
		name  string
		cap   int64
		steps []step
	}{
		{"refusal_handled_by_guest", 16 * page, []step{
			{fn: "try-grow", args: []any{64}, want: int32(-1)},
			{fn: "add", args: []any{1, 2}, want: uint32(3)},
			{fn: "try-grow", args: []any{1}, want: int32(1)}, // the memory is still usable
		}},
		{"grow_up_to_the_cap", 16 * page, []step{
			{fn: "grow", args: []any{14}, want: uint32(15)},
			{fn: "grow", args: []any{1}, want: uint32(16)}, // exactly the cap
			{fn: "try-grow", args: []any{1}, want: int32(-1)},
			{fn: "grow", args: []any{0}, want: uint32(16)},
		}},
		{"cap_between_pages", 16*page + 1000, []step{
			{fn: "grow", args: []any{15}, want: uint32(16)},
			{fn: "try-grow", args: []any{1}, want: int32(-1)},
		}},
		{"refusal_then_trap_in_a_later_call", 16 * page, []step{
			{fn: "try-grow", args: []any{64}, want: int32(-1)},
			{fn: "boom", err: runtime.ErrTrap},
		}},
		{"refusal_then_trap_in_the_same_call", 16 * page, []step{
			{fn: "grow", args: []any{1}, want: uint32(2)},
			{fn: "grow", args: []any{64}, err: runtime.ErrMemory},
		}},
		{"huge_growth", 16 * page, []step{
			{fn: "try-grow", args: []any{65535}, want: int32(-1)},
			{fn: "grow", args: []any{65535}, err: runtime.ErrMemory},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := f.instance(t, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: memoryBudget(tt.cap)}})
			for i, st := range tt.steps {
				got, err := inst.Call(ctx, st.fn, st.args...)
				if st.err == nil {
					if err != nil || got != st.want {
						t.Fatalf("step %d %s%v = %#v, %v; want %#v", i, st.fn, st.args, got, err, st.want)
					}
					continue
				}
				var te *runtime.TrapError
				if !errors.As(err, &te) || !errors.Is(err, st.err) {
					t.Fatalf("step %d %s%v: got %v, want a *TrapError matching %v", i, st.fn, st.args, err, st.err)
				}
				if other := otherKind(st.err); errors.Is(err, other) {
					t.Fatalf("step %d: %v also matches %v", i, err, other)
				}
				if !errors.Is(inst.Retired(), st.err) {
					t.Fatalf("step %d: Retired() = %v", i, inst.Retired())
				}
			}
		})
	}
}

// otherKind returns the kind a memory error must not be confused with, and vice versa.
func otherKind(kind error) error {
	if kind == runtime.ErrMemory {
		return runtime.ErrTrap
	}
	return runtime.ErrMemory
}

// memoryModes are the ways an instance's memories can be made: by Atelier's memory creator
// (the default, recycling freed memories, or with KeepMemories < 0 always fresh ones) or,
// silent about refused growth, by Wasmtime itself (Pooling, MemoryImages).
var memoryModes = []struct {
	name   string
	cfg    runtime.Config
	silent bool
}{
	{"memory_creator", runtime.Config{}, false},
	{"memory_creator_no_reuse", runtime.Config{KeepMemories: -1}, false},
	{"pooling", runtime.Config{Pooling: &runtime.Pooling{Instances: 4, MaxMemory: 16 << 20}}, true},
	{"memory_images", runtime.Config{MemoryImages: true}, true},
}

// TestMemoryCapSilent pins the documented limit of the configurations without the memory
// creator (Pooling, MemoryImages): Wasmtime's store limiter refuses a growth during a call
// without telling the host, so the guest's trap after it is an ErrTrap. The cap is still
// enforced, the instance is still retired, a guest that copes with the refusal goes on, and
// a memory minimum above the cap is still ErrMemory at instantiation.
func TestMemoryCapSilent(t *testing.T) {
	for _, c := range memoryModes {
		if !c.silent {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, c.cfg)
			ctx := context.Background()
			inst := f.instance(t, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 1 << 20}})
			if got, err := inst.Call(ctx, "try-grow", 64); err != nil || got != int32(-1) {
				t.Fatalf("try-grow past the cap = %v, %v; want -1", got, err)
			}
			if got, err := inst.Call(ctx, "grow", 15); err != nil || got != uint32(16) {
				t.Fatalf("grow up to the cap = %v, %v; want 16", got, err)
			}
			_, err := inst.Call(ctx, "grow", 1)
			var te *runtime.TrapError
			if !errors.As(err, &te) || !errors.Is(err, runtime.ErrTrap) || errors.Is(err, runtime.ErrMemory) {
				t.Fatalf("grow past the cap: %v, want ErrTrap (the documented limit)", err)
			}
			if inst.Retired() == nil {
				t.Fatal("instance not retired")
			}
			big := compileFile(t, f.rt, "testdata/bigmem.wat")
			if _, err := f.rt.Instantiate(ctx, big, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 4 << 20}}); !errors.Is(err, runtime.ErrMemory) {
				t.Fatalf("bigmem under a 4 MiB cap: %v, want ErrMemory", err)
			}
		})
	}
}

// TestMemoryBounds checks that linear memory ends where the guest's size says, before and
// after growth and for every kind of memory: the last byte is usable, the next one traps (the
// memory creator's reservation is inaccessible beyond the size), and the host is intact.
func TestMemoryBounds(t *testing.T) {
	for _, cfg := range memoryModes {
		t.Run(cfg.name, func(t *testing.T) {
			f := newFixture(t, cfg.cfg)
			ctx := context.Background()
			bystander := f.instance(t, runtime.InstanceConfig{})
			for _, pages := range []uint32{1, 3, 16} {
				inst := f.instance(t, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: memoryBudget(16 << 16)}})
				if pages > 1 {
					if _, err := inst.Call(ctx, "grow", pages-1); err != nil {
						t.Fatal(err)
					}
				}
				end := pages << 16
				if got, err := inst.Call(ctx, "peek", end-1); err != nil || got != uint8(0) {
					t.Fatalf("fresh byte %d = %v, %v; want 0", end-1, got, err)
				}
				for _, addr := range []uint32{0, end / 2, end - 1} {
					if _, err := inst.Call(ctx, "poke", addr, 7); err != nil {
						t.Fatalf("poke(%d) in %d pages: %v", addr, pages, err)
					}
					if got, err := inst.Call(ctx, "peek", addr); err != nil || got != uint8(7) {
						t.Fatalf("peek(%d) in %d pages = %v, %v", addr, pages, got, err)
					}
				}
				_, err := inst.Call(ctx, "peek", end)
				if !errors.Is(err, runtime.ErrTrap) || !strings.Contains(err.Error(), "out of bounds") {
					t.Fatalf("peek(%d) past %d pages: %v, want an out-of-bounds trap", end, pages, err)
				}
				healthy(t, bystander)
			}
		})
	}
}

// TestGoGuestMemoryCap runs a real Go guest (tests/runtime/guests/stdio, whose say(line)
// copies the line into the Go heap and prints it) under tight caps: the Go runtime's heap
// growth is refused and it gives up (a trap), which must surface as ErrMemory both while the
// runtime initialises (instantiation) and during a call. The same calls succeed under the
// default cap.
func TestGoGuestMemoryCap(t *testing.T) {
	wasm := guesttest.Bytes(t, "tests/runtime/guests/stdio")
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	comp, err := rt.Compile(ctx, wasm)
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	instantiate := func(maxMemory int64) (*runtime.Instance, error) {
		return rt.Instantiate(ctx, comp, runtime.InstanceConfig{Grants: runtime.WASIBaseline(), Limits: runtime.Limits{MaxMemory: maxMemory}})
	}
	// The guest's memory starts at 2.5 MiB and its runtime grows it while initialising.
	if _, err := instantiate(4 << 20); !errors.Is(err, runtime.ErrMemory) || errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("instantiate under a 4 MiB cap: %v, want ErrMemory", err)
	}
	sizes := []int{1 << 10, 1 << 20, 2 << 20, 3 << 20}
	unlimited, err := instantiate(0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlimited.Close()
	for _, n := range sizes {
		if _, err := unlimited.Call(ctx, "say", strings.Repeat("x", n)); err != nil {
			t.Fatalf("say(%d bytes) under the default cap: %v", n, err)
		}
	}
	inst, err := instantiate(16 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	for _, n := range sizes {
		_, err = inst.Call(ctx, "say", strings.Repeat("x", n))
		if err != nil {
			break
		}
	}
	var te *runtime.TrapError
	if !errors.As(err, &te) || !errors.Is(err, runtime.ErrMemory) {
		t.Fatalf("say under a 16 MiB cap: %v, want a *TrapError matching ErrMemory", err)
	}
	if !errors.Is(inst.Retired(), runtime.ErrMemory) {
		t.Fatalf("Retired() = %v", inst.Retired())
	}
}

// TestMemoryCapPerInstance instantiates and calls instances with different caps from many
// goroutines at once: each memory must get the cap of its own instance (the memory creator
// attributes memories to stores per thread) and a refusal in one must not mark another.
func TestMemoryCapPerInstance(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	ctx := context.Background()
	const small, large = 1 << 20, 4 << 20 // 16 and 64 pages
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				limit := int64(small)
				if (g+i)%2 == 0 {
					limit = large
				}
				inst, err := f.rt.Instantiate(ctx, f.echo, runtime.InstanceConfig{Grants: echoGrants, Limits: runtime.Limits{MaxMemory: limit}})
				if err != nil {
					errs <- err
					return
				}
				got, err := inst.Call(ctx, "try-grow", 32) // to 33 pages: only under the large cap
				want := int32(-1)
				if limit == large {
					want = 1
				}
				if err == nil && got != want {
					err = fmt.Errorf("cap %d: try-grow(32) = %v, want %d", limit, got, want)
				}
				if err == nil {
					_, err = inst.Call(ctx, "boom")
					if !errors.Is(err, runtime.ErrTrap) || errors.Is(err, runtime.ErrMemory) {
						err = fmt.Errorf("cap %d: boom after try-grow: %v, want ErrTrap only", limit, err)
					} else {
						err = nil
					}
				}
				inst.Close()
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A host function gets the call's deadline in its context, and a call whose deadline passed
// while a host function ran ends there with ErrDeadline (the guest does not go on with what
// the host function made of it).
func TestAHostFunctionEndsWithItsCallsDeadline(t *testing.T) {
	h := &echoHost{last: make(map[string]any)}
	hi := h.iface()
	seen := make(chan error, 1)
	for i := range hi.Funcs {
		if hi.Funcs[i].Name == "echo-u32" {
			hi.Funcs[i].Func = func(ctx context.Context, _ *runtime.HostCall, args []any) (any, error) {
				select {
				case <-ctx.Done():
					seen <- ctx.Err()
				case <-time.After(20 * time.Second):
					seen <- nil
				}
				return args[0], nil // shrugs the end of its context off
			}
		}
	}
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: []runtime.HostInterface{hi}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	comp := compileFile(t, rt, "testdata/echo.wat")
	inst, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Grants: echoGrants, Limits: runtime.Limits{Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	if _, err := inst.Call(ctx, "echo-u32", uint32(7)); !errors.Is(err, runtime.ErrDeadline) {
		t.Fatalf("a call whose host function outlived the deadline: %v, want ErrDeadline", err)
	}
	if err := <-seen; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the host function's context ended with %v, want the call's deadline", err)
	}
	if _, err := inst.Call(ctx, "echo-u32", uint32(7)); !errors.Is(err, runtime.ErrRetired) {
		t.Fatalf("the call after: %v, want ErrRetired", err)
	}
}
