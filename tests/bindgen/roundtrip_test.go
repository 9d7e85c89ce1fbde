// Package bindgen_test checks the Go bindings that `atelier bindgen` generates against the
// runtime: a guest written only against generated bindings (guest/, world
// guest/wit/roundtrip.wit) exchanges a value of every WIT type with the host in both
// directions, implements a resource, and uses one the host implements.
package bindgen_test

import (
	"context"
	"errors"
	"math"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
	"atelier/sdk/guesttest"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // every Wasmtime error would capture a slow Rust backtrace
	os.Exit(m.Run())
}

const (
	hostIface = "test:bindgen/host@0.1.0"
	guestPfx  = "test:bindgen/guest#"
)

// echoHost implements test:bindgen/host: each echo function returns its argument and
// remembers it, so that the test also sees what the guest sent.
type echoHost struct {
	mu   sync.Mutex
	seen map[string]any
}

func (h *echoHost) last(fn string) any {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.seen[fn]
}

func (h *echoHost) iface() runtime.HostInterface {
	hi := runtime.HostInterface{Name: hostIface}
	record := func(fn string, v any) {
		h.mu.Lock()
		h.seen[fn] = v
		h.mu.Unlock()
	}
	for _, c := range echoCases {
		fn := "echo-" + c.name
		if slicesContain(hi.Funcs, fn) {
			continue
		}
		hi.Funcs = append(hi.Funcs, runtime.HostFunc{Name: fn, Func: func(_ context.Context, _ *runtime.HostCall, args []any) (any, error) {
			record(fn, args[0])
			if m, ok := args[0].(map[string]any); ok && strings.HasPrefix(fn, "echo-result") {
				if e, isErr := m["err"]; isErr {
					return nil, runtime.Fail(e)
				}
				return m["ok"], nil
			}
			return args[0], nil
		}})
	}
	hi.Funcs = append(hi.Funcs,
		runtime.HostFunc{Name: "echo-spill", Func: func(_ context.Context, _ *runtime.HostCall, args []any) (any, error) {
			record("echo-spill", args)
			var sum uint64
			var cat string
			for _, a := range args[:8] {
				sum += a.(uint64)
			}
			for _, a := range args[8:] {
				cat += a.(string)
			}
			return []any{sum, cat}, nil
		}},
		runtime.HostFunc{Name: "lookup", Func: func(_ context.Context, _ *runtime.HostCall, args []any) (any, error) {
			if args[0] == "origin" {
				return map[string]any{"x": 0, "y": 0, "label": "origin"}, nil
			}
			return nil, runtime.Fail("blue")
		}},
	)
	return hi
}

func slicesContain(fs []runtime.HostFunc, name string) bool {
	for _, f := range fs {
		if f.Name == name {
			return true
		}
	}
	return false
}

var (
	// Records in the form the host lifts them: ordered.Objects in declaration order.
	point = ordered.Object{{Key: "x", Value: int32(-7)}, {Key: "y", Value: int32(math.MaxInt32)}, {Key: "label", Value: "p☃"}}
	item  = ordered.Object{
		{Key: "title", Value: "héllo"}, {Key: "tags", Value: []any{"a", "", "b"}}, {Key: "count", Value: uint32(3)},
		{Key: "perms", Value: []string{"read", "exec"}}, {Key: "score", Value: 0.5},
		{Key: "kind", Value: map[string]any{"tag": "rect", "val": point}},
	}
	itemNone = ordered.Object{
		{Key: "title", Value: ""}, {Key: "tags", Value: []any{}}, {Key: "count", Value: uint32(0)},
		{Key: "perms", Value: []string{}}, {Key: "score", Value: nil}, {Key: "kind", Value: map[string]any{"tag": "none"}},
	}
	many = ordered.Object{{Key: "f0", Value: "a"}, {Key: "f1", Value: "b"}, {Key: "f2", Value: "c"}, {Key: "f3", Value: "d"}, {Key: "f4", Value: "e"},
		{Key: "f5", Value: "f"}, {Key: "f6", Value: "g"}, {Key: "f7", Value: "h"}, {Key: "f8", Value: strings.Repeat("i", 5000)}}
)

