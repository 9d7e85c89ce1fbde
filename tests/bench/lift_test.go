package main

import (
	"context"
	"os"
	goruntime "runtime"
	"testing"

	"atelier/host/runtime"
)

// BenchmarkLift measures the host memory a call's result costs while it is lifted: the bytes
// allocated per byte of the result in guest memory (B/byte), for results of 1 MiB made by
// host/runtime/testdata/bigresult.wat, after one call has grown the buffers the instance
// reuses. C memory that Wasmtime allocates is not counted.
func BenchmarkLift(b *testing.B) {
	os.Unsetenv("RUST_BACKTRACE")
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	src, err := os.ReadFile("../../host/runtime/testdata/bigresult.wat")
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	comp, err := rt.Compile(ctx, src)
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	in, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Name: "bigresult"})
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	const size = 1 << 20 // bytes of result in guest memory
	for _, c := range []struct {
		fn       string
		elemSize int
	}{{"bools", 1}, {"bytes", 1}, {"u32s", 4}, {"text", 1}, {"points", 12}} {
		b.Run(c.fn, func(b *testing.B) {
			n := size / c.elemSize
			if _, err := in.Call(ctx, c.fn, n); err != nil { // grows the instance's reused buffers
				b.Fatal(err)
			}
			var before, after goruntime.MemStats
			goruntime.GC()
			goruntime.ReadMemStats(&before)
			for b.Loop() {
				if _, err := in.Call(ctx, c.fn, n); err != nil {
					b.Fatal(err)
				}
			}
			goruntime.ReadMemStats(&after)
			perCall := float64(after.TotalAlloc-before.TotalAlloc) / float64(b.N)
			b.ReportMetric(perCall/float64(n*c.elemSize), "B/byte")
		})
	}
}
