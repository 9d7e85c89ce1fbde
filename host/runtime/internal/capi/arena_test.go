package capi

import (
	"testing"
	"unsafe"
)

// TestArena checks what lent values rely on: allocations are aligned, zeroed, never move while
// later ones are made (also across chunks and nested marks), and the outermost release keeps
// at most arenaKeep bytes.
func TestArena(t *testing.T) {
	var a arena
	defer a.free()
	type block struct {
		p unsafe.Pointer
		n uintptr
		b byte
	}
	var live []block
	fill := func(n uintptr, b byte) {
		p := a.alloc(n)
		if uintptr(p)%arenaAlign != 0 {
			t.Fatalf("alloc(%d) = %p, not %d-aligned", n, p, arenaAlign)
		}
		s := unsafe.Slice((*byte)(p), n)
		for i := range s {
			if s[i] != 0 {
				t.Fatalf("alloc(%d) is not zeroed at %d", n, i)
			}
			s[i] = b
		}
		live = append(live, block{p, n, b})
	}
	check := func() {
		for _, bl := range live {
			for i, x := range unsafe.Slice((*byte)(bl.p), bl.n) {
				if x != bl.b {
					t.Fatalf("block %p (%d bytes) changed at %d", bl.p, bl.n, i)
				}
			}
		}
	}

	if a.alloc(0) != nil {
		t.Fatal("alloc(0) is not nil")
	}
	outer := a.mark()
	fill(3, 1)
	fill(arenaChunk, 2) // does not fit after the first: a second chunk
	inner := a.mark()
	fill(2*arenaKeep, 3) // a chunk of its own, beyond what the arena keeps
	fill(100, 4)
	check()
	a.release(inner)
	live = live[:2]
	fill(100, 5) // reuses the released space without touching the outer blocks
	check()
	if len(a.chunks) < 3 {
		t.Fatalf("%d chunks, want at least 3", len(a.chunks))
	}
	a.release(outer)
	var total uintptr
	for _, c := range a.chunks {
		total += c.size
	}
	if total > arenaKeep || len(a.chunks) == 0 {
		t.Fatalf("idle arena keeps %d bytes in %d chunks; want 0 < bytes <= %d", total, len(a.chunks), arenaKeep)
	}
	live = nil
	fill(arenaChunk, 6) // the kept chunks serve again
	check()
}
