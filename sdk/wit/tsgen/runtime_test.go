package tsgen_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"atelier/host/runtime"
	"atelier/jsruntime"
	"atelier/sdk/wit"
	"atelier/sdk/wit/tsgen"
)

// typesHost implements the interfaces of testdata/types/types.wit for TestModulesAtRunTime and
// records the arguments (resources left out) each function got.
type typesHost struct {
	mu   sync.Mutex
	seen map[string]string
}

// width is the state of a pen; a canvas has none.
type width struct{ n uint32 }

func (h *typesHost) record(name string, args []any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var plain []any
	for _, a := range args {
		if r, ok := a.(runtime.Resource); ok {
			a = fmt.Sprintf("%s own=%t", r.Type, r.Own)
		}
		plain = append(plain, a)
	}
	h.seen[name] += fmt.Sprintf("%v;", plain)
}

// fn is a host function that records its arguments and runs f.
func (h *typesHost) fn(name string, f func(call *runtime.HostCall, args []any) (any, error)) runtime.HostFunc {
	return runtime.HostFunc{Name: name, Func: func(_ context.Context, call *runtime.HostCall, args []any) (any, error) {
		h.record(name, args)
		return f(call, args)
	}}
}

func penWidth(arg any) uint32 { return arg.(runtime.Resource).Value.(*width).n }

func (h *typesHost) interfaces() []runtime.HostInterface {
	drop := func(context.Context, *runtime.HostCall, runtime.Resource) error { return nil }
	shapes := runtime.HostInterface{
		Name:      "test:types/shapes@0.1.0",
		Resources: []runtime.HostResource{{Name: "pen", Drop: drop}, {Name: "canvas", Drop: drop}},
		Funcs: []runtime.HostFunc{
			h.fn("[constructor]pen", func(c *runtime.HostCall, a []any) (any, error) { return c.NewResource("pen", &width{a[0].(uint32)}) }),
			h.fn("[method]pen.width", func(_ *runtime.HostCall, a []any) (any, error) { return penWidth(a[0]), nil }),
			h.fn("[method]pen.draw", func(_ *runtime.HostCall, a []any) (any, error) {
				if a[1].(map[string]any)["tag"] == "none" {
					return nil, runtime.Fail("nothing to draw")
				}
				return nil, nil
			}),
			h.fn("[static]pen.preset", func(c *runtime.HostCall, a []any) (any, error) {
				if a[0] == "" {
					return nil, runtime.Fail(map[string]any{"tag": "circle", "val": 1.5})
				}
				return c.NewResource("pen", &width{uint32(len(a[0].(string)))})
			}),
			h.fn("[method]canvas.import", func(c *runtime.HostCall, _ []any) (any, error) { return c.NewResource("canvas", nil) }),
			h.fn("open", func(c *runtime.HostCall, a []any) (any, error) {
				if a[0] == "" {
					return nil, nil
				}
				return c.NewResource("canvas", nil)
			}),
			// hand-back returns the owned pen.
			h.fn("hand-back", func(_ *runtime.HostCall, a []any) (any, error) { return a[1], nil }),
		},
	}
	values := runtime.HostInterface{
		Name: "test:types/values@0.1.0",
		Funcs: []runtime.HostFunc{
			h.fn("scalars", func(*runtime.HostCall, []any) (any, error) { return nil, nil }),
			h.fn("bytes", func(_ *runtime.HostCall, a []any) (any, error) { return a[0], nil }),
			h.fn("containers", func(_ *runtime.HostCall, a []any) (any, error) {
				label := a[1].([]any)[1]
				return []any{[]any{fmt.Sprintf("%d points", len(a[0].([]any))), label}, map[string]any{"some": nil}}, nil
			}),
			h.fn("nested", func(_ *runtime.HostCall, a []any) (any, error) {
				if a[2] == nil {
					return []any{}, nil
				}
				return []any{map[string]any{"ok": nil}, map[string]any{"err": uint8(9)}}, nil
			}),
			h.fn("delete", func(_ *runtime.HostCall, a []any) (any, error) {
				if a[0] == "" {
					return nil, runtime.Fail(nil)
				}
				return a[0] == "x", nil
			}),
		},
	}
	return []runtime.HostInterface{shapes, values}
}

// TestModulesAtRunTime checks the declarations against componentize-qjs itself: a TypeScript
// component (testdata/types/guest.ts) type-checked against what Modules declares for world
// `runner` is built with sdk/build-gadget.sh and run on the runtime with Go implementations of
// the imports. The guest calls every import as declared and checks each value it gets back;
// the host checks each value it gets.
func TestModulesAtRunTime(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: builds a component with sdk/build-gadget.sh (node, npm)")
	}
	w, err := wit.LoadWorld("runner", filepath.Join("testdata", "types"))
	if err != nil {
		t.Fatal(err)
	}
	guest := read(t, filepath.Join("testdata", "types", "guest.ts"))
	typeCheck(t, write(t, map[string]string{"types.d.ts": tsgen.Modules(w), "guest.ts": guest}), "types.d.ts", "guest.ts")

	js, err := jsruntime.Strip("guest.ts", guest)
	if err != nil {
		t.Fatal(err)
	}
	dir := write(t, map[string]string{"app.js": js})
	if err := os.Mkdir(filepath.Join(dir, "wit"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "wit", "types.wit"), []byte(read(t, filepath.Join("testdata", "types", "types.wit"))), 0o644); err != nil {
		t.Fatal(err)
	}
	wasm := filepath.Join(dir, "runner.wasm")
	build := exec.Command("bash", filepath.Join(root, "sdk", "build-gadget.sh"), "--lang", "js", "--world", "runner", dir, wasm)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build-gadget.sh: %v\n%s", err, out)
	}

	h := &typesHost{seen: map[string]string{}}
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: h.interfaces()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	src, err := os.ReadFile(wasm)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := rt.Compile(ctx, src)
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	inst, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{
		Name:    "runner",
		Grants:  append(runtime.WASIBaseline(), "test:types/shapes", "test:types/values"),
		Console: func(l runtime.ConsoleLine) { t.Logf("guest %s: %s", l.Stream, l.Text) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	got, err := inst.Call(ctx, "run")
	if err != nil || got != "ok" {
		t.Fatalf("run: %v\n%v", err, got)
	}
	for name, want := range map[string]string{
		"[constructor]pen":      "[3];",
		"[method]pen.draw":      "[pen own=false map[tag:path val:[[{x-pos 1} {y-pos -2}]]] light-blue [bold]];[pen own=false map[tag:none] red [bold]];",
		"[static]pen.preset":    "[fine];[];",
		"open":                  "[];[main];",
		"[method]canvas.import": "[canvas own=false canvas own=false];",
		"scalars":               "[true -1 1 -2 2 -3 3 -4 4 0.5 1.5 c str];",
		"bytes":                 "[[1 2 3]];[[4]];",
		"containers":            "[[[{x-pos 1} {y-pos -2}] [{x-pos 0} {y-pos 0}]] [7 seven]];",
		"nested":                "[map[err:no] map[ok:<nil>] [{x-pos 1} {y-pos -2}]];[map[ok:1] map[err:<nil>] <nil>];",
		"hand-back":             "[pen own=false pen own=true];",
		"delete":                "[x];[y];[];",
	} {
		if h.seen[name] != want {
			t.Errorf("the host got %s%s, want %s", name, h.seen[name], want)
		}
	}
}
