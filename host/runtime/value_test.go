package runtime_test

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

var item = map[string]any{
	"title": "héllo", "tags": []any{"a", "b"}, "count": uint32(3), "perms": []string{"read", "exec"},
	"score": 0.5, "kind": map[string]any{"tag": "rect", "val": map[string]any{"x": int32(-1), "y": int32(2), "label": "r"}},
}

// itemLifted is item as it comes back: records are ordered.Objects in declaration order.
var itemLifted = ordered.Object{
	{Key: "title", Value: "héllo"}, {Key: "tags", Value: []any{"a", "b"}}, {Key: "count", Value: uint32(3)},
	{Key: "perms", Value: []string{"read", "exec"}}, {Key: "score", Value: 0.5},
	{Key: "kind", Value: map[string]any{"tag": "rect", "val": ordered.Object{{Key: "x", Value: int32(-1)}, {Key: "y", Value: int32(2)}, {Key: "label", Value: "r"}}}},
}

// echoCases has a value of every WIT type, in JSON-ish form, and what comes back.
var echoCases = []struct {
	name string
	in   any
	want any
}{
	{"bool", true, true},
	{"s8", -128, int8(-128)},
	{"u8", 255, uint8(255)},
	{"s16", -32768, int16(-32768)},
	{"u16", 65535, uint16(65535)},
	{"s32", math.MinInt32, int32(math.MinInt32)},
	{"u32", uint32(math.MaxUint32), uint32(math.MaxUint32)},
	{"s64", int64(math.MinInt64), int64(math.MinInt64)},
	{"u64", uint64(math.MaxUint64), uint64(math.MaxUint64)},
	{"f32", 1.25, float32(1.25)},
	{"f64", math.Inf(-1), math.Inf(-1)},
	{"char", "🎉", "🎉"},
	{"string", "héllo, wörld", "héllo, wörld"},
	{"bytes", []byte{0, 1, 255}, []byte{0, 1, 255}},
	{"strings", []any{"", "x", "yz"}, []any{"", "x", "yz"}},
	{"point", map[string]any{"x": 1, "y": -2, "label": "p"}, ordered.Object{{Key: "x", Value: int32(1)}, {Key: "y", Value: int32(-2)}, {Key: "label", Value: "p"}}},
	{"point", ordered.Object{{Key: "label", Value: "p"}, {Key: "x", Value: 1}, {Key: "y", Value: -2}}, ordered.Object{{Key: "x", Value: int32(1)}, {Key: "y", Value: int32(-2)}, {Key: "label", Value: "p"}}},
	{"tuple", []any{7, "seven", false}, []any{uint32(7), "seven", false}},
	{"shape", map[string]any{"tag": "circle", "val": 2.5}, map[string]any{"tag": "circle", "val": 2.5}},
	{"shape", "none", map[string]any{"tag": "none"}},
	{"shape", map[string]any{"tag": "named", "val": "n"}, map[string]any{"tag": "named", "val": "n"}},
	{"color", "blue", "blue"},
	{"option", nil, nil},
	{"option", 9, uint32(9)},
	{"option-option", nil, nil},
	{"option-option", map[string]any{"some": nil}, map[string]any{"some": nil}},
	{"option-option", map[string]any{"some": "in"}, map[string]any{"some": "in"}},
	{"result", map[string]any{"ok": "yes"}, map[string]any{"ok": "yes"}},
	{"result", map[string]any{"err": 4}, map[string]any{"err": uint32(4)}},
	{"result-empty", map[string]any{"ok": nil}, map[string]any{"ok": nil}},
	{"result-empty", map[string]any{"err": nil}, map[string]any{"err": nil}},
	{"perms", []any{"write"}, []string{"write"}},
	{"perms", map[string]any{"read": true, "exec": true}, []string{"read", "exec"}},
	{"item", item, itemLifted},
	{"item", itemLifted, itemLifted},
	{"items", []any{item, item}, []any{itemLifted, itemLifted}},
	{"items", []any{}, []any{}},
	{"many", map[string]any{"f0": "a", "f1": "b", "f2": "c", "f3": "d", "f4": "e", "f5": "f", "f6": "g", "f7": "h", "f8": "i"},
		ordered.Object{{Key: "f0", Value: "a"}, {Key: "f1", Value: "b"}, {Key: "f2", Value: "c"}, {Key: "f3", Value: "d"}, {Key: "f4", Value: "e"},
			{Key: "f5", Value: "f"}, {Key: "f6", Value: "g"}, {Key: "f7", Value: "h"}, {Key: "f8", Value: "i"}}},
}

