package runtime_test

import (
	"context"
	"math"
	"os"
	"reflect"
	"sync"
	"testing"

	"atelier/host/runtime"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // every Wasmtime error would capture a slow Rust backtrace
	os.Exit(m.Run())
}

// echoHost implements test:echo/host: every function returns its argument, and remembers the
// last one it saw (so tests check the guest-to-host direction too).
type echoHost struct {
	mu   sync.Mutex
	last map[string]any
}

var echoTypes = []string{
	"bool", "s8", "u8", "s16", "u16", "s32", "u32", "s64", "u64", "f32", "f64", "char",
	"string", "bytes", "strings", "point", "tuple", "shape", "color", "option", "option-option",
	"result", "result-empty", "perms", "item", "items", "many",
}

func (h *echoHost) iface() runtime.HostInterface {
	hi := runtime.HostInterface{Name: "test:echo/host"}
	for _, name := range echoTypes {
		fname := "echo-" + name
		hi.Funcs = append(hi.Funcs, runtime.HostFunc{Name: fname, Func: func(_ context.Context, _ *runtime.HostCall, args []any) (any, error) {
			h.mu.Lock()
			h.last[fname] = args[0]
			h.mu.Unlock()
			if m, ok := args[0].(map[string]any); ok && (name == "result" || name == "result-empty") {
				if e, isErr := m["err"]; isErr {
					return nil, runtime.Fail(e)
				}
				return m["ok"], nil
			}
			return args[0], nil
		}})
	}
	return hi
}

func (h *echoHost) seen(fname string) any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.last[fname]
}

// fixture is a runtime with the echo host interface and the echo component compiled.
type fixture struct {
	rt   *runtime.Runtime
	echo *runtime.Component
	host *echoHost
}

var echoGrants = []string{"test:echo/host"}

func newFixture(tb testing.TB, cfg runtime.Config) *fixture {
	tb.Helper()
	h := &echoHost{last: make(map[string]any)}
	cfg.Interfaces = append(cfg.Interfaces, h.iface())
	if cfg.CacheDir == "" {
		cfg.NoCache = true
	}
	rt, err := runtime.New(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	comp := compileFile(tb, rt, "testdata/echo.wat")
	return &fixture{rt: rt, echo: comp, host: h}
}

func compileFile(tb testing.TB, rt *runtime.Runtime, path string) *runtime.Component {
	tb.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	comp, err := rt.Compile(context.Background(), src)
	if err != nil {
		tb.Fatalf("compile %s: %v", path, err)
	}
	tb.Cleanup(comp.Close)
	return comp
}

func (f *fixture) instance(tb testing.TB, cfg runtime.InstanceConfig) *runtime.Instance {
	tb.Helper()
	if cfg.Grants == nil {
		cfg.Grants = echoGrants
	}
	inst, err := f.rt.Instantiate(context.Background(), f.echo, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { inst.Close() })
	return inst
}

// sameValue compares lifted values, treating NaNs as equal to each other.
func sameValue(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || math.IsNaN(x) && math.IsNaN(y))
	case float32:
		y, ok := b.(float32)
		return ok && (x == y || x != x && y != y)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameValue(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !sameValue(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.DeepEqual(a, b)
}

// memoryBudget returns the smallest memory budget (Limits.MaxMemory) whose linear memories'
// share, after the tables' reserve, is at least mem bytes.
func memoryBudget(mem int64) int64 {
	b := mem
	for b-runtime.TableReserve(b) < mem {
		b += 128
	}
	return b
}