// echoCases has values of every WIT type in the runtime's JSON-ish form, as the guest's
// export returns them after a round trip through the host.
var echoCases = []struct {
	name string
	val  any
}{
	{"bool", true}, {"bool", false},
	{"s8", int8(math.MinInt8)}, {"s8", int8(-1)}, {"u8", uint8(math.MaxUint8)},
	{"s16", int16(math.MinInt16)}, {"u16", uint16(math.MaxUint16)},
	{"s32", int32(math.MinInt32)}, {"u32", uint32(math.MaxUint32)},
	{"s64", int64(math.MinInt64)}, {"u64", uint64(math.MaxUint64)},
	{"f32", float32(-1.25)}, {"f32", float32(math.Inf(1))}, {"f64", math.Inf(-1)}, {"f64", math.SmallestNonzeroFloat64},
	{"char", "🎉"}, {"char", "\x00"},
	{"string", "héllo, wörld"}, {"string", ""},
	{"bytes", []byte{0, 1, 255}}, {"bytes", []byte{}},
	{"strings", []any{"", "x", "yz"}}, {"strings", []any{}},
	{"point", point},
	{"tuple", []any{uint32(7), "seven", false}},
	{"shape", map[string]any{"tag": "none"}},
	{"shape", map[string]any{"tag": "circle", "val": 2.5}},
	{"shape", map[string]any{"tag": "rect", "val": point}},
	{"shape", map[string]any{"tag": "named", "val": "n"}},
	{"color", "red"}, {"color", "blue"},
	{"option", nil}, {"option", uint32(9)},
	{"option-option", nil},
	{"option-option", map[string]any{"some": nil}},
	{"option-option", map[string]any{"some": "in"}},
	{"result", map[string]any{"ok": "yes"}}, {"result", map[string]any{"err": uint32(4)}},
	{"result-empty", map[string]any{"ok": nil}}, {"result-empty", map[string]any{"err": nil}},
	{"perms", []string{}}, {"perms", []string{"read", "write", "exec"}},
	{"wide", []string{"w0", "w7", "w8", "w16", "w31"}},
	{"item", item}, {"item", itemNone},
	{"items", []any{item, itemNone, item}}, {"items", []any{}},
	{"many", many},
	{"mixed", map[string]any{"tag": "small", "val": float32(-0.75)}},
	{"mixed", map[string]any{"tag": "word", "val": uint32(math.MaxUint32)}},
	{"mixed", map[string]any{"tag": "big", "val": int64(math.MinInt64)}},
	{"mixed", map[string]any{"tag": "real", "val": math.Pi}},
	{"mixed", map[string]any{"tag": "pair", "val": []any{uint8(200), float32(1.5)}}},
	{"nested", ordered.Object{
		{Key: "opts", Value: []any{nil, point}},
		{Key: "results", Value: []any{map[string]any{"ok": "green"}, map[string]any{"err": "bad"}}},
		{Key: "tuples", Value: []any{
			[]any{int8(-3), nil},
			[]any{int8(4), map[string]any{"tag": "real", "val": -2.5}},
			[]any{int8(5), map[string]any{"tag": "pair", "val": []any{uint8(1), float32(2)}}},
		}},
		{Key: "deep", Value: map[string]any{"ok": []byte("deep")}},
	}},
	{"nested", ordered.Object{{Key: "opts", Value: []any{}}, {Key: "results", Value: []any{}}, {Key: "tuples", Value: []any{}}, {Key: "deep", Value: map[string]any{"err": nil}}}},
	{"nested", ordered.Object{{Key: "opts", Value: []any{}}, {Key: "results", Value: []any{}}, {Key: "tuples", Value: []any{}}, {Key: "deep", Value: nil}}},
	{"words", []any{"one", "two"}},
}

// fixture is an instance of the round-trip guest and the host it talks to.
type fixture struct {
	host  *echoHost
	files *fileHost
	inst  *runtime.Instance
}