// TestEcho sends a value of every WIT type host -> guest -> host import -> guest -> host.
func TestEcho(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	inst := f.instance(t, runtime.InstanceConfig{})
	for _, tc := range echoCases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := inst.Call(context.Background(), "echo-"+tc.name, tc.in)
			var rerr *runtime.ResultError
			if errors.As(err, &rerr) { // function-level result unwrapping
				got, err = map[string]any{"err": rerr.Value}, nil
			} else if err == nil && (tc.name == "result" || tc.name == "result-empty") {
				got = map[string]any{"ok": got}
			}
			if err != nil {
				t.Fatal(err)
			}
			if !sameValue(got, tc.want) {
				t.Errorf("echo returned %#v, want %#v", got, tc.want)
			}
			if seen := f.host.seen("echo-" + tc.name); !sameValue(seen, tc.want) {
				t.Errorf("host import received %#v, want %#v", seen, tc.want)
			}
		})
	}
	if err := inst.Retired(); err != nil {
		t.Fatalf("instance retired: %v", err)
	}
}

func TestCallErrors(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	inst := f.instance(t, runtime.InstanceConfig{})
	ctx := context.Background()
	_, err := inst.Call(ctx, "echo-item", map[string]any{"title": 1})
	var ve *wit.ValueError
	if !errors.As(err, &ve) || ve.Path != "args[0].title" {
		t.Errorf("bad argument: got %v, want a *wit.ValueError at args[0].title", err)
	}
	if _, err := inst.Call(ctx, "nope"); !errors.Is(err, runtime.ErrNoExport) {
		t.Errorf("unknown export: got %v, want ErrNoExport", err)
	}
	if _, err := inst.Call(ctx, "add", 1); err == nil {
		t.Error("wrong argument count: no error")
	}
	if _, err := inst.Call(ctx, "echo-u8", 256); err == nil {
		t.Error("out of range: no error")
	}
	if got, err := inst.Call(ctx, "add", 2, 3); err != nil || got != uint32(5) {
		t.Errorf("add after refused calls: %v, %v (the refusals must not retire the instance)", got, err)
	}
}

// TestHostFunctionFailure: a host function that fails traps the guest with the host's error.
func TestHostFunctionFailure(t *testing.T) {
	boom := errors.New("host is unhappy")
	hi := runtime.HostInterface{Name: "test:echo/host"}
	for _, name := range echoTypes {
		hi.Funcs = append(hi.Funcs, runtime.HostFunc{Name: "echo-" + name, Func: func(context.Context, *runtime.HostCall, []any) (any, error) {
			if name == "u32" {
				panic("host function panics")
			}
			if name == "string" {
				return 42, nil // wrong result type
			}
			return nil, boom
		}})
	}
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: []runtime.HostInterface{hi}})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	comp := compileFile(t, rt, "testdata/echo.wat")
	for _, tc := range []struct {
		fn   string
		arg  any
		want string
	}{
		{"echo-bool", true, "host is unhappy"},
		{"echo-u32", 1, "panic: host function panics"},
		{"echo-string", "s", "want string, got number"},
	} {
		slot := rt.NewSlot(comp, runtime.InstanceConfig{Grants: echoGrants})
		_, err := slot.Call(context.Background(), tc.fn, tc.arg)
		var te *runtime.TrapError
		if !errors.As(err, &te) || !errors.Is(err, runtime.ErrTrap) {
			t.Fatalf("%s: got %v, want a TrapError", tc.fn, err)
		}
		if te.Host == nil || !strings.Contains(te.Host.Error(), tc.want) && !strings.Contains(te.Message, tc.want) {
			t.Errorf("%s: got %v (host %v), want mention of %q", tc.fn, err, te.Host, tc.want)
		}
		if tc.fn == "echo-bool" && !errors.Is(err, boom) {
			t.Errorf("errors.Is(err, boom) = false for %v", err)
		}
		if got, err := slot.Call(context.Background(), "add", 1, 1); err != nil || got != uint32(2) {
			t.Errorf("next call on a fresh instance: %v, %v", got, err)
		}
		slot.Close()
	}
}
