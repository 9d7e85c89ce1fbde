package kernel

import (
	"context"
	"testing"
)

// callAllocs is what one durable call through the kernel allocates, at most: counter-go's
// increment(1) by Connection.CallMethod (access checks, actor, the instance's call with its kv
// get and set, the commit to bbolt with fsync, the reply), counted over every goroutine (the
// store's committer too; a lone commit is a bbolt transaction of its own, about 94 of them).
// Issue 20 brought it down from 132: the error checks allocate nothing on the success path,
// and host functions get a deadline context whose timer is made only when one waits on it.
// A change that adds to the call path shows here; lower it when a change saves allocations.
const callAllocs = 128

// TestCallAllocs guards the allocations of the kernel's call path (callAllocs).
func TestCallAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the counter-go gadget")
	}
	if raceEnabled {
		t.Skip("the race detector changes the allocation counts; scripts/test.sh runs this test without it")
	}
	ctx := context.Background()
	c := counterConnections(t, 1)[0]
	args := []any{float64(1)}
	call := func() {
		if _, err := c.CallMethod(ctx, "increment", args); err != nil {
			t.Fatal(err)
		}
	}
	for range 50 { // the instance, its kv cache and the store's pages warm up
		call()
	}
	got := testing.AllocsPerRun(500, call)
	t.Logf("allocations per call: %.0f", got)
	if got > callAllocs {
		t.Errorf("a durable call through the kernel allocates %.0f times, more than the %d it did; find what the change added to the call path (go test -run '^$' -bench KernelIncrement -memprofile)", got, callAllocs)
	}
}
