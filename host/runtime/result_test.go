package runtime_test

import (
	"context"
	"errors"
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
