package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/internal/capi"
)

const wasmPage = 64 << 10

// markedAddrs are the bytes a test writes to fill `pages` pages of linear memory: one every
// 256 bytes, and the last byte of every page (the memory creator works in host pages, which
// are at most 64 KiB).
func markedAddrs(pages uint32) []uint32 {
	var out []uint32
	for addr := uint32(0); addr < pages*wasmPage; addr += 256 {
		out = append(out, addr)
		if addr%wasmPage == wasmPage-256 {
			out = append(out, addr+255)
		}
	}
	return out
}

// TestRecycledMemoryIsClean fills an instance's whole memory (grown to 16 pages) with a
// marker, closes it, and checks that the next instances, which reuse its mapping, see only
// zeros, start at their own size (the previous, larger size traps), and can grow into
// memory that is zero too. The first instance is the echo component's, or one whose memory
// starts with a data image mapped from its memfd (which must not show through either).
func TestRecycledMemoryIsClean(t *testing.T) {
	t.Run("echo", func(t *testing.T) { testRecycledMemoryIsClean(t, nil) })
	t.Run("after_image", func(t *testing.T) {
		testRecycledMemoryIsClean(t, func(rt *runtime.Runtime) *runtime.Component {
			return compileText(t, rt, "(component "+imaged(1, 0, 5).wat("$m")+"(core instance $i (instantiate $m))"+lifts("", "$i")+")")
		})
	})
}

// testRecycledMemoryIsClean is TestRecycledMemoryIsClean with the first instance from
// firstComp (nil: the echo component).
func testRecycledMemoryIsClean(t *testing.T, firstComp func(*runtime.Runtime) *runtime.Component) {
	f := newFixture(t, runtime.Config{KeepMemories: 1})
	ctx := context.Background()
	const pages = 16
	limits := runtime.InstanceConfig{Grants: echoGrants, Limits: runtime.Limits{MaxMemory: memoryBudget(pages * wasmPage)}}
	instantiateComp := func(comp *runtime.Component) *runtime.Instance {
		t.Helper()
		inst, err := f.rt.Instantiate(ctx, comp, limits)
		if err != nil {
			t.Fatal(err)
		}
		return inst
	}
	instantiate := func() *runtime.Instance { t.Helper(); return instantiateComp(f.echo) }
	addrs := markedAddrs(pages)

	var first *runtime.Instance
	if firstComp == nil {
		first = instantiate()
	} else {
		mapped := capi.ImagedMemories()
		first = instantiateComp(firstComp(f.rt))
		if capi.ImagedMemories() != mapped+1 {
			t.Fatal("the first instance's memory is not mapped from its image")
		}
		checkMemory(t, first, "", imaged(1, 0, 5).memory())
	}
	if got := call(t, first, nil, "try-grow", pages-1); got != int32(1) {
		t.Fatalf("try-grow(%d) = %v", pages-1, got)
	}
	for _, a := range addrs {
		call(t, first, nil, "poke", a, 0xA5)
	}
	if got := call(t, first, nil, "peek", uint32(pages*wasmPage-1)); got != uint8(0xA5) {
		t.Fatalf("marker not written: %v", got)
	}
	pooled := capi.PooledMemories()
	first.Close()
	if got := capi.PooledMemories(); got != pooled+1 {
		t.Fatalf("after Close: %d pooled memories, want %d", got, pooled+1)
	}

	second := instantiate()
	defer second.Close()
	if got := capi.PooledMemories(); got != pooled {
		t.Fatalf("the second instance did not reuse the memory: %d pooled, want %d", got, pooled)
	}
	checkZero := func(inst *runtime.Instance, below uint32) {
		t.Helper()
		for _, a := range addrs {
			if a < below*wasmPage {
				if got := call(t, inst, nil, "peek", a); got != uint8(0) {
					t.Fatalf("byte %d of a recycled memory = %v, want 0", a, got)
				}
			}
		}
	}
	checkZero(second, 1)
	if got := call(t, second, nil, "try-grow", pages-1); got != int32(1) {
		t.Fatalf("try-grow(%d) = %v", pages-1, got)
	}
	checkZero(second, pages)
	for _, a := range addrs { // dirty it again for the third instance
		call(t, second, nil, "poke", a, 0x5A)
	}
	second.Close()

	third := instantiate()
	defer third.Close()
	checkZero(third, 1)
	_, err := third.Call(ctx, "peek", uint32(wasmPage))
	if !errors.Is(err, runtime.ErrTrap) || !strings.Contains(err.Error(), "out of bounds") {
		t.Fatalf("peek past the first page of a recycled memory: %v, want an out-of-bounds trap", err)
	}
}

