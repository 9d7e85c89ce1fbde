package runtime_test

import (
	"context"
	"os"
	"path"
	"runtime/debug"
	"testing"
	"time"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/runtime"
	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
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
			rt, comp, h := counterRuntime(b, dir)
			ctx := context.Background()
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

// BenchmarkInstanceRSS measures the resident memory (VmRSS) of live instances of each counter
// gadget after their first call, before and after they are trimmed as the kernel trims an
// idle instance (Instance.Trim; kernel.Config.GadgetTrim). With one instance made and called
// first, it makes n more, calls each once and reports the process's VmRSS growth per instance
// (first-call-rss-KiB/inst), trims them all (trimmed-KiB/inst given back, trim-µs/inst of
// wall time) and reports it again (rss-KiB/inst, with dirty-KiB/inst and pss-KiB/inst: the
// private dirty memory and proportional set size growth), then calls each once more
// (call-after-trim-µs, against call-µs for a second call before the trim) and reports the
// growth again (recalled-rss-KiB/inst: what a call faults back in). VmRSS counts each page of
// the shared memory image once per instance that maps it (the untrimmed Go counter reads 850
// KiB of its image), Pss once in all. Benchmark only: nothing is asserted.
func BenchmarkInstanceRSS(b *testing.B) {
	const n = 100
	for _, dir := range []string{counterGo, counterJS} {
		b.Run(path.Base(dir), func(b *testing.B) {
			rt, comp, h := counterRuntime(b, dir)
			ctx := context.Background()
			callAll := func(insts []*runtime.Instance) time.Duration {
				start := time.Now()
				for _, inst := range insts {
					if _, err := inst.Call(ctx, "get"); err != nil {
						b.Fatal(err)
					}
				}
				return time.Since(start) / n
			}
			for range b.N {
				insts := make([]*runtime.Instance, n+1)
				var rss0 int64
				var dirty0 smaps.Dirty
				for i := range insts {
					var err error
					if insts[i], err = rt.Instantiate(ctx, comp, h.config("rss", counterGrants...)); err != nil {
						b.Fatalf("instantiate %s: %v", dir, err)
					}
					if i == 0 {
						callAll(insts[:1])
						rss0, dirty0 = rssNow(b), dirtyNow(b)
					}
				}
				callAll(insts[1:])
				rss1 := rssNow(b)
				call := callAll(insts[1:])
				start, trimmed := time.Now(), int64(0)
				for _, inst := range insts[1:] {
					trimmed += inst.Trim()
				}
				trim := time.Since(start) / n
				rss2, dirty2 := rssNow(b), dirtyNow(b)
				callAfter := callAll(insts[1:])
				rss3 := rssNow(b)
				kib := func(bytes int64) float64 { return float64(bytes) / 1024 / n }
				b.ReportMetric(kib(rss1-rss0), "first-call-rss-KiB/inst")
				b.ReportMetric(kib(trimmed), "trimmed-KiB/inst")
				b.ReportMetric(kib(rss2-rss0), "rss-KiB/inst")
				b.ReportMetric(float64(dirty2.Sub(dirty0).Total())/n, "dirty-KiB/inst")
				b.ReportMetric(float64(dirty2.Pss-dirty0.Pss)/n, "pss-KiB/inst")
				b.ReportMetric(kib(rss3-rss0), "recalled-rss-KiB/inst")
				b.ReportMetric(float64(trim.Nanoseconds())/1e3, "trim-µs/inst")
				b.ReportMetric(float64(call.Nanoseconds())/1e3, "call-µs")
				b.ReportMetric(float64(callAfter.Nanoseconds())/1e3, "call-after-trim-µs")
				for _, inst := range insts {
					inst.Close()
				}
			}
		})
	}
}

// rssNow reads this process's VmRSS in bytes after a GC that returns freed memory to the OS.
func rssNow(tb testing.TB) int64 {
	tb.Helper()
	debug.FreeOSMemory()
	n, err := capnwebtests.ProcessStatus(os.Getpid(), "VmRSS")
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// counterRuntime returns a runtime of its own (no instance reuses memory another left
// populated), the counter gadget in dir compiled on it, and a harness for its instances.
func counterRuntime(b *testing.B, dir string) (*runtime.Runtime, *runtime.Component, *harness) {
	rt := newRuntime(b, "")
	comp, err := rt.Compile(context.Background(), guesttest.Bytes(b, dir))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { comp.Close() })
	return rt, comp, &harness{store: kv.NewMemory(0), bus: events.NewBus()}
}
