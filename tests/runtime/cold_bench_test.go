package runtime_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"atelier/host/capability/kv"
	"atelier/host/runtime"
	"atelier/tests/loadgen"
)

// BenchmarkColdCall calls increment(1) on 100 counter-go instances in turn (a kv get and set and
// a log line: three host calls), as a busy host comes back to each of its gadgets: "warm" one
// call after the other, "cold" with 16 MiB of other memory written between two calls, as the
// rest of a server's work does, so that the instance's memory, its Wasmtime store and the
// allocators' arenas have left the CPU caches. ns/op includes that writing; p50-ns and p99-ns
// are the call alone. On a 2-core AMD EPYC VM: about 5.5 µs warm and 18 µs cold (issue 20).
func BenchmarkColdCall(b *testing.B) {
	ctx := context.Background()
	comp := component(b, counterGo)
	insts := make([]*runtime.Instance, 100)
	for i := range insts {
		inst, err := sharedRuntime(b).Instantiate(ctx, comp, runtime.InstanceConfig{
			Name:   fmt.Sprint("counter-", i),
			Grants: append(runtime.WASIBaseline(), counterGrants...),
			Bind:   map[string]any{kv.Grant: kv.NewMemory(0)},
		})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { inst.Close() })
		insts[i] = inst
	}
	for _, c := range []struct {
		name  string
		other int
	}{{"warm", 0}, {"cold", 16 << 20}} {
		b.Run(c.name, func(b *testing.B) {
			other := make([]byte, c.other)
			var lat []time.Duration
			i := 0
			for b.Loop() {
				for j := 0; j < len(other); j += 64 {
					other[j]++
				}
				start := time.Now()
				if _, err := insts[i].Call(ctx, "increment", uint32(1)); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
				i = (i + 1) % len(insts)
			}
			loadgen.ReportPercentiles(b, lat)
		})
	}
}
