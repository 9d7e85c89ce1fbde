package runtime_test

import (
	"context"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/runtime"
)

// TestCallAllocs guards what a call allocates on the host's side (issue 20): a call with no
// arguments and no result allocates nothing (it cost one before: the exported function's C
// value was copied to the heap at each call), and a record round trip allocates only its
// result (an ordered.Object, its slice header in the interface, and its string: see
// wit.TestRecordAllocs) and that string's copy out of Wasmtime's value.
func TestCallAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes the allocation counts")
	}
	ctx := context.Background()
	inst := newFixture(t, runtime.Config{}).instance(t, runtime.InstanceConfig{})
	point := ordered.Object{{Key: "x", Value: 1}, {Key: "y", Value: 2}, {Key: "label", Value: "a point"}}
	for _, c := range []struct {
		fn   string
		args []any
		want float64
	}{{"noop", nil, 0}, {"point-local", []any{point}, 4}} {
		call := func() {
			if _, err := inst.Call(ctx, c.fn, c.args...); err != nil {
				t.Fatal(err)
			}
		}
		call()
		if got := testing.AllocsPerRun(200, call); got != c.want {
			t.Errorf("%s: %v allocations per call, want %v", c.fn, got, c.want)
		}
	}
}
