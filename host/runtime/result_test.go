package runtime_test

import (
	"context"
	"errors"
	"reflect"
	goruntime "runtime"
	"strings"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// TestResultTooLarge calls for results of 4-16 MB against a 1 MiB MaxResult: each is refused
// with ErrResultTooLarge (saying how large it is) having allocated less than the limit on the
// Go heap, and the slot's next call runs on a fresh instance. A result within the limit comes
// back as a typed slice.
func TestResultTooLarge(t *testing.T) {
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	const limit = 1 << 20
	slot := rt.NewSlot(compileFile(t, rt, "testdata/bigresult.wat"), runtime.InstanceConfig{Name: "big", Limits: runtime.Limits{MaxResult: limit}})
	defer slot.Close()
	ctx := context.Background()
	for _, c := range []struct {
		fn string
		n  int
	}{{"bools", 4 << 20}, {"bytes", 8 << 20}, {"u32s", 1 << 20}, {"text", 4 << 20}, {"points", 1 << 20}} {
		if n, err := slot.Call(ctx, "count"); err != nil || n != uint32(1) {
			t.Fatalf("%s: count before = %v, %v; want 1 (a fresh instance)", c.fn, n, err)
		}
		var before, after goruntime.MemStats
		goruntime.ReadMemStats(&before)
		res, err := slot.Call(ctx, c.fn, c.n)
		goruntime.ReadMemStats(&after)
		var se *wit.SizeError
		if !errors.Is(err, runtime.ErrResultTooLarge) || !errors.As(err, &se) || se.Limit != limit {
			t.Fatalf("%s(%d) = %T, %v; want ErrResultTooLarge", c.fn, c.n, res, err)
		}
		if !strings.Contains(err.Error(), "over the limit of 1 MiB") {
			t.Errorf("%s: error %q does not say the limit", c.fn, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > limit {
			t.Errorf("%s(%d): allocated %d bytes while refusing it, more than the %d limit", c.fn, c.n, grew, limit)
		}
	}
	res, err := slot.Call(ctx, "bools", 100_000)
	if b, ok := res.([]bool); err != nil || !ok || len(b) != 100_000 || !b[0] {
		t.Fatalf("bools(100000) = %T, %v; want 100000 true", res, err)
	}
	if n, err := slot.Call(ctx, "count"); err != nil || n != uint32(1) {
		t.Fatalf("count after a refusal = %v, %v; want 1", n, err)
	}
	if n, err := slot.Call(ctx, "count"); err != nil || n != uint32(2) {
		t.Fatalf("count again = %v, %v; want 2 (the instance lives on)", n, err)
	}
}

// TestScalarListsRoundTrip sends lists of each scalar kind to the guest and back: arguments
// given as JSON-ish numbers or as the typed slice itself are lowered alike, and the result is
// the typed slice ([]string for chars).
func TestScalarListsRoundTrip(t *testing.T) {
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	in, err := rt.Instantiate(context.Background(), compileFile(t, rt, "testdata/bigresult.wat"), runtime.InstanceConfig{Name: "echo"})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	for _, c := range []struct {
		fn   string
		args []any
		want any
	}{
		{"echo-bools", []any{[]any{true, false, true}, []bool{true, false, true}}, []bool{true, false, true}},
		{"echo-s8s", []any{[]any{-128, 127.0}, []int8{-128, 127}}, []int8{-128, 127}},
		{"echo-u16s", []any{[]any{0, 65535}, []uint16{0, 65535}}, []uint16{0, 65535}},
		{"echo-s32s", []any{[]any{-1, 1 << 30}, []int32{-1, 1 << 30}}, []int32{-1, 1 << 30}},
		{"echo-u64s", []any{[]any{uint64(1 << 63), 7}, []uint64{1 << 63, 7}}, []uint64{1 << 63, 7}},
		{"echo-f32s", []any{[]any{0.5, -2.25}, []float32{0.5, -2.25}}, []float32{0.5, -2.25}},
		{"echo-f64s", []any{[]any{1e300, -0.1}, []float64{1e300, -0.1}}, []float64{1e300, -0.1}},
		{"echo-chars", []any{[]any{"a", "é", "😀"}, []string{"a", "é", "😀"}}, []string{"a", "é", "😀"}},
		{"echo-bools", []any{[]bool{}}, []bool{}},
	} {
		for _, arg := range c.args {
			got, err := in.Call(context.Background(), c.fn, arg)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s(%v) = %#v, %v; want %#v", c.fn, arg, got, err, c.want)
			}
		}
	}
}
