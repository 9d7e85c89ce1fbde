package capi

import (
	"sync"
	"testing"
)

// TestHandles: handles start at 1, find their value until deleted, are reused once deleted,
// span chunks, and are safe to look up while others are added and deleted.
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
	if h := tab.add(&x); h != hs[7] {
		t.Fatalf("add after delete = %d, want the freed %d", h, hs[7])
	}
	if h := tab.add(&y); h == hs[7] {
		t.Fatal("a freed handle given out twice")
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
