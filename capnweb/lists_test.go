package capnweb

import (
	"math"
	"math/big"
	"reflect"
	"testing"
)

// TestTypedListsEncodeAsArrays checks that each typed list canonicalizes to itself (no boxing),
// encodes byte for byte as the []any of its elements does, boxes back to those elements for
// paths and assignment, and that a nil one is null.
func TestTypedListsEncodeAsArrays(t *testing.T) {
	for _, c := range []struct {
		typed any
		boxed []any
	}{
		{[]bool{true, false}, []any{true, false}},
		{[]int8{-128, 127}, []any{-128.0, 127.0}},
		{[]int16{-1, 300}, []any{-1.0, 300.0}},
		{[]uint16{0, 65535}, []any{0.0, 65535.0}},
		{[]int32{math.MinInt32, 7}, []any{float64(math.MinInt32), 7.0}},
		{[]uint32{0, math.MaxUint32}, []any{0.0, float64(math.MaxUint32)}},
		{[]int64{math.MinInt64, 1 << 53, 5}, []any{big.NewInt(math.MinInt64), float64(1 << 53), 5.0}},
		{[]uint64{math.MaxUint64, 9}, []any{new(big.Int).SetUint64(math.MaxUint64), 9.0}},
		{[]float32{0.1, float32(math.Inf(-1))}, []any{float64(float32(0.1)), math.Inf(-1)}},
		{[]float64{0.5, math.NaN(), -0.0, 1e300}, []any{0.5, math.NaN(), -0.0, 1e300}},
		{[]string{"a", "é\"", ""}, []any{"a", "é\"", ""}},
		{[]bool{}, []any{}},
	} {
		cv, err := canonicalize(nil, c.typed)
		if err != nil {
			t.Fatalf("canonicalize %T: %v", c.typed, err)
		}
		if reflect.ValueOf(cv).Pointer() != reflect.ValueOf(c.typed).Pointer() || reflect.TypeOf(cv) != reflect.TypeOf(c.typed) {
			t.Errorf("%T was copied by canonicalize", c.typed)
		}
		if got, want := encodeGo(t, c.typed), encodeGo(t, c.boxed); got != want {
			t.Errorf("%T encodes as %s, want %s", c.typed, got, want)
		}
		list, ok := boxList(cv)
		if !ok || encodeGo(t, list) != encodeGo(t, c.boxed) {
			t.Errorf("boxList(%T) = %v, want %v", c.typed, list, c.boxed)
		}
		if describe(cv) != "array" {
			t.Errorf("describe(%T) = %q", c.typed, describe(cv))
		}
	}
	if got := encodeGo(t, []uint32(nil)); got != "null" {
		t.Errorf("nil []uint32 encodes as %s, want null", got)
	}
	var dst []int
	if err := assignValue(&dst, []uint16{1, 2}); err != nil || !reflect.DeepEqual(dst, []int{1, 2}) {
		t.Errorf("assign []uint16 to []int = %v, %v", dst, err)
	}
	if v, err := applyToValue([]bool{false, true}, []any{1.0}, nil, false); err != nil || v != true {
		t.Errorf("path [1] into []bool = %v, %v; want true", v, err)
	}
}
