//go:build wasip1

package cabi

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// This file holds the runtime helpers of the bindings that `atelier bindgen --lang go`
// generates (package atelier/sdk/wit/gogen); hand-written guests may use them too.

// Load16 reads the little-endian u16 at ptr.
func Load16(ptr uint32) uint16 { return binary.LittleEndian.Uint16(mem(ptr, 2)) }

// Store16 writes v at ptr, little-endian.
func Store16(ptr uint32, v uint16) { binary.LittleEndian.PutUint16(mem(ptr, 2), v) }

// LoadF32 reads the f32 at ptr.
func LoadF32(ptr uint32) float32 { return math.Float32frombits(Load32(ptr)) }

// StoreF32 writes v at ptr.
func StoreF32(ptr uint32, v float32) { Store32(ptr, math.Float32bits(v)) }

// Bool returns 1 for true and 0 for false: a bool's canonical ABI value.
func Bool(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

var retBlock uint32 // the block RetArea handed out beyond the scratch area, if any

// RetArea returns zeroed memory of size bytes where an import writes results that do not fit
// in one core value: the scratch area of Ret when they fit in it, else a block that stays valid
// until the next RetArea call. Like Ret, it is a safe point that refills the arena the host
// allocates the results' strings and lists from.
func RetArea(size uint32) uint32 {
	if retBlock != 0 {
		Free(retBlock)
		retBlock = 0
	}
	ret := Ret()
	if size <= 64 {
		return ret
	}
	retBlock = Alloc(size)
	return retBlock
}

// Lowering is where lowered strings and lists go: the result memory of an export (see
// Results), or blocks for an import's arguments that Free releases once the import returned.
// The zero value lowers an export's results.
type Lowering struct {
	args   bool
	blocks []uint32
}

// ArgLowering returns a Lowering for the arguments of one import call.
func ArgLowering() *Lowering { return &Lowering{args: true} }

// Alloc returns the address of zeroed memory of size bytes (0 for size 0).
func (l *Lowering) Alloc(size uint32) uint32 {
	if size == 0 {
		return 0
	}
	if !l.args {
		return resultBlock(size)
	}
	p := Alloc(size)
	l.blocks = append(l.blocks, p)
	return p
}

// String copies s into memory of l and returns its address and length.
func (l *Lowering) String(s string) (ptr, n uint32) {
	ptr = l.Alloc(uint32(len(s)))
	if ptr != 0 {
		copy(mem(ptr, uint32(len(s))), s)
	}
	return ptr, uint32(len(s))
}

// Bytes copies b into memory of l and returns its address and length.
func (l *Lowering) Bytes(b []byte) (ptr, n uint32) {
	return l.String(unsafe.String(unsafe.SliceData(b), len(b)))
}

// Free releases the memory of an ArgLowering (the results of an export are released by
// ReleaseResults instead).
func (l *Lowering) Free() {
	for _, p := range l.blocks {
		Free(p)
	}
	l.blocks = l.blocks[:0]
}

// LiftSlice lifts the list of n elements of size bytes at ptr, which the host allocated, with
// elem, and frees its block.
func LiftSlice[T any](ptr, n, size uint32, elem func(ptr uint32) T) []T {
	xs := make([]T, n)
	for i := range xs {
		xs[i] = elem(ptr + uint32(i)*size)
	}
	Free(ptr)
	return xs
}

// LowerSlice lowers xs into memory of l, elements of size bytes stored by elem, and returns the
// list's address and length.
func LowerSlice[T any](l *Lowering, xs []T, size uint32, elem func(l *Lowering, ptr uint32, x T)) (ptr, n uint32) {
	ptr = l.Alloc(uint32(len(xs)) * size)
	for i, x := range xs {
		elem(l, ptr+uint32(i)*size, x)
	}
	return ptr, uint32(len(xs))
}

// Resources is the table of an exported resource's Go values: the representation the host
// holds for one is its index here. The zero value is empty and ready to use.
type Resources[T any] struct {
	values map[uint32]T
	next   uint32
}

// Add stores v and returns its representation (never 0).
func (r *Resources[T]) Add(v T) uint32 {
	if r.values == nil {
		r.values = make(map[uint32]T)
	}
	r.next++
	r.values[r.next] = v
	return r.next
}

// Get returns the value of rep; an unknown rep panics (and traps the instance).
func (r *Resources[T]) Get(rep uint32) T {
	v, ok := r.values[rep]
	if !ok {
		panic("cabi: unknown resource representation")
	}
	return v
}

// Remove takes the value of rep out of the table; ok is false when rep is unknown.
func (r *Resources[T]) Remove(rep uint32) (v T, ok bool) {
	v, ok = r.values[rep]
	delete(r.values, rep)
	return v, ok
}

// Len returns the number of values in the table.
func (r *Resources[T]) Len() int { return len(r.values) }

// LoadString lifts the string whose address and length are stored at ptr (8 bytes) and
// frees its block.
func LoadString(ptr uint32) string { return TakeString(Load32(ptr), Load32(ptr+4)) }

// LoadBytes lifts the list<u8> whose address and length are stored at ptr and frees its block.
func LoadBytes(ptr uint32) []byte { return TakeBytes(Load32(ptr), Load32(ptr+4)) }

// LoadSlice lifts the list whose address and length are stored at ptr (see LiftSlice).
func LoadSlice[T any](ptr, size uint32, elem func(ptr uint32) T) []T {
	return LiftSlice(Load32(ptr), Load32(ptr+4), size, elem)
}

// StoreString lowers s into memory of l and stores its address and length at ptr.
func (l *Lowering) StoreString(ptr uint32, s string) {
	p, n := l.String(s)
	Store32(ptr, p)
	Store32(ptr+4, n)
}

// StoreBytes lowers b into memory of l and stores its address and length at ptr.
func (l *Lowering) StoreBytes(ptr uint32, b []byte) {
	p, n := l.Bytes(b)
	Store32(ptr, p)
	Store32(ptr+4, n)
}

// StoreSlice lowers xs (see LowerSlice) and stores the list's address and length at ptr.
func StoreSlice[T any](l *Lowering, ptr uint32, xs []T, size uint32, elem func(l *Lowering, ptr uint32, x T)) {
	p, n := LowerSlice(l, xs, size, elem)
	Store32(ptr, p)
	Store32(ptr+4, n)
}
