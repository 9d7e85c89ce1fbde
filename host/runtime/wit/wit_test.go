package wit_test

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/runtime/wit"
)

func prim(k wit.Kind) *wit.Type { return &wit.Type{Kind: k} }

var (
	tU32   = prim(wit.U32)
	tStr   = prim(wit.String)
	tPoint = &wit.Type{Kind: wit.Record, Name: "point", Fields: []wit.Field{{Name: "x", Type: prim(wit.S32)}, {Name: "label", Type: tStr}}}
	tShape = &wit.Type{Kind: wit.Variant, Name: "shape", Cases: []wit.Case{{Name: "none"}, {Name: "circle", Type: prim(wit.F64)}, {Name: "rect", Type: tPoint}}}
	tOptO  = &wit.Type{Kind: wit.Option, Elem: &wit.Type{Kind: wit.Option, Elem: tStr}}
	tRes   = &wit.Type{Kind: wit.Result, Ok: tStr, Err: tU32}
	tFlags = &wit.Type{Kind: wit.Flags, Name: "perms", Names: []string{"read", "write", "exec"}}
	tItem  = &wit.Type{Kind: wit.Record, Name: "item", Fields: []wit.Field{
		{Name: "title", Type: tStr}, {Name: "count", Type: tU32},
		{Name: "score", Type: &wit.Type{Kind: wit.Option, Elem: prim(wit.F64)}},
	}}
)

