package jsruntime_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/host/capability/bindings"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/runtime"
	"atelier/jsruntime"
)

var counterFiles = map[string]string{
	"server.ts": `import { label } from "./util.js";

export class Gadget {
  count: number;
  constructor(ctx: unknown, env: unknown) {
    this.count = this.storage.get("count") ?? 0;
  }
  increment(by = 1) {
    this.count += by;
    this.storage.put("count", this.count);
    this.events.publish("count", { count: this.count });
    return this.count;
  }
  get() {
    return { count: this.count, label: label(this.count), now: Date.now() > 0 };
  }
  fail(): never {
    throw new RangeError("nope");
  }
  loop() {
    for (;;) {}
  }
  async remote(x: number) {
    return await this.env.other.add(x, 1);
  }
  entries() {
    this.storage.put({ k1: "a", k2: ["b"], x: 0 });
    this.storage.delete(["x"]);
    return [...this.storage.list({ prefix: "k" })];
  }
  _private() {}
}
`,
	"util.ts":   "export function label(n: number): string {\n  return `n=${n}`;\n}\n",
	"README.md": "not loaded",
}

// caller is a bindings.Caller for this.env: binding "other" has an add method.
type caller struct{}

func (caller) CallBinding(_ context.Context, name, method string, args []any) (any, error) {
	if name != "other" || method != "add" {
		return nil, fmt.Errorf("no binding %s.%s", name, method)
	}
	return args[0].(float64) + args[1].(float64), nil
}

type gadgetFixture struct {
	store  *kv.Memory
	mu     sync.Mutex
	events []events.Event
	lines  []runtime.ConsoleLine
}

func (f *gadgetFixture) Publish(_ context.Context, ev events.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.events = append(f.events, ev)
	return nil
}

func (f *gadgetFixture) config(files map[string]string) jsruntime.GadgetConfig {
	return jsruntime.GadgetConfig{
		Name:   "counter-1",
		Files:  files,
		Grants: jsruntime.GadgetGrants(),
		Bind:   map[string]any{kv.Grant: f.store, events.Grant: f, bindings.Grant: caller{}},
		Console: func(l runtime.ConsoleLine) {
			f.mu.Lock()
			f.lines = append(f.lines, l)
			f.mu.Unlock()
		},
		Limits: jsruntime.Limits{Timeout: 500 * time.Millisecond},
	}
}

