package runtime_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
)

var (
	counterGrants = []string{log.Grant, kv.Grant}
	todoGrants    = []string{log.Grant, kv.Grant, events.Grant}
)

// exampleGadgets lists the example gadgets with the grants each needs: two counters and two
// to-do lists, each pair with the same exports and kv layout in Go and in JavaScript.
var exampleGadgets = []struct {
	dir    string
	grants []string
}{{counterGo, counterGrants}, {counterJS, counterGrants}, {todoJS, todoGrants}, {todoGo, todoGrants}}

// languagePairs lists, for the two gadgets of one kind, both orders in which one writes the
// state and the other reads it on.
func languagePairs(a, b string) [][2]string { return [][2]string{{a, b}, {b, a}} }

// TestCounter runs a counter, then a fresh instance of the other language's counter on the same
// kv state: the count persists across instances and the two gadgets are interchangeable.
func TestCounter(t *testing.T) {
	for _, pair := range languagePairs(counterGo, counterJS) {
		t.Run(path.Base(pair[0])+"-then-"+path.Base(pair[1]), func(t *testing.T) {
			h := newHarness(t)
			first := h.instantiate(t, pair[0], "counter-1", counterGrants...)
			if got := call(t, first, "increment", uint32(2)); got != uint64(2) {
				t.Fatalf("increment(2) = %#v, want uint64(2)", got)
			}
			if got := call(t, first, "increment", uint32(40)); got != uint64(42) {
				t.Fatalf("increment(40) = %#v, want 42", got)
			}
			first.Close()

			v, ok, err := h.store.Get(context.Background(), "count")
			if err != nil || !ok || len(v) != 8 || binary.LittleEndian.Uint64(v) != 42 {
				t.Fatalf("kv count = %v, %v, %v; want 42 as 8 little-endian bytes", v, ok, err)
			}

			second := h.instantiate(t, pair[1], "counter-2", counterGrants...)
			if got := call(t, second, "get"); got != uint64(42) {
				t.Fatalf("get() on a new instance = %#v, want 42 from kv", got)
			}
			call(t, second, "reset")
			if got := call(t, second, "get"); got != uint64(0) {
				t.Fatalf("get() after reset = %#v, want 0", got)
			}
			if _, ok, _ := h.store.Get(context.Background(), "count"); ok {
				t.Fatal("reset left the count key in kv")
			}

			want := []runtime.ConsoleLine{
				{Instance: "counter-1", Stream: "log", Level: "info", Text: "increment by 2 -> 2"},
				{Instance: "counter-1", Stream: "log", Level: "info", Text: "increment by 40 -> 42"},
				{Instance: "counter-2", Stream: "log", Level: "info", Text: "reset"},
			}
			if got := h.lines(); !reflect.DeepEqual(got, want) {
				t.Fatalf("console = %+v\nwant %+v", got, want)
			}
		})
	}
}

// TestGadgetsImportOnlyWhatTheyUse pins each example gadget's atelier imports, which are the
// grants its owner must give.
func TestGadgetsImportOnlyWhatTheyUse(t *testing.T) {
	for _, g := range exampleGadgets {
		t.Run(path.Base(g.dir), func(t *testing.T) {
			var imports, want []string
			for _, it := range component(t, g.dir).Audit().Imports {
				if strings.HasPrefix(it.Name, "atelier:") {
					imports = append(imports, it.Name)
				}
			}
			// counter-go's world includes all of atelier:gadget/gadget; Go's linker keeps only
			// what is called.
			for _, grant := range g.grants {
				want = append(want, grant+"@0.1.0")
			}
			slices.Sort(imports)
			slices.Sort(want)
			if !slices.Equal(imports, want) {
				t.Fatalf("atelier imports = %v, want %v", imports, want)
			}
		})
	}
}

func TestGadgetWithoutKVGrantIsRefused(t *testing.T) {
	for _, g := range exampleGadgets {
		t.Run(path.Base(g.dir), func(t *testing.T) {
			h := newHarness(t)
			_, err := sharedRuntime(t).Instantiate(context.Background(), component(t, g.dir),
				h.config("no-kv", log.Grant, events.Grant))
			var ungranted *runtime.UngrantedImportError
			if !errors.As(err, &ungranted) || ungranted.Grant != kv.Grant {
				t.Fatalf("instantiate without kv grant: %v; want UngrantedImportError for %s", err, kv.Grant)
			}
			if !strings.Contains(err.Error(), `"atelier:host/kv@0.1.0"`) || !strings.Contains(err.Error(), `"atelier:host/kv"`) {
				t.Fatalf("error %q does not name the import and the grant", err)
			}
			if len(h.lines()) != 0 {
				t.Fatalf("refused gadget produced console output: %v", h.lines())
			}
		})
	}
}

// todo is a `todo` record as the host lifts it: an ordered.Object in declaration order.
func todo(id uint32, title string, done bool) ordered.Object {
	return ordered.Object{{Key: "id", Value: id}, {Key: "title", Value: title}, {Key: "done", Value: done}}
}

