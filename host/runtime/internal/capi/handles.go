package capi

import (
	"io"
	"sync"
	"sync/atomic"
)

// handles numbers the Go values that C carries for this package's callbacks (a store, a host
// function, a host resource type, an output writer), since C memory may not hold Go pointers.
// A handle is a slot index in its low 32 bits and the slot's generation above them, so that a
// callback finds its value with a few loads, where a runtime/cgo.Handle costs a hash and a
// walk through a sync.Map's trie: host function calls and epoch deadlines look their store up
// on every call, and on a host running many instances that walk mostly misses the CPU caches
// (issue 20). A deleted handle finds nothing, even once its slot holds another value (the
// generation moved on), as a deleted cgo.Handle found nothing. Handle 0 is never given out.
type handles[T any] struct {
	mu     sync.Mutex // guards free, next and the growth of chunks
	free   []uint32   // slots of deleted handles, reused first
	next   uint32     // the next slot never used
	chunks atomic.Pointer[[]*handleChunk[T]]
}

const (
	handleChunkBits = 10
	handleSlotMask  = 1<<handleChunkBits - 1
	handleGenShift  = 32
)

// handleChunk holds 1024 slots: their values and generations.
type handleChunk[T any] struct {
	vals [1 << handleChunkBits]atomic.Pointer[T]
	gens [1 << handleChunkBits]atomic.Uint32
}

// slot returns the chunk and index within it of slot i, or nil when no chunk holds it yet.
func (t *handles[T]) slot(i uint32) (*handleChunk[T], uint32) {
	p := t.chunks.Load()
	if p == nil || int(i>>handleChunkBits) >= len(*p) {
		return nil, 0
	}
	return (*p)[i>>handleChunkBits], i & handleSlotMask
}

func splitHandle(h uintptr) (slot, gen uint32) { return uint32(h), uint32(uint64(h) >> handleGenShift) }

// add returns a handle for v, which must not be nil.
func (t *handles[T]) add(v *T) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		t.next = max(t.next, 1)
		i = t.next
		t.next++
		if p := t.chunks.Load(); p == nil || int(i>>handleChunkBits) >= len(*p) {
			var chunks []*handleChunk[T]
			if p != nil {
				chunks = *p
			}
			grown := append(chunks[:len(chunks):len(chunks)], new(handleChunk[T]))
			t.chunks.Store(&grown)
		}
	}
	c, j := t.slot(i)
	c.vals[j].Store(v)
	return uintptr(uint64(c.gens[j].Load())<<handleGenShift | uint64(i))
}

// value returns the value of a live handle, nil for one deleted or never given out. Safe from
// any goroutine.
func (t *handles[T]) value(h uintptr) *T {
	i, gen := splitHandle(h)
	c, j := t.slot(i)
	if c == nil || c.gens[j].Load() != gen {
		return nil
	}
	v := c.vals[j].Load()
	if c.gens[j].Load() != gen { // deleted meanwhile (and perhaps given out again)
		return nil
	}
	return v
}

// delete forgets a live handle; a deleted or unknown one is left alone. C must no longer use
// it.
func (t *handles[T]) delete(h uintptr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	i, gen := splitHandle(h)
	c, j := t.slot(i)
	if c == nil || c.gens[j].Load() != gen || c.vals[j].Load() == nil {
		return
	}
	c.gens[j].Add(1)
	c.vals[j].Store(nil)
	t.free = append(t.free, i)
}

// The tables of the values C carries, one per type.
var (
	storeHandles    handles[Store]
	hostFuncHandles handles[HostFunc]
	resourceHandles handles[HostResource]
	writerHandles   handles[writer]
)

// writer is an output writer as a handle holds it.
type writer struct{ io.Writer }
