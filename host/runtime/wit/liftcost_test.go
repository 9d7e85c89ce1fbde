package wit_test

import (
	"testing"

	"atelier/host/runtime/wit"
)

// TestLiftFactor checks LiftFactor on the result types the runtime sees: none for a result
// without lists or strings, the measured constants over the element's canonical size for a
// list, the largest over nested lists, and none for a string alone.
func TestLiftFactor(t *testing.T) {
	u32 := &wit.Type{Kind: wit.U32}
	boolT := &wit.Type{Kind: wit.Bool}
	list := func(e *wit.Type) *wit.Type { return &wit.Type{Kind: wit.List, Elem: e} }
	point := &wit.Type{Kind: wit.Record, Fields: []wit.Field{{Name: "x", Type: u32}, {Name: "y", Type: u32}, {Name: "on", Type: boolT}}}
	str := &wit.Type{Kind: wit.String}
	for _, c := range []struct {
		t    *wit.Type
		want int64
	}{
		{nil, 0},
		{u32, 0},
		{point, 0},
		{&wit.Type{Kind: wit.Option, Elem: u32}, 0},
		{str, 0},
		{list(boolT), wit.LiftValBytes},
		{list(&wit.Type{Kind: wit.U8}), wit.LiftValBytes},
		{list(u32), wit.LiftValBytes / 4},
		{list(&wit.Type{Kind: wit.Char}), wit.LiftValBytes / 4},
		// 12 bytes a point; a value for it and for each field, and the fields' names.
		{list(point), (4*wit.LiftValBytes + 3*wit.LiftNameBytes + 2*(1+1+2) + 11) / 12},
		// option<u64> takes 16 bytes (a discriminant aligned to 8, then the u64).
		{list(&wit.Type{Kind: wit.Option, Elem: &wit.Type{Kind: wit.U64}}), (2*wit.LiftValBytes + 15) / 16},
		// A list's element holding a list: each element's own value over its 8 bytes, or
		// the inner list's elements, whichever costs more per byte.
		{list(list(boolT)), wit.LiftValBytes},
		{list(list(u32)), wit.LiftValBytes / 4},
		{&wit.Type{Kind: wit.Result, Ok: list(u32), Err: str}, wit.LiftValBytes / 4},
		{&wit.Type{Kind: wit.Tuple, Elems: []*wit.Type{str, list(boolT)}}, wit.LiftValBytes},
		// list<string>: 8 bytes an element; its characters are the string's.
		{list(str), wit.LiftValBytes / 8},
	} {
		if got := wit.LiftFactor(c.t); got != c.want {
			t.Errorf("LiftFactor(%v) = %d, want %d", c.t, got, c.want)
		}
	}
}
