package runtime_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"atelier/host/runtime"
)

const page = 64 << 10

// A component with four core instances, each with its own memory, gets one budget for all of
// them: growing each to 200 MiB is refused once they would pass 256 MiB together, the error
// names the budget, and MemoryUsed counts the four memories and the tables' reserve.
func TestMemoryBudgetCoversAllMemories(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	comp := compileFile(t, f.rt, "testdata/multimem.wat")
	ctx := context.Background()
	inst, err := f.rt.Instantiate(ctx, comp, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 256 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	reserve := runtime.TableReserve(256 << 20)
	if got, want := inst.MemoryUsed(), reserve+4*page; got != want {
		t.Errorf("MemoryUsed after instantiation = %d, want %d (4 pages and the tables' %d)", got, want, reserve)
	}
	const pages = 200<<20/page - 1 // to 200 MiB each
	if _, err := inst.Call(ctx, "grow-a", uint32(pages)); err != nil {
		t.Fatalf("first memory to 200 MiB: %v", err)
	}
	if got, want := inst.MemoryUsed(), reserve+(200<<20)+3*page; got != want {
		t.Errorf("MemoryUsed after one growth = %d, want %d", got, want)
	}
	_, err = inst.Call(ctx, "grow-b", uint32(pages))
	if !errors.Is(err, runtime.ErrMemory) {
		t.Fatalf("second memory to 200 MiB: %v, want ErrMemory", err)
	}
	for _, want := range []string{"instance memory budget of 256 MiB exhausted", "hold 216.2 MiB", "asked for 199.9 MiB more"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if got := inst.MemoryUsed(); got != 0 {
		t.Errorf("MemoryUsed of the retired instance = %d, want 0", got)
	}
	// Each memory alone fits: only their sum does not.
	for _, fn := range []string{"grow-a", "grow-b", "grow-c", "grow-d"} {
		one, err := f.rt.Instantiate(ctx, comp, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 256 << 20}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := one.Call(ctx, fn, uint32(pages)); err != nil {
			t.Errorf("%s alone to 200 MiB: %v", fn, err)
		}
		one.Close()
	}
}

// Memories made at instantiation are charged too: four of 100 MiB each do not fit in 256 MiB,
// and the instantiation's error names the budget.
func TestMemoryBudgetAtInstantiation(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	src := `(component
  (core module $m (memory 1600))
  (core instance (instantiate $m)) (core instance (instantiate $m))
  (core instance (instantiate $m)) (core instance (instantiate $m)))`
	comp, err := f.rt.Compile(context.Background(), []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	_, err = f.rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 256 << 20}})
	if !errors.Is(err, runtime.ErrMemory) || !strings.Contains(err.Error(), "instance memory budget of 256 MiB exhausted") ||
		!strings.Contains(err.Error(), "a new one asked for 100 MiB more") {
		t.Fatalf("four 100 MiB memories under 256 MiB: %v, want ErrMemory naming the budget", err)
	}
	inst, err := f.rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 512 << 20}})
	if err != nil {
		t.Fatalf("under 512 MiB: %v", err)
	}
	inst.Close()
}

// memoryRecorder is a MemoryAccount that allows a fixed amount and records what it is told.
type memoryRecorder struct {
	mu      sync.Mutex
	allow   int64
	refuse  error
	acquire []int64
	budget  []int64 // the budgets Acquire got
	lift    []int64 // the lift factors Acquire got
	release []int64
}

func (r *memoryRecorder) Acquire(held, budget, liftFactor int64) (int64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.acquire = append(r.acquire, held)
	r.budget = append(r.budget, budget)
	r.lift = append(r.lift, liftFactor)
	return r.allow, r.refuse
}

func (r *memoryRecorder) Release(held int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.release = append(r.release, held)
}

// An account lowers the budget call by call, learns what the instance holds after each, and
// can refuse a call before the guest runs.
func TestMemoryAccount(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	ctx := context.Background()
	acc := &memoryRecorder{allow: 1 << 30}
	inst := f.instance(t, runtime.InstanceConfig{Limits: runtime.Limits{MaxMemory: 8 << 20}, Account: acc})
	reserve := runtime.TableReserve(8 << 20)
	if got, err := inst.Call(ctx, "try-grow", 31); err != nil || got != int32(1) {
		t.Fatalf("try-grow(31) under the instance's own budget: %v, %v", got, err)
	}
	acc.allow = reserve + 40*page // lower than what the cap allows: growth past 40 pages fails
	if got, err := inst.Call(ctx, "try-grow", 9); err != nil || got != int32(-1) {
		t.Fatalf("try-grow(9) past the account's allowance: %v, %v; want -1", got, err)
	}
	if got, err := inst.Call(ctx, "try-grow", 8); err != nil || got != int32(32) {
		t.Fatalf("try-grow(8) within the account's allowance: %v, %v; want 32", got, err)
	}
	acc.refuse = errors.New("no memory left for you")
	if _, err := inst.Call(ctx, "add", 1, 2); !errors.Is(err, acc.refuse) {
		t.Fatalf("call refused by the account: %v", err)
	}
	if err := inst.Retired(); err != nil {
		t.Fatalf("a refused call retired the instance: %v", err)
	}
	inst.Close()
	want := []int64{reserve + page, reserve + 32*page, reserve + 32*page, reserve + 40*page, 0}
	if got := acc.release; !slices.Equal(got, want) {
		t.Errorf("Release got %v, want %v", got, want)
	}
}
