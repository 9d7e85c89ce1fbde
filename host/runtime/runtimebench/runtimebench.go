// Package runtimebench runs the standard host/runtime benchmark operations on any component,
// each twice in a row: through host/runtime ("runtime") and through the bare C API mirror with
// no runtime layer ("bare"), so that one `go test -bench` run gives the runtime's overhead as a
// ratio. The two sides of an operation run back to back (op/runtime, then op/bare), so machine
// noise hits both alike; `go run ./tests/bench` prints the ratios.
//
// Operations: compile, cached_load, instantiate, noop_call, echo_string_1KiB,
// record_roundtrip. A call operation whose function is not named in the Suite is skipped.
package runtimebench

import (
	"context"
	"strings"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
	"atelier/tests/loadgen"
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
	// (wit.Flat), made once, as a caller holding prepared values would.
	Record    string
	RecordArg any
}

// Run runs every operation as the sub-benchmarks "<op>/runtime" and "<op>/bare".
func (s Suite) Run(b *testing.B) {
	ctx := context.Background()
	rt := newRuntime(b, runtime.Config{CacheDir: b.TempDir(), Interfaces: s.Interfaces})
	comp, err := rt.Compile(ctx, s.Wasm) // also fills the artifact cache
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	bare, err := capi.NewBare(capi.BareEngineConfig(runtime.DefaultMaxWasmStack), s.Wasm)
	if err != nil {
		b.Fatal(err)
	}
	defer bare.Close()

	pair(b, "compile", func(b *testing.B) {
		rt := newRuntime(b, runtime.Config{NoCache: true, Interfaces: s.Interfaces})
		loop(b, func() error {
			c, err := rt.Compile(ctx, s.Wasm)
			if err == nil {
				c.Close()
			}
			return err
		})
	}, func(b *testing.B) { loop(b, bare.Compile) })

	pair(b, "cached_load", func(b *testing.B) {
		loop(b, func() error {
			c, err := rt.Compile(ctx, s.Wasm)
			if err == nil {
				c.Close()
			}
			return err
		})
	}, func(b *testing.B) { loop(b, bare.Deserialize) })

	cfg := runtime.InstanceConfig{Grants: s.Grants}
	pair(b, "instantiate", func(b *testing.B) {
		loop(b, func() error {
			inst, err := rt.Instantiate(ctx, comp, cfg)
			if err == nil {
				inst.Close()
			}
			return err
		})
	}, func(b *testing.B) {
		loop(b, func() error {
			bi, err := bare.Instantiate()
			if err == nil {
				bi.Close()
			}
			return err
		})
	})

	inst, err := rt.Instantiate(ctx, comp, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()
	bi, err := bare.Instantiate()
	if err != nil {
		b.Fatal(err)
	}
	defer bi.Close()
	call := func(op, fn string, args ...any) {
		if fn == "" {
			return
		}
		f, err := bi.Func(fn)
		if err != nil {
			b.Fatal(err)
		}
		pair(b, op, func(b *testing.B) {
			loop(b, func() error {
				_, err := inst.Call(ctx, fn, args...)
				return err
			})
		}, func(b *testing.B) {
			var in, out wit.Flat
			for i, a := range args {
				if err := wit.LowerArg(f.Type().Params[i].Type, a, i, &in); err != nil {
					b.Fatal(err)
				}
			}
			loop(b, func() error {
				in.Rewind()
				out.Reset()
				return f.Call(&in, &out)
			})
		})
	}
	call("noop_call", s.Noop)
	call("echo_string_1KiB", s.EchoString, strings.Repeat("0123456789abcdef", 64))
	call("record_roundtrip", s.Record, s.RecordArg)
}

// pair runs one operation through the runtime, then through the bare C API.
func pair(b *testing.B, op string, runtimeSide, bareSide func(*testing.B)) {
	b.Run(op, func(b *testing.B) {
		b.Run("runtime", runtimeSide)
		b.Run("bare", bareSide)
	})
}

// loop runs op b.N times, reporting allocations and the process's CPU time per op
// (cpu-ns/op: on a machine shared with other work it varies less than wall time), and failing
// on the first error.
func loop(b *testing.B, op func() error) {
	b.ReportAllocs()
	cpu0 := loadgen.CPUTime(b)
	for b.Loop() {
		if err := op(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(loadgen.CPUTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
}

func newRuntime(b *testing.B, cfg runtime.Config) *runtime.Runtime {
	rt, err := runtime.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}
