package kernel

import (
	"context"
	"syscall"
	"testing"
	"time"

	"atelier/host/quota"
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

// SetQuotas changes the quotas in force, as the admin's changes do.
func (k *Kernel) SetQuotas(l quota.Limits) {
	eff := l.Effective()
	k.quotas.Store(&eff)
}

// HostUsage is hostUsage.
func (k *Kernel) HostUsage() map[string]int64 { return k.hostUsage() }

// WorkspaceUsage is workspaceUsage of the running workspace called name (nil when none runs).
func (k *Kernel) WorkspaceUsage(name string) map[string]int64 {
	for _, ov := range k.running() {
		if w, err := ov.snapshot(); err == nil && w.Name == name {
			return ov.workspaceUsage()
		}
	}
	return nil
}

// testModels resolves every user's chat models from a fixed set.
type testModels struct {
	specs        map[string]ModelSpec
	instructions string
}

func (m testModels) modelSpec(_ context.Context, _ string, id string) (ModelSpec, error) {
	spec, ok := m.specs[id]
	if !ok {
		return ModelSpec{}, fail(CodeNotFound, "no model %q", id)
	}
	return spec, nil
}

func (m testModels) agentInstructions(context.Context) string { return m.instructions }

// SetTestModels makes the kernel's chats use specs (by id, for every user) and instructions.
func (k *Kernel) SetTestModels(specs map[string]ModelSpec, instructions string) {
	k.models = testModels{specs: specs, instructions: instructions}
}