// shared is the runtime and the compiled guest, made once per test process (compiling a Go
// component takes seconds).
var shared struct {
	once  sync.Once
	host  *echoHost
	files *fileHost
	rt    *runtime.Runtime
	comp  *runtime.Component
	err   error
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	path := guesttest.Path(t, "tests/bindgen/guest")
	shared.once.Do(func() {
		shared.host = &echoHost{seen: map[string]any{}}
		shared.files = &fileHost{drops: map[string][]string{}}
		host := shared.host.iface()
		shared.files.addTo(&host)
		// The guest imports test:bindgen/types too (the interface its types come from): it has no
		// functions, so an empty interface provides it.
		ifaces := []runtime.HostInterface{host, {Name: "test:bindgen/types@0.1.0"}}
		if shared.rt, shared.err = runtime.New(runtime.Config{NoCache: true, Interfaces: ifaces}); shared.err != nil {
			return
		}
		var src []byte
		if src, shared.err = os.ReadFile(path); shared.err != nil {
			return
		}
		shared.comp, shared.err = shared.rt.Compile(context.Background(), src)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	inst, err := shared.rt.Instantiate(context.Background(), shared.comp, runtime.InstanceConfig{
		Name:    t.Name(),
		Grants:  append(runtime.WASIBaseline(), "test:bindgen/host", "test:bindgen/types"),
		Console: func(l runtime.ConsoleLine) { t.Logf("guest %s: %s", l.Stream, l.Text) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	return &fixture{host: shared.host, files: shared.files, inst: inst}
}

// call calls a guest export and returns the result, with a WIT result's err payload as
// {"err": v} (the runtime unwraps results at the function boundary).
func (f *fixture) call(t *testing.T, fn string, args ...any) any {
	t.Helper()
	got, isErr := f.callResult(t, fn, args...)
	if isErr {
		return map[string]any{"err": got}
	}
	return got
}

// callResult calls a guest export and returns the result and whether it is a WIT result's
// err payload.
func (f *fixture) callResult(t *testing.T, fn string, args ...any) (any, bool) {
	t.Helper()
	got, err := f.inst.Call(context.Background(), guestPfx+fn, args...)
	var rerr *runtime.ResultError
	if errors.As(err, &rerr) {
		return rerr.Value, true
	}
	if err != nil {
		t.Fatalf("%s: %v", fn, err)
	}
	return got, false
}

func TestEchoEveryType(t *testing.T) {
	f := newFixture(t)
	for _, c := range echoCases {
		t.Run(c.name, func(t *testing.T) {
			got, isErr := f.callResult(t, "echo-"+c.name, c.val)
			if strings.HasPrefix(c.name, "result") { // rewrap the function-level result
				side := map[bool]string{false: "ok", true: "err"}[isErr]
				got = map[string]any{side: got}
			}
			seen := f.host.last("echo-" + c.name)
			if !reflect.DeepEqual(got, c.val) {
				t.Errorf("guest returned %#v, want %#v", got, c.val)
			}
			if !reflect.DeepEqual(seen, c.val) {
				t.Errorf("host import received %#v, want %#v", seen, c.val)
			}
		})
	}
	if err := f.inst.Retired(); err != nil {
		t.Fatalf("instance retired: %v", err)
	}
}

func TestSpilledParams(t *testing.T) {
	f := newFixture(t)
	// The u64 sum wraps around to 0: every value crossed the boundary at full width.
	args := []any{uint64(1), uint64(2), uint64(3), uint64(4), uint64(5), uint64(6), uint64(7), uint64(math.MaxUint64 - 27), "a", "bé", "", "d"}
	got := f.call(t, "echo-spill", args...)
	if want := []any{uint64(0), "abéd"}; !reflect.DeepEqual(got, want) {
		t.Errorf("echo-spill = %#v, want %#v", got, want)
	}
	if seen := f.host.last("echo-spill"); !reflect.DeepEqual(seen, args) {
		t.Errorf("host received %#v, want %#v", seen, args)
	}
}

// TestGoValues: the guest sees typed Go values (it renders them) and results as (T, error).
func TestGoValues(t *testing.T) {
	f := newFixture(t)
	if got, want := f.call(t, "describe", item), "héllo [a,,b] count=3 perms=read|exec score=0.5 kind=rect(-7,2147483647,p☃)"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if got, want := f.call(t, "describe", itemNone), " [] count=0 perms= score=none kind=none"; got != want {
		t.Errorf("describe = %q, want %q", got, want)
	}
	if got := f.call(t, "lookup", "origin"); !reflect.DeepEqual(got, ordered.Object{{Key: "x", Value: int32(0)}, {Key: "y", Value: int32(0)}, {Key: "label", Value: "origin"}}) {
		t.Errorf("lookup(origin) = %#v", got)
	}
	if got := f.call(t, "lookup", "elsewhere"); !reflect.DeepEqual(got, map[string]any{"err": "blue"}) {
		t.Errorf("lookup(elsewhere) = %#v, want the err payload blue", got)
	}
	got, err := f.inst.Call(context.Background(), "ping", 3)
	if err != nil || got != "pong pong pong " {
		t.Errorf("ping(3) = %#v, %v", got, err)
	}
}

func TestExportedResource(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	h, ok := f.call(t, "[constructor]counter", 5).(wit.Handle)
	if !ok {
		t.Fatal("the constructor did not return a handle")
	}
	f.call(t, "[method]counter.add", h, 3)
	if got := f.call(t, "[method]counter.get", h); got != uint32(8) {
		t.Errorf("get = %v, want 8", got)
	}
	if got := f.call(t, "peek", h); got != uint32(8) {
		t.Errorf("peek (borrow) = %v, want 8", got)
	}
	made := f.call(t, "[static]counter.make", 4).(wit.Handle)
	if made == h {
		t.Fatal("two counters share a handle")
	}
	if got := f.call(t, "consume", made); got != uint32(40) {
		t.Errorf("consume = %v, want 40", got)
	}
	// consume took ownership: its value left the guest's table without Drop.
	if got := f.call(t, "dropped"); got != uint32(0) {
		t.Errorf("dropped after consume = %v, want 0", got)
	}
	if _, err := f.inst.Call(ctx, guestPfx+"consume", made); !errors.Is(err, runtime.ErrUnknownHandle) {
		t.Errorf("second consume: got %v, want ErrUnknownHandle", err)
	}
	if err := f.inst.DropResource(ctx, h); err != nil {
		t.Fatal(err)
	}
	if got := f.call(t, "dropped"); got != uint32(1) {
		t.Errorf("dropped after DropResource = %v, want 1 (Drop ran)", got)
	}
	if _, err := f.inst.Call(ctx, guestPfx+"[method]counter.get", h); !errors.Is(err, runtime.ErrUnknownHandle) {
		t.Errorf("get after drop: got %v, want ErrUnknownHandle", err)
	}
	if err := f.inst.Retired(); err != nil {
		t.Fatalf("instance retired: %v", err)
	}
}
