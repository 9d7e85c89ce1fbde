// Package runtimebench runs the standard host/runtime benchmark operations on any component,
// twice: through host/runtime ("runtime") and through the bare C API mirror with no runtime
// layer ("bare"), so that one `go test -bench` run gives the runtime's overhead as a ratio.
// Sub-benchmark names pair up: Runtime/instantiate with Bare/instantiate, and so on.
//
// Operations: compile, cached_load, instantiate, noop_call, echo_string_1KiB,
// record_roundtrip. An operation whose function is not named in the Suite is skipped.
package runtimebench

import (
	"context"
	"strings"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
)

// Suite names a component and the exports the call benchmarks use.
type Suite struct {
	// Wasm is the component, binary or WAT.
	Wasm []byte
	// Grants and Interfaces are what the component needs to instantiate under host/runtime
	// (the bare side defines WASI and stubs every other import with a trap).
	Grants     []string
	Interfaces []runtime.HostInterface
	// Noop is a top-level export `func()`.
	Noop string
	// EchoString is a top-level export `func(s: string) -> string`.
	EchoString string
	// Record is a top-level export taking one record and returning a record, called with
	// RecordArg (JSON-ish) through the runtime; the bare side gets its canonical form
	// (wit.Flat), made once.
	Record    string
	RecordArg any
}

// Run runs both sides as sub-benchmarks "Runtime" and "Bare".
func (s Suite) Run(b *testing.B) {
	b.Run("Runtime", s.RunRuntime)
	b.Run("Bare", s.RunBare)
}

func (s Suite) string1KiB() string { return strings.Repeat("0123456789abcdef", 64) }

// RunRuntime runs the operations through host/runtime.
func (s Suite) RunRuntime(b *testing.B) {
	ctx := context.Background()
	b.Run("compile", func(b *testing.B) {
		rt := newRuntime(b, runtime.Config{NoCache: true, Interfaces: s.Interfaces})
		b.ReportAllocs()
		for b.Loop() {
			c, err := rt.Compile(ctx, s.Wasm)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	rt := newRuntime(b, runtime.Config{CacheDir: b.TempDir(), Interfaces: s.Interfaces})
	comp, err := rt.Compile(ctx, s.Wasm)
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	b.Run("cached_load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c, err := rt.Compile(ctx, s.Wasm)
			if err != nil {
				b.Fatal(err)
			}
			c.Close()
		}
	})
	cfg := runtime.InstanceConfig{Grants: s.Grants}
	b.Run("instantiate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			inst, err := rt.Instantiate(ctx, comp, cfg)
			if err != nil {
				b.Fatal(err)
			}
			inst.Close()
		}
	})
	inst, err := rt.Instantiate(ctx, comp, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()
	call := func(name, fn string, args ...any) {
		if fn == "" {
			return
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := inst.Call(ctx, fn, args...); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	call("noop_call", s.Noop)
	call("echo_string_1KiB", s.EchoString, s.string1KiB())
	call("record_roundtrip", s.Record, s.RecordArg)
}

// RunBare runs the same operations through the C API mirror directly.
func (s Suite) RunBare(b *testing.B) {
	bare, err := capi.NewBare(capi.BareEngineConfig(runtime.DefaultMaxWasmStack), s.Wasm)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()
	b.Run("compile", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := bare.Compile(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached_load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := bare.Deserialize(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("instantiate", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			bi, err := bare.Instantiate()
			if err != nil {
				b.Fatal(err)
			}
			bi.Close()
		}
	})
	bi, err := bare.Instantiate()
	if err != nil {
		b.Fatal(err)
	}
	defer bi.Close()
	call := func(name, fn string, args ...any) {
		if fn == "" {
			return
		}
		f, err := bi.Func(fn)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name, func(b *testing.B) {
			// The arguments are prepared once, as a caller holding Go values would have them;
			// each call writes them to C values and reads the result back into Go values.
			var in, out wit.Flat
			for i, a := range args {
				if err := wit.LowerArg(f.Type().Params[i].Type, a, i, &in); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				in.Rewind()
				out.Reset()
				if err := f.Call(&in, &out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	call("noop_call", s.Noop)
	call("echo_string_1KiB", s.EchoString, s.string1KiB())
	call("record_roundtrip", s.Record, s.RecordArg)
}

func newRuntime(b *testing.B, cfg runtime.Config) *runtime.Runtime {
	rt, err := runtime.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}
