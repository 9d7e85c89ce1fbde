package capi

// #include <stdlib.h>
import "C"

import "unsafe"

// arena is C memory that a store reuses from call to call for the values it lends Wasmtime:
// the arguments of an exported function (which wasmtime_component_func_call only reads) and
// the staging copies of byte lists. Everything in it is bump-allocated, never handed to
// Wasmtime's allocator, and dropped at once by release, so lending a value costs no
// allocation and no cgo call once the arena has grown to the store's usual call size.
//
// Chunks never move, so pointers into the arena stay valid until the release that passes
// them. Marks nest (a host function can call into the store while an outer call's
// arguments are live). Not safe for concurrent use; the store is used by one goroutine.
type arena struct {
	chunks []chunk
	cur    int     // chunk being filled
	off    uintptr // bytes used in chunks[cur]
}

type chunk struct {
	p    unsafe.Pointer
	size uintptr
}

const (
	// arenaChunk is the size of an ordinary chunk.
	arenaChunk = 64 << 10
	// arenaKeep bounds the memory an idle arena keeps for the next call; larger chunks (the
	// values of big byte lists take 32 bytes per byte) are freed when the outermost call ends.
	arenaKeep = 4 << 20
	// arenaAlign is the alignment of every allocation (that of the C API's values).
	arenaAlign = 8
)

// arenaMark is a position of the arena to release to.
type arenaMark struct {
	cur int
	off uintptr
}

// mark returns the current position.
func (a *arena) mark() arenaMark { return arenaMark{a.cur, a.off} }

// alloc returns n zeroed bytes (nil for 0).
func (a *arena) alloc(n uintptr) unsafe.Pointer {
	p := a.raw(n)
	if p != nil {
		clear(unsafe.Slice((*byte)(p), n))
	}
	return p
}

// raw returns n bytes whose contents are undefined (nil for 0).
func (a *arena) raw(n uintptr) unsafe.Pointer {
	if n == 0 {
		return nil
	}
	n = (n + arenaAlign - 1) &^ (arenaAlign - 1)
	if len(a.chunks) == 0 || a.off+n > a.chunks[a.cur].size {
		a.next(n)
	}
	p := unsafe.Add(a.chunks[a.cur].p, a.off)
	a.off += n
	return p
}

// next moves to a chunk after the current one with room for n bytes, allocating one when the
// next chunk is too small (the chunks after it stay for later calls).
func (a *arena) next(n uintptr) {
	i := a.cur + 1
	if len(a.chunks) == 0 {
		i = 0
	}
	if i >= len(a.chunks) || a.chunks[i].size < n {
		size := max(n, arenaChunk)
		p := C.malloc(C.size_t(size))
		if p == nil {
			panic("capi: out of host memory for call values")
		}
		a.chunks = append(a.chunks, chunk{})
		copy(a.chunks[i+1:], a.chunks[i:])
		a.chunks[i] = chunk{p: p, size: size}
	}
	a.cur, a.off = i, 0
}

// release frees everything allocated since m. Back at the start, it also returns to C the
// chunks that do not fit in arenaKeep bytes (taken in order).
func (a *arena) release(m arenaMark) {
	a.cur, a.off = m.cur, m.off
	if m != (arenaMark{}) {
		return
	}
	kept, total := a.chunks[:0], uintptr(0)
	for _, c := range a.chunks {
		if total+c.size > arenaKeep {
			C.free(c.p)
			continue
		}
		total += c.size
		kept = append(kept, c)
	}
	clear(a.chunks[len(kept):])
	a.chunks = kept
}

// free releases all the arena's memory.
func (a *arena) free() {
	for _, c := range a.chunks {
		C.free(c.p)
	}
	*a = arena{}
}