// TestRecycledMemoriesConcurrent instantiates, dirties and closes instances from many
// goroutines sharing a small pool (run it with -race): every instance must start with zeroed
// memory of its own size, whichever memory it got.
func TestRecycledMemoriesConcurrent(t *testing.T) {
	f := newFixture(t, runtime.Config{KeepMemories: 4})
	ctx := context.Background()
	live := capi.LiveMemories()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- churn(ctx, f, g)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := capi.LiveMemories(); got != live {
		t.Fatalf("%d live memories after the goroutines, want %d", got, live)
	}
}

// churn is one goroutine of TestRecycledMemoriesConcurrent.
func churn(ctx context.Context, f *fixture, g int) error {
	for i := range 30 {
		grow := uint32((g + i) % 4)
		inst, err := f.rt.Instantiate(ctx, f.echo, runtime.InstanceConfig{Grants: echoGrants, Limits: runtime.Limits{MaxMemory: memoryBudget(4 * wasmPage)}})
		if err != nil {
			return err
		}
		err = dirty(ctx, inst, grow, uint8(g+1))
		inst.Close()
		if err != nil {
			return fmt.Errorf("goroutine %d, instance %d: %w", g, i, err)
		}
	}
	return nil
}

// dirty grows inst by `grow` pages, checks that its memory reads zero and ends at its size,
// and writes `marker` into every page.
func dirty(ctx context.Context, inst *runtime.Instance, grow uint32, marker uint8) error {
	if got, err := inst.Call(ctx, "try-grow", grow); err != nil || got != int32(1) {
		return fmt.Errorf("try-grow(%d) = %v, %v", grow, got, err)
	}
	end := (1 + grow) * wasmPage
	for a := uint32(0); a < end; a += wasmPage / 4 {
		for _, addr := range []uint32{a, a + wasmPage/4 - 1} {
			if got, err := inst.Call(ctx, "peek", addr); err != nil || got != uint8(0) {
				return fmt.Errorf("byte %d = %v, %v; want 0", addr, got, err)
			}
			if _, err := inst.Call(ctx, "poke", addr, marker); err != nil {
				return err
			}
		}
	}
	if _, err := inst.Call(ctx, "peek", end); !errors.Is(err, runtime.ErrTrap) {
		return fmt.Errorf("peek(%d) past %d pages: %v, want a trap", end, 1+grow, err)
	}
	return nil
}

// zeroStartWAT is a component whose start-up writes zeros over all 8 pages of its memory and
// then a 7 at byte 200000, as a Go guest's runtime clears the memory it frees while it starts.
const zeroStartWAT = `(component
  (core module $m
    (memory (export "memory") 8)
    (func $start
      (memory.fill (i32.const 0) (i32.const 0) (i32.const 524288))
      (i32.store8 (i32.const 200000) (i32.const 7)))
    (start $start)
    (func (export "peek") (param i32) (result i32) (i32.load8_u (local.get 0)))
    (func (export "poke") (param i32 i32) (i32.store8 (local.get 0) (local.get 1))))
  (core instance $i (instantiate $m))
  (func (export "peek") (param "at" u32) (result u8) (canon lift (core func $i "peek")))
  (func (export "poke") (param "at" u32) (param "v" u8) (canon lift (core func $i "poke"))))`

// TestStartupZerosTrimmed checks that the pages an instance's start-up left all zero are given
// back to the kernel when the instantiation ends (every page of the memory but the one holding
// the 7), on a fresh memory and on a recycled one whose previous user wrote everywhere, and
// that the guest still reads what it wrote, zeros elsewhere, and can write to the given-back
// pages.
func TestStartupZerosTrimmed(t *testing.T) {
	rt, err := runtime.New(runtime.Config{NoCache: true, KeepMemories: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	comp := compileText(t, rt, zeroStartWAT)
	want := int64(8*wasmPage/os.Getpagesize() - 1)
	for _, round := range []string{"fresh", "recycled"} {
		pooled, trimmed := capi.PooledMemories(), capi.TrimmedPages()
		inst, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if got := capi.TrimmedPages() - trimmed; got != want {
			t.Errorf("%s memory: %d pages trimmed after start-up, want %d", round, got, want)
		}
		if round == "recycled" && capi.PooledMemories() != pooled-1 {
			t.Fatalf("the second instance did not reuse the first one's memory")
		}
		for _, a := range markedAddrs(8) {
			want := uint8(0)
			if a == 200000 {
				want = 7
			}
			if got := call(t, inst, nil, "peek", a); got != want {
				t.Fatalf("%s memory: byte %d = %v after the trim, want %d", round, a, got, want)
			}
		}
		for _, a := range markedAddrs(8) { // the next round reuses this memory, dirty
			call(t, inst, nil, "poke", a, uint8(0xA5))
		}
		for _, a := range []uint32{0, 4096, 299776, 8*wasmPage - 1} {
			if got := call(t, inst, nil, "peek", a); got != uint8(0xA5) {
				t.Fatalf("%s memory: byte %d = %v after a write, want 0xA5", round, a, got)
			}
		}
		inst.Close()
	}
}
