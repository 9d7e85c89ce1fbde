// Package loadgen drives benchmark load: b.N calls spread over many client goroutines, with
// the latency percentiles of one call, this process's CPU time per call and an optional CPU
// profile of the loop alone.
package loadgen

import (
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Run runs b.N calls spread over clients goroutines (call(c) is client c's call) and
// reports the latency percentiles of one call.
func Run(b *testing.B, clients int, call func(c int) error) {
	b.ReportAllocs()
	var next atomic.Int64
	lat := make([][]time.Duration, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	cpu0 := CPUTime(b)
	defer profileLoop(b)()
	b.ResetTimer()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				if err := call(c); err != nil {
					errs[c] = err
					return
				}
				lat[c] = append(lat[c], time.Since(start))
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(CPUTime(b)-cpu0)/float64(b.N), "cpu-ns/op")
	for _, err := range errs {
		if err != nil {
			b.Fatal(err)
		}
	}
	ReportPercentiles(b, slices.Concat(lat...))
}

// ProfileEnv names a directory: when set, Run writes a CPU profile of its loop alone
// (no setup) to DIR/<benchmark name>.prof, each run of a benchmark replacing the previous one,
// so the file holds the final, largest run. `go test -cpuprofile` also profiles the setup,
// which here (compiling and instantiating 100 gadgets) outweighs the calls.
const ProfileEnv = "ATELIER_BENCH_LOOP_PROFILE"

// profileLoop starts the loop profile if asked for and returns the function that stops it.
func profileLoop(b *testing.B) (stop func()) {
	dir := os.Getenv(ProfileEnv)
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, strings.ReplaceAll(b.Name(), "/", "_")+".prof"))
	if err != nil {
		b.Fatalf("%s: %v", ProfileEnv, err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatalf("%s: %v", ProfileEnv, err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// CPUTime returns the CPU time (user and system) the process has used so far. On a machine
// shared with other work it says more than wall time: cpu-ns/op is the cost of one call to
// this process (client and server side alike when both run in it).
func CPUTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// ReportPercentiles reports the p50 and p99 of ds as p50-ns and p99-ns.
func ReportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2]), "p50-ns")
	b.ReportMetric(float64(ds[len(ds)*99/100]), "p99-ns")
}
