package wit_test

import (
	"encoding/json"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/runtime/wit"
)

// TestLiftOrder checks that Lift gives every record as an ordered.Object in declaration order
// wherever it is (alone, in lists, tuples, options, results and variant payloads), so that
// its JSON shows the fields as the WIT declares them, whatever order they were lowered in.
func TestLiftOrder(t *testing.T) {
	point := map[string]any{"label": "a", "x": int32(1)} // sorted: label before x
	tList := &wit.Type{Kind: wit.List, Elem: tPoint}
	tTuple := &wit.Type{Kind: wit.Tuple, Elems: []*wit.Type{tU32, tPoint}}
	tOpt := &wit.Type{Kind: wit.Option, Elem: tPoint}
	tOptOpt := &wit.Type{Kind: wit.Option, Elem: tOpt}
	tResult := &wit.Type{Kind: wit.Result, Ok: tPoint, Err: tStr}
	tNested := &wit.Type{Kind: wit.Record, Fields: []wit.Field{{Name: "z", Type: tList}, {Name: "a", Type: tU32}}}
	tests := []struct {
		typ  *wit.Type
		v    any
		want string
	}{
		{tPoint, point, `{"x":1,"label":"a"}`},
		{tPoint, ordered.Object{{Key: "label", Value: "a"}, {Key: "x", Value: 1}}, `{"x":1,"label":"a"}`},
		{tList, []any{point, point}, `[{"x":1,"label":"a"},{"x":1,"label":"a"}]`},
		{tTuple, []any{uint32(7), point}, `[7,{"x":1,"label":"a"}]`},
		{tOpt, point, `{"x":1,"label":"a"}`},
		{tOpt, nil, `null`},
		{tOptOpt, map[string]any{"some": point}, `{"some":{"x":1,"label":"a"}}`},
		{tResult, map[string]any{"ok": point}, `{"ok":{"x":1,"label":"a"}}`},
		{tResult, map[string]any{"err": "no"}, `{"err":"no"}`},
		{tShape, map[string]any{"tag": "rect", "val": point}, `{"tag":"rect","val":{"x":1,"label":"a"}}`},
		{tNested, map[string]any{"a": uint32(2), "z": []any{point}}, `{"z":[{"x":1,"label":"a"}],"a":2}`},
	}
	for _, tc := range tests {
		var f wit.Flat
		if err := wit.Lower(tc.typ, tc.v, "v", &f); err != nil {
			t.Fatalf("Lower(%s, %v): %v", tc.typ, tc.v, err)
		}
		got, err := wit.Lift(tc.typ, &f, "v")
		if err != nil {
			t.Fatalf("Lift(%s): %v", tc.typ, err)
		}
		if b, err := json.Marshal(got); err != nil || string(b) != tc.want {
			t.Errorf("Lift(%s) of %v = %s, %v; want %s", tc.typ, tc.v, b, err, tc.want)
		}
	}
}

// TestRecordAllocs guards the cost of a record crossing the boundary (issue 20): lowering a
// record costs no allocation, from a map or from the ordered.Object Lift makes, and lifting
// one costs three: the ordered.Object's fields, its slice header in the interface, and the
// label string in its interface (the numbers below 256 are boxed without one).
func TestRecordAllocs(t *testing.T) {
	var f wit.Flat
	in := map[string]any{"x": 1, "y": 2, "label": "a point"}
	tXY := &wit.Type{Kind: wit.Record, Fields: []wit.Field{{Name: "x", Type: prim(wit.S32)}, {Name: "y", Type: prim(wit.S32)}, {Name: "label", Type: tStr}}}
	var lifted any
	roundTrip := func(v any) func() {
		return func() {
			f.Reset()
			if err := wit.Lower(tXY, v, "v", &f); err != nil {
				t.Fatal(err)
			}
			var err error
			if lifted, err = wit.Lift(tXY, &f, "v"); err != nil {
				t.Fatal(err)
			}
		}
	}
	if n := testing.AllocsPerRun(100, roundTrip(in)); n != 3 {
		t.Errorf("record lower (from a map) + lift: %v allocations, want 3", n)
	}
	if n := testing.AllocsPerRun(100, roundTrip(lifted)); n != 3 {
		t.Errorf("record lower (from an ordered.Object) + lift: %v allocations, want 3", n)
	}
}
