package kernel

import (
	"syscall"
	"testing"
	"time"
)

// processCPU is the CPU time (user plus system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// CPUPerOp starts counting the process's CPU time (user plus system: steadier than wall time
// on a shared machine, and it counts every goroutine); the func it returns reports it per
// iteration. Call it just before the timed loop and the func right after. For benchmarks.
func CPUPerOp(b *testing.B) func() {
	start := processCPU()
	return func() { b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op") }
}
