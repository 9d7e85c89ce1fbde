package capi

import (
	"io"
	"sync"
	"sync/atomic"
)

// handles numbers the Go values that C carries for this package's callbacks (a store, a host
// function, a host resource type, an output writer), since C memory may not hold Go pointers.
// A handle is an index into chunks of slots, so that a callback finds its value with three
// loads, where a runtime/cgo.Handle costs a hash and a walk through a sync.Map's trie: host
// function calls and epoch deadlines look their store up on every call, and on a host running
// many instances that walk mostly misses the CPU caches (issue 20). Handle 0 is never given out.
type handles[T any] struct {
	mu     sync.Mutex // guards free, next and the growth of chunks
	free   []uintptr  // deleted handles, reused first
	next   uintptr    // the next handle never given out
	chunks atomic.Pointer[[]*handleChunk[T]]
}

const handleChunkBits = 10

type handleChunk[T any] [1 << handleChunkBits]atomic.Pointer[T]

// add returns a handle for v, which must not be nil.
func (t *handles[T]) add(v *T) uintptr {
	t.mu.Lock()
	defer t.mu.Unlock()
	var h uintptr
	if n := len(t.free); n > 0 {
		h, t.free = t.free[n-1], t.free[:n-1]
	} else {
		if t.next == 0 {
			t.next = 1
		}
		h = t.next
		t.next++
	}
	var chunks []*handleChunk[T]
	if p := t.chunks.Load(); p != nil {
		chunks = *p
	}
	if i := int(h >> handleChunkBits); i >= len(chunks) {
		grown := append(chunks[:len(chunks):len(chunks)], new(handleChunk[T]))
		t.chunks.Store(&grown)
		chunks = grown
	}
	chunks[h>>handleChunkBits][h&(1<<handleChunkBits-1)].Store(v)
	return h
}

// value returns the value of a live handle (nil for one deleted or never given out). Safe from
// any goroutine.
func (t *handles[T]) value(h uintptr) *T {
	p := t.chunks.Load()
	if p == nil || h>>handleChunkBits >= uintptr(len(*p)) {
		return nil
	}
	return (*p)[h>>handleChunkBits][h&(1<<handleChunkBits-1)].Load()
}

// delete forgets a live handle, which may then be given out again: C must no longer use it.
func (t *handles[T]) delete(h uintptr) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.value(h) == nil {
		return
	}
	(*t.chunks.Load())[h>>handleChunkBits][h&(1<<handleChunkBits-1)].Store(nil)
	t.free = append(t.free, h)
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