// TestTodo runs a to-do list, then a fresh instance of the other language's to-do list on the
// same kv state, checking results, errors, events and console lines of both.
func TestTodo(t *testing.T) {
	for _, pair := range languagePairs(todoJS, todoGo) {
		t.Run(path.Base(pair[0])+"-then-"+path.Base(pair[1]), func(t *testing.T) {
			h := newHarness(t)
			inst := h.instantiate(t, pair[0], "todo-1", todoGrants...)

			if got, want := call(t, inst, "add", "milk"), todo(1, "milk", false); !reflect.DeepEqual(got, want) {
				t.Fatalf("add(milk) = %#v, want %#v", got, want)
			}
			call(t, inst, "add", "eggs ü <&>") // non-ASCII and HTML characters stored as they are
			if got, want := call(t, inst, "toggle", uint32(1)), todo(1, "milk", true); !reflect.DeepEqual(got, want) {
				t.Fatalf("toggle(1) = %#v, want %#v", got, want)
			}
			_, err := inst.Call(context.Background(), "toggle", uint32(99))
			var rerr *runtime.ResultError
			if !errors.As(err, &rerr) || rerr.Value != "no todo with id 99" {
				t.Fatalf("toggle(99) error = %v, want ResultError \"no todo with id 99\"", err)
			}
			if got := call(t, inst, "remove", uint32(2)); got != true {
				t.Fatalf("remove(2) = %#v, want true", got)
			}
			if got := call(t, inst, "remove", uint32(2)); got != false {
				t.Fatalf("second remove(2) = %#v, want false", got)
			}
			inst.Close()

			// The state lives in kv: a new instance, of either language, sees it.
			again := h.instantiate(t, pair[1], "todo-2", todoGrants...)
			call(t, again, "add", "bread")
			want := []any{todo(1, "milk", true), todo(3, "bread", false)}
			if got := call(t, again, "list"); !reflect.DeepEqual(got, want) {
				t.Fatalf("list() = %#v, want %#v", got, want)
			}
			if v, _, _ := h.store.Get(context.Background(), "todo/0000000003"); string(v) != `{"id":3,"title":"bread","done":false}` {
				t.Fatalf("kv todo/0000000003 = %q, want the JSON.stringify form", v)
			}

			var kinds []string
			for _, ev := range h.published() {
				var p struct {
					Kind string
					Todo struct{ ID uint32 }
				}
				if err := json.Unmarshal(ev.Payload, &p); err != nil || ev.Topic != "todos" {
					t.Fatalf("event %+v: topic or payload wrong (%v)", ev, err)
				}
				kinds = append(kinds, fmt.Sprintf("%s %s %d", ev.Source, p.Kind, p.Todo.ID))
			}
			wantKinds := []string{"todo-1 added 1", "todo-1 added 2", "todo-1 toggled 1", "todo-1 removed 2", "todo-2 added 3"}
			if !reflect.DeepEqual(kinds, wantKinds) {
				t.Fatalf("events = %q, want %q", kinds, wantKinds)
			}
			if lines := h.lines(); len(lines) != 5 || lines[1] != (runtime.ConsoleLine{Instance: "todo-1", Stream: "log", Level: "info", Text: "added 2: eggs ü <&>"}) {
				t.Fatalf("console = %+v, want 5 log lines, the second `added 2: eggs ü <&>`", lines)
			}
		})
	}
}

// benchSample is the value of the gadgets' `sample` record used by tests and benchmarks, in
// the form the host lifts it (an ordered.Object in declaration order).
func benchSample() ordered.Object {
	return ordered.Object{
		{Key: "id", Value: uint32(7)}, {Key: "name", Value: "sample ✓"}, {Key: "tags", Value: []any{"a", "", "ünïcode", strings.Repeat("t", 100)}},
		{Key: "score", Value: 3.25}, {Key: "done", Value: true},
	}
}

// kib is a 1 KiB string with multi-byte characters.
var kib = strings.Repeat("abcdefghijklmnopqrstuvwxyz0123ü", 33)[:1024]

func TestBenchExports(t *testing.T) {
	for _, g := range exampleGadgets {
		t.Run(path.Base(g.dir), func(t *testing.T) {
			inst := newHarness(t).instantiate(t, g.dir, "bench", g.grants...)
			if got := call(t, inst, "noop"); got != nil {
				t.Fatalf("noop() = %#v", got)
			}
			for _, s := range []string{"", "x", kib, strings.Repeat(kib, 64)} {
				if got := call(t, inst, "echo", s); got != s {
					t.Fatalf("echo(%d bytes) returned %d bytes", len(s), len(got.(string)))
				}
			}
			zero := ordered.Object{{Key: "id", Value: uint32(0)}, {Key: "name", Value: ""}, {Key: "tags", Value: []any{}}, {Key: "score", Value: -0.0}, {Key: "done", Value: false}}
			for _, r := range []ordered.Object{benchSample(), zero} {
				if got := call(t, inst, "roundtrip", r); !reflect.DeepEqual(got, r) {
					t.Fatalf("roundtrip(%#v) = %#v", r, got)
				}
			}
		})
	}
}

