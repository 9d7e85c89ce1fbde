package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"atelier/host/runtime"
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
		{name: "grow_past_cap", limits: runtime.Limits{MaxMemory: 1 << 20}, fn: "grow", args: []any{64}, want: runtime.ErrTrap},
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
			if tt.want == runtime.ErrTrap && len(te.Backtrace) == 0 {
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
