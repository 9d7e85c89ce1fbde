package capi

import (
	"sync"
	"testing"
)

// TestHandles: handles are never 0, find their value until deleted, find nothing once deleted
// even when their slot is reused, span chunks, and are safe to look up while others are added
// and deleted.
func TestHandles(t *testing.T) {
	var tab handles[int]
	if v := tab.value(0); v != nil {
		t.Fatalf("value(0) of an empty table = %v", v)
	}
	n := 3<<handleChunkBits + 5 // four chunks
	vals := make([]int, n)
	hs := make([]uintptr, n)
	for i := range vals {
		vals[i] = i
		hs[i] = tab.add(&vals[i])
		if hs[i] == 0 {
			t.Fatal("handle 0 given out")
		}
	}
	for i, h := range hs {
		if v := tab.value(h); v != &vals[i] {
			t.Fatalf("value(%d) = %v, want value %d", h, v, i)
		}
	}
	tab.delete(hs[7])
	tab.delete(hs[7]) // a second delete is a no-op, not a second free entry
	if v := tab.value(hs[7]); v != nil {
		t.Fatalf("value of a deleted handle = %v", *v)
	}
	x, y := -1, -2
	hx := tab.add(&x)
	if s, _ := splitHandle(hx); s != 8 {
		t.Fatalf("add after delete used slot %d, want the freed slot 8", s)
	}
	if hx == hs[7] || tab.value(hs[7]) != nil || tab.value(hx) != &x {
		t.Fatal("a deleted handle finds the value its slot holds now")
	}
	tab.delete(hs[7]) // a stale handle deletes nothing
	if tab.value(hx) != &x {
		t.Fatal("deleting a stale handle deleted its slot's new value")
	}
	if h := tab.add(&y); h == hx || h == hs[7] {
		t.Fatal("a handle given out twice")
	}
	if v := tab.value(uintptr(n) + 100<<handleChunkBits); v != nil {
		t.Fatalf("value of a handle past every chunk = %v", v)
	}

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				v := g*10000 + i
				h := tab.add(&v)
				if got := tab.value(h); got != &v {
					t.Errorf("value(%d) = %v, want %d", h, got, v)
					return
				}
				tab.delete(h)
			}
		}()
	}
	for i, h := range hs[:100] {
		if i != 7 && tab.value(h) != &vals[i] {
			t.Errorf("value(%d) changed while others were added", h)
		}
	}
	wg.Wait()
}