func newGadget(t *testing.T, f *gadgetFixture, files map[string]string) *jsruntime.Gadget {
	t.Helper()
	g, err := engine(t).NewGadget(f.config(files))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

func call(t *testing.T, g *jsruntime.Gadget, method string, args ...any) any {
	t.Helper()
	v, err := g.Call(context.Background(), method, args...)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return v
}

func TestGadget(t *testing.T) {
	f := &gadgetFixture{store: kv.NewMemory(0)}
	g := newGadget(t, f, counterFiles)
	ctx := context.Background()
	methods, err := g.Methods(ctx)
	want := []string{"entries", "fail", "get", "increment", "loop", "remote"}
	if err != nil || !reflect.DeepEqual(methods, want) {
		t.Fatalf("methods %v, %v; want %v", methods, err, want)
	}
	if v := call(t, g, "increment"); v != 1.0 {
		t.Fatalf("increment: %v", v)
	}
	if v := call(t, g, "increment", 2); v != 3.0 {
		t.Fatalf("increment(2): %v", v)
	}
	if len(f.events) != 2 || f.events[1].Source != "counter-1" || f.events[1].Topic != "count" || string(f.events[1].Payload) != `{"count":3}` {
		t.Fatalf("events %+v", f.events)
	}
	if v := call(t, g, "remote", 41); v != 42.0 {
		t.Fatalf("remote: %v", v)
	}
	if v := call(t, g, "entries"); !reflect.DeepEqual(v, []any{[]any{"k1", "a"}, []any{"k2", []any{"b"}}}) {
		t.Fatalf("entries: %#v", v)
	}

	// What JavaScript throws comes back with its stack in the TypeScript source; the instance lives on.
	_, err = g.Call(ctx, "fail")
	var je *jsruntime.Error
	if !errors.As(err, &je) || je.Name != "RangeError" || !strings.Contains(je.Stack, "server.ts:18:") {
		t.Fatalf("fail: %v (%#v)", err, je)
	}
	if _, err := g.Call(ctx, "nothing"); err == nil || !strings.Contains(err.Error(), `no method "nothing"`) {
		t.Fatalf("unknown method: %v", err)
	}
	if _, err := g.Call(ctx, "_private"); err == nil || !strings.Contains(err.Error(), `no method "_private"`) {
		t.Fatalf("private method: %v", err)
	}

	// A runaway call is stopped; the next call gets a fresh instance, state intact.
	if _, err := g.Call(ctx, "loop"); !errors.Is(err, jsruntime.ErrStopped) || !errors.Is(err, runtime.ErrDeadline) {
		t.Fatalf("loop: %v", err)
	}
	if v := call(t, g, "get"); !reflect.DeepEqual(v, map[string]any{"count": 3.0, "label": "n=3", "now": true}) {
		t.Fatalf("get after the loop: %#v", v)
	}

	// State lives in kv, not in the instance: a new gadget over the same store sees it.
	g.Close()
	g2 := newGadget(t, f, counterFiles)
	if v := call(t, g2, "increment"); v != 4.0 {
		t.Fatalf("increment on a new instance: %v", v)
	}
	raw, ok, err := f.store.Get(ctx, "count")
	if err != nil || !ok || string(raw) != "4" {
		t.Fatalf("kv count = %q, %v, %v", raw, ok, err)
	}
}

func TestGadgetConsoleAndArguments(t *testing.T) {
	f := &gadgetFixture{store: kv.NewMemory(0)}
	g := newGadget(t, f, map[string]string{"server.js": `export class Gadget {
  echo(...args) { console.log("echo", args.length); return args }
}`})
	args := []any{"s", 1.5, nil, true, map[string]any{"a": []any{1.0}}}
	if v := call(t, g, "echo", args...); !reflect.DeepEqual(v, args) {
		t.Fatalf("echo: %#v", v)
	}
	if len(f.lines) != 1 || f.lines[0].Text != "echo 5" || f.lines[0].Instance != "counter-1" || f.lines[0].Level != "info" {
		t.Fatalf("console %+v", f.lines)
	}
	if _, err := g.Call(context.Background(), "echo", func() {}); err == nil {
		t.Fatal("an argument that is not JSON was accepted")
	}
}

func TestGadgetRefused(t *testing.T) {
	f := &gadgetFixture{store: kv.NewMemory(0)}
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no server.js", map[string]string{"main.js": "export class Gadget {}"}, "no server.js"},
		{"TypeScript syntax", map[string]string{"server.ts": "export class Gadget {\n  m(x: ) {}\n}"}, "server.ts:2:"},
		{"two files for one name", map[string]string{"server.js": "", "server.ts": ""}, "would both load as server.js"},
	} {
		if _, err := engine(t).NewGadget(f.config(tc.files)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no class", map[string]string{"server.js": "export const Gadget = 1"}, "server.js must export class Gadget"},
		{"JS syntax", map[string]string{"server.js": "export class Gadget {\n  m( {}\n}"}, "SyntaxError"},
		{"missing import", map[string]string{"server.js": `import x from "./nope.js"; export class Gadget {}`}, "cannot import 'nope.js': the gadget has no such file"},
		{"outside import", map[string]string{"server.js": `import x from "std"; export class Gadget {}`}, "cannot import 'std'"},
		{"constructor throws", map[string]string{"server.js": "export class Gadget { constructor() { throw new Error('no start') } }"}, "no start"},
		{"top-level loop", map[string]string{"server.js": "for (;;) {}\nexport class Gadget {}"}, "ran past its deadline"},
	} {
		g, err := engine(t).NewGadget(f.config(tc.files))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, err := g.Methods(ctx); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
		g.Close()
	}

	// Same grant rules as a component gadget: the engine's imports must all be granted.
	cfg := f.config(counterFiles)
	cfg.Grants = []string{"atelier:host/log", "atelier:host/kv"}
	g, err := engine(t).NewGadget(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	_, err = g.Methods(ctx)
	var ue *runtime.UngrantedImportError
	if !errors.As(err, &ue) {
		t.Fatalf("got %v, want an *UngrantedImportError", err)
	}
}

func TestGadgetStorageErrors(t *testing.T) {
	f := &gadgetFixture{store: kv.NewMemory(0)}
	g := newGadget(t, f, map[string]string{"server.js": `export class Gadget {
  put(k, v) { this.storage.put(k, v) }
}`})
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"", 1}, "invalid key"},
		{[]any{strings.Repeat("k", 600), 1}, "invalid key"},
		{[]any{"k", nil}, ""},
		{[]any{1, 1}, "storage keys are strings"},
	} {
		_, err := g.Call(context.Background(), "put", tc.args...)
		if (tc.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tc.want) {
			t.Errorf("put(%.20v): got %v, want %q", tc.args, err, tc.want)
		}
	}
	if len(f.events) != 0 {
		t.Errorf("events %+v", f.events)
	}
}
