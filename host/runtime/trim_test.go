package runtime_test

import (
	"os"
	goruntime "runtime"
	"testing"

	"golang.org/x/sys/unix"

	"atelier/host/runtime"
)

// TestTrimKeepsInstance checks that Instance.Trim gives back the pages a fresh instance would
// read the same (image pages only read, zero pages), and nothing the guest wrote: after each of
// two trims, the instance's whole memory (its image, a byte written into the image, a byte
// written into anonymous memory, a page written with zeros, pages of a growth) still reads as
// before, later writes land, and the trimmed memory, recycled, is clean for the next instance.
func TestTrimKeepsInstance(t *testing.T) {
	rt := newRuntime(t, runtime.Config{NoCache: true, KeepMemories: 1})
	m := imgModule{min: 8, seed: 5, segs: [][2]uint32{{16, 6000}, {7000, 6000}, {14000, 5000}}}
	comp := compileText(t, rt, "(component "+m.wat("$m")+"(core instance $i (instantiate $m))"+lifts("", "$i")+")")
	page := int64(os.Getpagesize())
	inst := newInstance(t, rt, comp)
	want := m.memory()
	if got := call(t, inst, nil, "try-grow", uint32(2)); got != int32(8) {
		t.Fatalf("try-grow(2) = %v, want 8", got)
	}
	want = append(want, make([]byte, 2*wasmPage)...)
	pokes := []struct {
		addr uint32
		v    uint8
	}{
		{20, 0xEE},               // in the image: its page becomes the instance's own
		{3*wasmPage + 5, 0x5A},   // anonymous memory
		{5 * wasmPage, 0},        // a page written with zeros
		{9*wasmPage + 100, 0x33}, // the growth
	}
	for _, p := range pokes {
		call(t, inst, nil, "poke", p.addr, p.v)
		want[p.addr] = p.v
	}
	checkMemory(t, inst, "", want) // reads every page: the image's are mapped in
	// Given back at least: the image's pages but the written one, and the page of zeros.
	least := (int64(19000)+page-1)/page - 1 + 1
	if got := inst.Trim(); got < least*page {
		t.Errorf("first trim gave back %d bytes, want at least %d", got, least*page)
	}
	checkMemory(t, inst, "", want)
	for _, p := range pokes {
		if got := call(t, inst, nil, "peek", p.addr); got != p.v {
			t.Fatalf("peek(%d) = %v after the trim, want %d", p.addr, got, p.v)
		}
	}
	call(t, inst, nil, "poke", uint32(6000), uint8(0x77)) // into a trimmed image page
	call(t, inst, nil, "poke", uint32(5*wasmPage+1), uint8(0x78))
	want[6000], want[5*wasmPage+1] = 0x77, 0x78
	inst.Trim()
	checkMemory(t, inst, "", want)
	if got := call(t, inst, nil, "peek", uint32(5*wasmPage+1)); got != uint8(0x78) {
		t.Fatalf("peek(%d) = %v after the second trim, want 0x78", 5*wasmPage+1, got)
	}
	inst.Close()
	if got := inst.Trim(); got != 0 {
		t.Errorf("a closed instance's trim gave back %d bytes, want 0", got)
	}
	next := newInstance(t, rt, comp)
	defer next.Close()
	checkMemory(t, next, "", m.memory())
	if got := call(t, next, nil, "peek", uint32(5*wasmPage+1)); got != uint8(0) {
		t.Fatalf("the recycled memory reads %v at %d, want 0", got, 5*wasmPage+1)
	}
}

// TestTrimmedMemoryRecycledWarm checks that a memory freed by a trimmed instance is recycled
// with the zero pages the trim dropped populated again (atl_scrub), so that the next
// instance's start-up, which writes zeros over 8 Wasm pages (128 host pages of 4 KiB), does
// not fault them in (without it: about 128 minor faults; counted on the instantiating thread).
func TestTrimmedMemoryRecycledWarm(t *testing.T) {
	rt := newRuntime(t, runtime.Config{NoCache: true, KeepMemories: 1})
	comp := compileText(t, rt, zeroStartWAT)
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	faults := func() int64 {
		var ru unix.Rusage
		if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
			t.Fatal(err)
		}
		return ru.Minflt
	}
	for range 2 { // the first round may map the memory fresh
		inst := newInstance(t, rt, comp)
		if got := inst.Trim(); got < 8*wasmPage-int64(os.Getpagesize()) {
			t.Fatalf("the trim gave back %d bytes, want the start-up's zero pages", got)
		}
		inst.Close()
		f0 := faults()
		next := newInstance(t, rt, comp)
		got := faults() - f0
		next.Close()
		if limit := int64(8*wasmPage/os.Getpagesize()) / 4; got > limit {
			t.Errorf("instantiating on the trimmed memory took %d minor faults, want at most %d", got, limit)
		}
	}
}
