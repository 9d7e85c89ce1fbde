package tsgen_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atelier/host/runtime"
	rtwit "atelier/host/runtime/wit"
	"atelier/host/runtime/wit/tsdecl"
	"atelier/sdk/guesttest"
	"atelier/sdk/wit"
	"atelier/sdk/wit/tsgen"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	os.Exit(m.Run())
}

var root = filepath.Join("..", "..", "..")

// project are the project's WIT packages, the dependencies of every guest world.
var project = []string{"wit/host", "wit/gadget", "wit/gatekeeper", "wit/js"}

// world loads the one world of the guest folder dir (relative to the repository).
func world(t *testing.T, dir string) *wit.World {
	t.Helper()
	paths := []string{filepath.Join(root, dir, "wit")}
	for _, p := range project {
		paths = append(paths, filepath.Join(root, p))
	}
	res, roots, err := wit.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	w, err := res.SelectWorld(roots[0], "")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// sourceWorld loads the one world of the WIT package src (file name, for positions).
func sourceWorld(t *testing.T, name, src string) *wit.World {
	t.Helper()
	res, pkg, err := wit.LoadSource(name, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w, err := res.SelectWorld(pkg, "")
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func TestDeclareTodo(t *testing.T) {
	w := world(t, "gadgets/todo-go")
	for m, want := range map[tsdecl.Mapping][]string{
		tsdecl.JSON: {
			"/** WIT record todo */\ntype Todo = { id: number; title: string; done: boolean };",
			"declare const todoList: {",
			"  /** toggle: func(id: u32) -> result<todo, string> @throws string (the result's error) */\n  toggle(id: number): Promise<Todo>;",
			"  list(): Promise<Array<Todo>>;",
			"  noop(): Promise<void>;",
		},
		tsdecl.CapnWeb: {"roundtrip(r: Sample): Promise<Sample>;"},
	} {
		got := tsgen.Declare(w, "todoList", m)
		for _, s := range want {
			if !strings.Contains(got, s) {
				t.Errorf("mapping %d: lacks %q:\n%s", m, s, got)
			}
		}
	}
}

func TestDeclareInterfaceAndResources(t *testing.T) {
	w := sourceWorld(t, "shapes.wit", `package test:shapes;
interface canvas {
  resource pen {
    constructor(width: u32);
    line: func(to: tuple<s32, s32>);
    named: static func(name: string) -> result<pen, string>;
  }
  variant shape { dot, circle(f64) }
  flags style { bold, dashed }
  type lookup = map<string, u8>;
  draw: func(s: shape, st: style, l: lookup, p: borrow<pen>);
}
world app { export canvas; }
`)
	for m, wants := range map[tsdecl.Mapping][]string{
		tsdecl.CapnWeb: {
			`type Shape = { tag: "dot" } | { tag: "circle"; val: number };`,
			`type Style = Array<"bold" | "dashed">;`,
			"/** WIT resource pen: a handle, held as a Cap'n Web stub (dispose it to drop the resource). */\ninterface Pen {\n" +
				"  /** [method]pen.line: func(self: borrow<pen>, to: tuple<s32, s32>) */\n  line(to: [number, number]): Promise<void>;\n  /** Drops the handle: the resource's destructor runs in the gadget, once. */\n  [Symbol.dispose](): void;\n}",
			"  canvas: {\n    /** draw: func(s: shape, st: style, l: list<tuple<string, u8>>, p: borrow<pen>) */\n" +
				"    draw(s: Shape, st: Style, l: Array<[string, number]>, p: Pen): Promise<void>;\n    pen: {\n" +
				"      /** [constructor]pen: func(width: u32) -> pen */\n      \"new\"(width: number): Promise<Pen>;\n",
			"      named(name: string): Promise<Pen>;\n    };\n  };\n};",
		},
		tsdecl.JSON: {
			"declare const app: {\n  // Not callable with JSON values (they take or return resources, which only a connect() stub can hold): canvas.draw, canvas.pen.new, canvas.pen.named.\n};",
		},
	} {
		got := tsgen.Declare(w, "app", m)
		for _, want := range wants {
			if !strings.Contains(got, want) {
				t.Errorf("mapping %d lacks %q:\n%s", m, want, got)
			}
		}
		if strings.Contains(got, "[method]pen.line\"") || strings.Contains(got, "line(self") {
			t.Errorf("mapping %d declares a method by its component name or with self:\n%s", m, got)
		}
	}
}

// TestMatchesReflection builds real components and checks that the exports converted from
// their WIT equal what the runtime reflects from the compiled component, type for type.
// Reflection names types only when they are exported by name, so names are compared apart.
func TestMatchesReflection(t *testing.T) {
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	for _, dir := range []string{"gadgets/todo-go", "gatekeepers/notes-go"} {
		comp, err := rt.Compile(context.Background(), guesttest.Bytes(t, dir))
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		want := funcs(comp.Audit().Exports)
		got := funcs(tsgen.Items(world(t, dir).AllExports))
		t.Logf("%s: %d exported functions match", dir, len(got))
		if len(got) == 0 || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: exports from WIT differ from reflection\n got %v\nwant %v", dir, got, want)
		}
		comp.Close()
	}
}

// funcs flattens items to "name: signature" lines with type names removed.
func funcs(items []rtwit.Item) map[string]string {
	out := map[string]string{}
	for _, it := range items {
		switch it.Kind {
		case rtwit.ItemFunc:
			out[it.Name] = unnamed(it.Func)
		case rtwit.ItemInstance:
			for _, f := range it.Exports {
				if f.Kind == rtwit.ItemFunc {
					out[it.Name+"#"+f.Name] = unnamed(f.Func)
				}
			}
		}
	}
	return out
}

// unnamed renders a signature structurally, without the names of named types.
func unnamed(f *rtwit.FuncType) string {
	var b strings.Builder
	var walk func(t *rtwit.Type)
	walk = func(t *rtwit.Type) {
		if t == nil {
			b.WriteString("-")
			return
		}
		b.WriteString(t.Kind.String() + "(" + t.Resource + strings.Join(t.Names, ",") + " ")
		for _, e := range append([]*rtwit.Type{t.Elem, t.Ok, t.Err}, t.Elems...) {
			if e != nil {
				walk(e)
			}
		}
		for _, fl := range t.Fields {
			b.WriteString(fl.Name + ":")
			walk(fl.Type)
		}
		for _, c := range t.Cases {
			b.WriteString(c.Name + ":")
			walk(c.Type)
		}
		b.WriteString(")")
	}
	for _, p := range f.Params {
		b.WriteString(p.Name + ":")
		walk(p.Type)
	}
	b.WriteString("->")
	walk(f.Result)
	return b.String()
}
