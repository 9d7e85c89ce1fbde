package runtime

import (
	"bufio"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"atelier/host/runtime/internal/capi"
)

// growWAT has one memory of one page, grows it on request and traps on request.
const growWAT = `(component
  (core module $m (memory (export "memory") 1)
    (func (export "grow") (param i32) (result i32) (memory.grow (local.get 0)))
    (func (export "boom") unreachable))
  (core instance $i (instantiate $m))
  (func (export "grow") (param "pages" u32) (result s32) (canon lift (core func $i "grow")))
  (func (export "boom") (canon lift (core func $i "boom"))))`

// TestMemoriesFreed creates and drops a thousand instances (closed, retired by a trap,
// retired by the memory cap, or refused at instantiation) and checks that the memory creator
// freed every memory: the live count returns to where it was, at most KeepMemories freed
// memories are kept for reuse, and once the Runtime is closed those are unmapped too and the
// process's address space did not keep the 4 GiB reservations.
func TestMemoriesFreed(t *testing.T) {
	os.Unsetenv("RUST_BACKTRACE")
	const keep = 8
	base, pooledBase, vmBase := capi.LiveMemories(), capi.PooledMemories(), vmSize(t)
	rt, err := New(Config{NoCache: true, KeepMemories: keep})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	comp, err := rt.Compile(ctx, []byte(growWAT))
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	cfg := InstanceConfig{Limits: Limits{MaxMemory: 1 << 20}}

	inst, err := rt.Instantiate(ctx, comp, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if got := capi.LiveMemories(); got != base+1 {
		t.Fatalf("one instance: %d live memories, want %d", got, base+1)
	}
	inst.Close()
	if got := capi.LiveMemories(); got != base {
		t.Fatalf("after Close: %d live memories, want %d", got, base)
	}

	for i := range 1000 {
		lim := cfg
		if i%10 == 9 {
			lim.Limits.MaxMemory = 1000 // below the first page: refused at instantiation
		}
		inst, err := rt.Instantiate(ctx, comp, lim)
		if i%10 == 9 {
			if !errors.Is(err, ErrMemory) {
				t.Fatalf("instance %d under a 1000-byte cap: %v, want ErrMemory", i, err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if got, err := inst.Call(ctx, "grow", 8); err != nil || got != int32(1) {
			t.Fatalf("grow: %v, %v", got, err)
		}
		switch i % 3 {
		case 0:
			_, err = inst.Call(ctx, "boom")
		case 1:
			if got, err := inst.Call(ctx, "grow", 64); err != nil || got != int32(-1) {
				t.Fatalf("grow past the cap: %v, %v", got, err)
			}
		}
		if i%3 == 0 && !errors.Is(err, ErrTrap) {
			t.Fatalf("boom: %v", err)
		}
		inst.Close()
	}
	if got := capi.LiveMemories(); got != base {
		t.Fatalf("after 1000 instances: %d live memories, want %d", got, base)
	}
	if got := capi.PooledMemories(); got != pooledBase+1 { // used serially, one memory is enough
		t.Fatalf("after 1000 instances: %d pooled memories, want %d", got, pooledBase+1)
	}
	var open []*Instance // more at once than the pool keeps
	for range 2 * keep {
		inst, err := rt.Instantiate(ctx, comp, cfg)
		if err != nil {
			t.Fatal(err)
		}
		open = append(open, inst)
	}
	for _, inst := range open {
		inst.Close()
	}
	if got := capi.PooledMemories(); got != pooledBase+keep {
		t.Fatalf("after closing %d instances: %d pooled memories, want %d", 2*keep, got, pooledBase+keep)
	}
	comp.Close()
	rt.Close()
	if got := capi.PooledMemories(); got != pooledBase {
		t.Fatalf("after Runtime.Close: %d pooled memories, want %d", got, pooledBase)
	}
	// 900 leaked reservations would be 3.6 TiB of address space, the kept ones 32 GiB; allow
	// 16 GiB of noise.
	if grew := vmSize(t) - vmBase; grew > 16<<30 {
		t.Fatalf("address space grew by %d GiB", grew>>30)
	}
}

// vmSize returns the process's virtual memory size in bytes (Linux).
func vmSize(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmSize:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmSize in /proc/self/status")
	return 0
}
