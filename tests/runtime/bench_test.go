package runtime_test

import (
	"context"
	"path/filepath"
	"testing"

	"atelier/host/runtime"
	"atelier/sdk/guesttest"
)

// BenchmarkGadget measures the same operations on the Go and the JS gadget:
//
//	compile      compile the component from its bytes (no artifact cache)
//	cached-load  load it from the runtime's artifact cache
//	instantiate  create an instance (grants checked, WASI and capabilities linked) and close it
//	noop         call noop() on a live instance
//	echo-1k      call echo(s) with a 1 KiB string
//	record       call roundtrip(r) with a five-field record (u32, string, list<string>, f64, bool)
func BenchmarkGadget(b *testing.B) {
	for _, g := range []struct {
		name, dir string
		grants    []string
	}{{"go", counterGo, counterGrants}, {"js", todoJS, todoGrants}} {
		b.Run(g.name, func(b *testing.B) {
			src := guesttest.Bytes(b, g.dir)
			ctx := context.Background()
			b.Run("compile", func(b *testing.B) {
				rt := newRuntime(b, "")
				for b.Loop() {
					c, err := rt.Compile(ctx, src)
					if err != nil {
						b.Fatal(err)
					}
					c.Close()
				}
			})
			b.Run("cached-load", func(b *testing.B) {
				rt := newRuntime(b, filepath.Join(b.TempDir(), "artifacts"))
				c, err := rt.Compile(ctx, src) // fills the cache
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
				for b.Loop() {
					c, err := rt.Compile(ctx, src)
					if err != nil {
						b.Fatal(err)
					}
					c.Close()
				}
				if st := rt.Stats(); st.Compiles != 1 {
					b.Fatalf("cache stats %+v: want exactly one compile", st)
				}
			})
			comp := component(b, g.dir)
			cfg := runtime.InstanceConfig{Name: "bench", Grants: append(runtime.WASIBaseline(), g.grants...)}
			b.Run("instantiate", func(b *testing.B) {
				for b.Loop() {
					inst, err := sharedRuntime(b).Instantiate(ctx, comp, cfg)
					if err != nil {
						b.Fatal(err)
					}
					inst.Close()
				}
			})
			inst, err := sharedRuntime(b).Instantiate(ctx, comp, cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer inst.Close()
			for _, op := range []struct {
				name string
				fn   string
				args []any
			}{
				{"noop", "noop", nil},
				{"echo-1k", "echo", []any{kib}},
				{"record", "roundtrip", []any{benchSample()}},
			} {
				b.Run(op.name, func(b *testing.B) {
					for b.Loop() {
						if _, err := inst.Call(ctx, op.fn, op.args...); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		})
	}
}
