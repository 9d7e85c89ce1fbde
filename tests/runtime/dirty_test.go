package runtime_test

import (
	"context"
	"path"
	"runtime/debug"
	"testing"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/runtime"
	"atelier/sdk/guesttest"
	"atelier/tests/smaps"
)

// BenchmarkInstanceDirty measures what a live instance of each counter gadget costs in private
// dirty memory (RAM that no other instance shares): with one instance made and called first
// (so that what instances share, such as code pages and the data image, is not counted), it
// makes n more, reads /proc/self/smaps before, after they are instantiated and after each has
// answered its first call (get), and reports the growth per instance in KiB, split as
// smaps.Dirty is: image (data-image pages the instance wrote), linear (the rest of its linear
// memories) and other (Wasmtime's store, instance and tables on the C heap, the Go heap). Each
// gadget gets a runtime of its own, so no instance reuses memory another left populated.
// Benchmark only: nothing is asserted.
func BenchmarkInstanceDirty(b *testing.B) {
	const n = 50
	for _, dir := range []string{counterGo, counterJS} {
		b.Run(path.Base(dir), func(b *testing.B) {
			rt := newRuntime(b, "")
			ctx := context.Background()
			comp, err := rt.Compile(ctx, guesttest.Bytes(b, dir))
			if err != nil {
				b.Fatal(err)
			}
			defer comp.Close()
			h := &harness{store: kv.NewMemory(0), bus: events.NewBus()}
			for range b.N {
				instantiate := func() *runtime.Instance {
					inst, err := rt.Instantiate(ctx, comp, h.config("dirty", counterGrants...))
					if err != nil {
						b.Fatalf("instantiate %s: %v", dir, err)
					}
					return inst
				}
				first := instantiate()
				if _, err := first.Call(ctx, "get"); err != nil {
					b.Fatal(err)
				}
				before := dirtyNow(b)
				insts := make([]*runtime.Instance, n)
				for i := range insts {
					insts[i] = instantiate()
				}
				made := dirtyNow(b)
				for _, inst := range insts {
					if _, err := inst.Call(ctx, "get"); err != nil {
						b.Fatal(err)
					}
				}
				called := dirtyNow(b)
				report := func(step string, d smaps.Dirty) {
					b.ReportMetric(float64(d.Image)/n, step+"-image-KiB/inst")
					b.ReportMetric(float64(d.Linear)/n, step+"-linear-KiB/inst")
					b.ReportMetric(float64(d.Other)/n, step+"-other-KiB/inst")
				}
				report("instantiated", made.Sub(before))
				report("first-call", called.Sub(made))
				b.ReportMetric(float64(called.Sub(before).Total())/n, "dirty-KiB/inst")
				first.Close()
				for _, inst := range insts {
					inst.Close()
				}
			}
		})
	}
}

// dirtyNow reads this process's private dirty memory after a GC that returns freed memory to
// the OS.
func dirtyNow(tb testing.TB) smaps.Dirty {
	tb.Helper()
	debug.FreeOSMemory()
	d, err := smaps.Self()
	if err != nil {
		tb.Fatal(err)
	}
	return d
}