// TestGoGuestLargeTransfers drives the Go guest's heap through growth while the host lowers
// values into it (cabi_realloc must not touch the Go heap, see sdk/go/cabi), then checks the
// documented limit: one transfer above cabi.ChunkSize (4 MiB) traps and retires the instance.
func TestGoGuestLargeTransfers(t *testing.T) {
	inst := newHarness(t).instantiate(t, counterGo, "large", counterGrants...)
	big := strings.Repeat(kib, 256)
	for i := range 40 {
		if got := call(t, inst, "echo", big); got != big {
			t.Fatalf("echo #%d of 256 KiB came back with %d bytes", i, len(got.(string)))
		}
		if got := call(t, inst, "roundtrip", benchSample()); !reflect.DeepEqual(got, benchSample()) {
			t.Fatalf("roundtrip #%d = %#v", i, got)
		}
	}
	_, err := inst.Call(context.Background(), "echo", strings.Repeat(kib, 5<<10))
	if !errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("echo of 5 MiB: %v, want a trap", err)
	}
	if _, err := inst.Call(context.Background(), "noop"); !errors.Is(err, runtime.ErrRetired) {
		t.Fatalf("call after the trap: %v, want ErrRetired", err)
	}
}

// TestJSInitExportCannotReplaceCode pins a property of componentize-qjs output: its components
// export `init(shim, script, ...)` (the Wizer entry point) next to the world's functions, and a
// call after the build-time snapshot must not replace the gadget's code.
func TestJSInitExportCannotReplaceCode(t *testing.T) {
	inst := newHarness(t).instantiate(t, todoJS, "init", todoGrants...)
	_, err := inst.Call(context.Background(), "init", "", "export function echo(s) { return 'replaced'; }", nil, false)
	var rerr *runtime.ResultError
	if !errors.As(err, &rerr) || rerr.Value != "JavaScript already evaluated" {
		t.Fatalf("init after the snapshot: %v; want ResultError \"JavaScript already evaluated\"", err)
	}
	if got := call(t, inst, "echo", "x"); got != "x" {
		t.Fatalf("echo after init = %#v, want the original code's \"x\"", got)
	}
}

// TestJSMathRandomPerInstance: a componentize-qjs guest is a snapshot of the engine taken at
// build time, yet its instances draw different Math.random sequences (sdk/componentize's
// prologue), even when the module's top level drew in the snapshot, and every value is in
// [0, 1).
func TestJSMathRandomPerInstance(t *testing.T) {
	seen := map[float64]bool{}
	for i := range 3 {
		inst := newHarness(t).instantiate(t, randomJS, fmt.Sprintf("random-%d", i))
		if f := call(t, inst, "at-init").(float64); f < 0 || f >= 1 {
			t.Fatalf("the top level drew %v", f)
		}
		for _, f := range call(t, inst, "draw", uint32(4)).([]float64) {
			if f < 0 || f >= 1 || seen[f] {
				t.Fatalf("instance %d drew %v (seen before: %t), want fresh values in [0, 1)", i, f, seen[f])
			}
			seen[f] = true
		}
	}
}

// TestGoHostBindings checks every function of sdk/go/host against the real capabilities.
func TestGoHostBindings(t *testing.T) {
	h := newHarness(t)
	inst := h.instantiate(t, hostAPI, "host-api", log.Grant, kv.Grant, events.Grant, "atelier:host/clock")
	want := strings.Join([]string{
		`batch: <nil>`,
		`list: [a="1" c="" d/ü="4"] <nil>`,
		`list d/: 1 <nil>`,
		`get a: "1" true <nil>`,
		`get missing: "" false <nil>`,
		`set empty key: invalid key: keys are 1 to 512 bytes of UTF-8`,
		`delete a: <nil>`,
		`publish: <nil>`,
		`publish bad json: publish topic: payload is not valid JSON`,
		`now-ms > 2020: true`,
	}, "\n")
	if got := call(t, inst, "exercise"); got != want {
		t.Fatalf("exercise() =\n%s\nwant\n%s", got, want)
	}
	if evs := h.published(); len(evs) != 1 || string(evs[0].Payload) != `{"x":1}` {
		t.Fatalf("published %+v, want one event {\"x\":1}", evs)
	}
	if _, ok, _ := h.store.Get(context.Background(), "c"); !ok {
		t.Fatal("batch did not store the empty value of c")
	}
	want2 := runtime.ConsoleLine{Instance: "host-api", Stream: "log", Level: "warn", Text: "exercised"}
	if lines := h.lines(); len(lines) != 1 || lines[0] != want2 {
		t.Fatalf("console = %+v, want %+v", lines, want2)
	}
}