func TestRender(t *testing.T) {
	tests := []struct {
		name string
		typ  *wit.Type
		want string
	}{
		{"named", tPoint, "point"},
		{"list", &wit.Type{Kind: wit.List, Elem: prim(wit.U8)}, "list<u8>"},
		{"result", tRes, "result<string, u32>"},
		{"result_ok_only", &wit.Type{Kind: wit.Result, Ok: tStr}, "result<string>"},
		{"result_err_only", &wit.Type{Kind: wit.Result, Err: tStr}, "result<_, string>"},
		{"result_empty", &wit.Type{Kind: wit.Result}, "result"},
		{"nested", &wit.Type{Kind: wit.Result, Ok: &wit.Type{Kind: wit.Option, Elem: &wit.Type{Kind: wit.List, Elem: prim(wit.U8)}}, Err: tShape}, "result<option<list<u8>>, shape>"},
		{"anonymous_record", &wit.Type{Kind: wit.Record, Fields: []wit.Field{{Name: "a", Type: tU32}}}, "record { a: u32 }"},
		{"tuple", &wit.Type{Kind: wit.Tuple, Elems: []*wit.Type{tU32, tStr}}, "tuple<u32, string>"},
		{"borrow", &wit.Type{Kind: wit.Borrow, Resource: "file"}, "borrow<file>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.typ.String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got, want := tShape.Definition(), "variant shape { none, circle(f64), rect(point) }"; got != want {
		t.Errorf("Definition: got %q, want %q", got, want)
	}
	ft := &wit.FuncType{Params: []wit.Param{{Name: "key", Type: tStr}}, Result: tRes}
	if got, want := ft.String(), "func(key: string) -> result<string, u32>"; got != want {
		t.Errorf("FuncType: got %q, want %q", got, want)
	}
}

// TestRoundTrip lowers JSON-ish values and lifts them back.
func TestRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		typ  *wit.Type
		in   any
		want any // lifted form; nil means equal to in
	}{
		{"bool", prim(wit.Bool), true, nil},
		{"s8_min", prim(wit.S8), -128, int8(-128)},
		{"u64_max", prim(wit.U64), uint64(math.MaxUint64), nil},
		{"u64_json", prim(wit.U64), json.Number("18446744073709551615"), uint64(math.MaxUint64)},
		{"s64_json_min", prim(wit.S64), json.Number("-9223372036854775808"), int64(math.MinInt64)},
		{"u32_from_float", tU32, 42.0, uint32(42)},
		{"u32_json_exp", tU32, json.Number("1e3"), uint32(1000)},
		{"f32", prim(wit.F32), 1.5, float32(1.5)},
		{"f64_int", prim(wit.F64), 3, float64(3)},
		{"char", prim(wit.Char), "é", nil},
		{"char_astral", prim(wit.Char), "🎉", nil},
		{"string", tStr, "héllo", nil},
		{"bytes", &wit.Type{Kind: wit.List, Elem: prim(wit.U8)}, []byte{1, 2}, nil},
		{"bytes_from_numbers", &wit.Type{Kind: wit.List, Elem: prim(wit.U8)}, []any{1.0, json.Number("255")}, []byte{1, 255}},
		{"typed_slice", &wit.Type{Kind: wit.List, Elem: tStr}, []string{"a", "b"}, []any{"a", "b"}},
		{"record", tPoint, map[string]any{"x": -1, "label": "p"}, ordered.Object{{Key: "x", Value: int32(-1)}, {Key: "label", Value: "p"}}},
		{"record_ordered", tPoint, ordered.Object{{Key: "label", Value: "p"}, {Key: "x", Value: 2}}, ordered.Object{{Key: "x", Value: int32(2)}, {Key: "label", Value: "p"}}},
		{"record_repeated_key", tPoint, ordered.Object{{Key: "x", Value: 1}, {Key: "label", Value: "p"}, {Key: "x", Value: 3}}, ordered.Object{{Key: "x", Value: int32(3)}, {Key: "label", Value: "p"}}},
		{"record_absent_option", tItem, map[string]any{"title": "t", "count": 1}, ordered.Object{{Key: "title", Value: "t"}, {Key: "count", Value: uint32(1)}, {Key: "score", Value: nil}}},
		{"variant_payload", tShape, map[string]any{"tag": "circle", "val": 2.0}, nil},
		{"variant_bare_string", tShape, "none", map[string]any{"tag": "none"}},
		{"variant_nested", tShape, map[string]any{"tag": "rect", "val": map[string]any{"x": 1, "label": ""}}, map[string]any{"tag": "rect", "val": ordered.Object{{Key: "x", Value: int32(1)}, {Key: "label", Value: ""}}}},
		{"variant_ordered", tShape, ordered.Object{{Key: "val", Value: 2.0}, {Key: "tag", Value: "circle"}}, map[string]any{"tag": "circle", "val": 2.0}},
		{"enum", &wit.Type{Kind: wit.Enum, Names: []string{"a", "b"}}, "b", nil},
		{"option_none", &wit.Type{Kind: wit.Option, Elem: tU32}, nil, nil},
		{"option_some", &wit.Type{Kind: wit.Option, Elem: tU32}, 7, uint32(7)},
		{"option_option_none", tOptO, nil, nil},
		{"option_option_some_none", tOptO, map[string]any{"some": nil}, nil},
		{"option_option_some_some", tOptO, map[string]any{"some": "x"}, nil},
		{"option_option_ordered", tOptO, ordered.Object{{Key: "some", Value: "x"}}, map[string]any{"some": "x"}},
		{"result_ok", tRes, map[string]any{"ok": "fine"}, nil},
		{"result_ordered", tRes, ordered.Object{{Key: "ok", Value: "a"}, {Key: "ok", Value: "b"}}, map[string]any{"ok": "b"}},
		{"result_err", tRes, map[string]any{"err": 3}, map[string]any{"err": uint32(3)}},
		{"result_empty", &wit.Type{Kind: wit.Result}, map[string]any{"err": nil}, nil},
		{"flags_list", tFlags, []any{"exec", "read"}, []string{"read", "exec"}},
		{"flags_map", tFlags, map[string]any{"write": true, "read": false}, []string{"write"}},
		{"tuple", &wit.Type{Kind: wit.Tuple, Elems: []*wit.Type{tU32, tStr}}, []any{1, "a"}, []any{uint32(1), "a"}},
		{"handle", &wit.Type{Kind: wit.Own, Resource: "r"}, wit.Handle(3), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f wit.Flat
			if err := wit.Lower(tt.typ, tt.in, "v", &f); err != nil {
				t.Fatalf("Lower: %v", err)
			}
			got, err := wit.Lift(tt.typ, &f, "v")
			if err != nil {
				t.Fatalf("Lift: %v", err)
			}
			if _, err := wit.Lift(tt.typ, &f, "v"); !errors.Is(err, wit.ErrFlatShort) {
				t.Errorf("lifting past the end: %v, want ErrFlatShort", err)
			}
			want := tt.want
			if want == nil {
				want = tt.in
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v, want %#v", got, want)
			}
		})
	}
}

func TestLowerErrors(t *testing.T) {
	list := func(e *wit.Type) *wit.Type { return &wit.Type{Kind: wit.List, Elem: e} }
	items := &wit.Type{Kind: wit.Record, Fields: []wit.Field{{Name: "items", Type: list(tItem)}}}
	tests := []struct {
		name string
		typ  *wit.Type
		in   any
		want string
	}{
		{"path", items, map[string]any{"items": []any{
			map[string]any{"title": "a", "count": 1}, map[string]any{"title": 5, "count": 1},
		}}, "args[0].items[1].title: want string, got number"},
		{"wrong_kind", tU32, "7", "args[0]: want u32, got string"},
		{"u8_range", prim(wit.U8), 256, "out of range for u8"},
		{"s8_range", prim(wit.S8), -129, "out of range for s8"},
		{"u32_negative", tU32, -1, "out of range for u32"},
		{"u64_fraction", prim(wit.U64), 1.5, "out of range for u64"},
		{"s64_float_overflow", prim(wit.S64), 9.3e18, "out of range for s64"},
		{"u32_nan", tU32, math.NaN(), "out of range for u32"},
		{"u32_inf", tU32, math.Inf(1), "out of range for u32"},
		{"f32_range", prim(wit.F32), 1e39, "out of range for f32"},
		{"bad_json_number", tU32, json.Number("x"), "want u32, got json.Number"},
		{"invalid_utf8", tStr, "a\xffb", "not valid UTF-8"},
		{"char_two", prim(wit.Char), "ab", "exactly one Unicode scalar"},
		{"char_empty", prim(wit.Char), "", "exactly one Unicode scalar"},
		{"char_invalid", prim(wit.Char), "\xed\xa0\x80", "exactly one Unicode scalar"},
		{"missing_field", tPoint, map[string]any{"x": 1}, `missing field "label"`},
		{"unknown_field", tPoint, map[string]any{"x": 1, "label": "", "z": 0}, `unknown field "z"`},
		{"unknown_field_ordered", tPoint, ordered.Object{{Key: "x", Value: 1}, {Key: "z", Value: 0}, {Key: "label", Value: ""}}, `unknown field "z"`},
		{"missing_field_ordered", tPoint, ordered.Object{{Key: "label", Value: ""}}, `missing field "x"`},
		{"variant_unknown_key_ordered", tShape, ordered.Object{{Key: "tag", Value: "none"}, {Key: "x", Value: 1}}, `unknown key "x"`},
		{"result_two_keys_ordered", tRes, ordered.Object{{Key: "ok", Value: ""}, {Key: "err", Value: 1}}, `want {"ok": value}`},
		{"variant_unknown_case", tShape, "square", `"square" is not a case`},
		{"variant_missing_val", tShape, map[string]any{"tag": "circle"}, `needs a "val"`},
		{"variant_extra_val", tShape, map[string]any{"tag": "none", "val": 1}, "has no payload"},
		{"variant_no_tag", tShape, map[string]any{"val": 1}, `string "tag"`},
		{"option_option_bare", tOptO, "x", `{"some": value}`},
		{"result_two_keys", tRes, map[string]any{"ok": "", "err": 1}, `want {"ok": value}`},
		{"result_bad_key", tRes, map[string]any{"maybe": 1}, `got key "maybe"`},
		{"result_err_type", tRes, map[string]any{"err": "x"}, "args[0].err: want u32"},
		{"flags_unknown", tFlags, []any{"fly"}, `"fly" is not a flag`},
		{"flags_not_bool", tFlags, map[string]any{"read": 1}, "args[0].read: want bool"},
		{"tuple_len", &wit.Type{Kind: wit.Tuple, Elems: []*wit.Type{tU32}}, []any{1, 2}, "want 1 tuple elements, got 2"},
		{"handle_number", &wit.Type{Kind: wit.Own}, 1, "want resource, got number"},
		{"future", &wit.Type{Kind: wit.Future}, nil, "not supported"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var f wit.Flat
			err := wit.LowerArg(tt.typ, tt.in, 0, &f)
			var ve *wit.ValueError
			if !errors.As(err, &ve) {
				t.Fatalf("got %v, want a *ValueError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %q, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestLiftRejectsMismatch: a canonical value that does not match its type (too short, or a
// discriminant out of range) is an error, not a panic.
func TestLiftRejectsMismatch(t *testing.T) {
	for _, tc := range []struct {
		typ *wit.Type
		f   wit.Flat
	}{
		{tU32, wit.Flat{}},
		{tPoint, wit.Flat{Words: []uint64{1}}},
		{tShape, wit.Flat{Words: []uint64{3}}},
		{tOptO, wit.Flat{Words: []uint64{2}}},
		{tRes, wit.Flat{Words: []uint64{1}}},
		{tRes, wit.Flat{Words: []uint64{7}, Strs: []string{"x"}}},
		{tFlags, wit.Flat{Strs: []string{"read"}}},
		{&wit.Type{Kind: wit.List, Elem: tU32}, wit.Flat{Words: []uint64{1 << 40}}},
		{&wit.Type{Kind: wit.Future}, wit.Flat{Words: []uint64{1}}},
	} {
		if v, err := wit.Lift(tc.typ, &tc.f, "result"); err == nil {
			t.Errorf("Lift(%s, %+v) = %#v, want an error", tc.typ, tc.f, v)
		}
	}
}

// TestReturn: LowerReturn and LiftReturn unwrap a function's result type.
func TestReturn(t *testing.T) {
	for _, tc := range []struct {
		typ   *wit.Type
		v     any
		isErr bool
		want  any
	}{
		{tRes, "fine", false, "fine"},
		{tRes, 3, true, uint32(3)},
		{&wit.Type{Kind: wit.Result}, nil, true, nil},
		{tU32, 5, false, uint32(5)},
	} {
		var f wit.Flat
		if err := wit.LowerReturn(tc.typ, tc.v, tc.isErr, &f); err != nil {
			t.Fatalf("LowerReturn(%s, %v, %t): %v", tc.typ, tc.v, tc.isErr, err)
		}
		got, isErr, err := wit.LiftReturn(tc.typ, &f)
		if err != nil || isErr != tc.isErr || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("LiftReturn(%s) = %#v, %t, %v; want %#v, %t", tc.typ, got, isErr, err, tc.want, tc.isErr)
		}
	}
	var f wit.Flat
	if err := wit.LowerReturn(tU32, 1, true, &f); err == nil {
		t.Error("LowerReturn accepted an error for a non-result type")
	}
	if err := wit.LowerReturn(&wit.Type{Kind: wit.Result, Ok: tU32}, 1, true, &f); err == nil || !strings.Contains(err.Error(), "result: err of result<u32> has no payload") {
		t.Errorf("LowerReturn with a payload for a side without type: %v", err)
	}
	if err := wit.LowerReturn(tRes, "x", true, &f); err == nil || !strings.HasPrefix(err.Error(), "result.err: want u32") {
		t.Errorf("LowerReturn with a bad err payload: %v", err)
	}
}

func TestUnversioned(t *testing.T) {
	for in, want := range map[string]string{
		"atelier:host/kv@0.1.0": "atelier:host/kv", "wasi:cli/stdout": "wasi:cli/stdout", "run": "run",
	} {
		if got := wit.Unversioned(in); got != want {
			t.Errorf("Unversioned(%q) = %q, want %q", in, got, want)
		}
	}
}
