//go:build wasip1

// Package cabi is a small, hand-written part of the WebAssembly component model's canonical ABI
// for Go guests built with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` (there is no
// wit-bindgen for Go here). Importing it exports `cabi_realloc`, through which the host writes
// strings and lists into the guest.
//
// Memory model. The guest only uses addresses from the host that point into memory this package
// handed out:
//   - arena memory, which the host asks for through cabi_realloc to pass strings and lists to an
//     export or return them from an import. Lift them with TakeString, TakeBytes, TakeStrings or
//     the Load functions and release list blocks with Free once their elements are lifted;
//   - the scratch area returned by Ret, where an import whose results do not fit in one core
//     value writes them (the canonical ABI's "retptr");
//   - result memory of an export: Results returns a zeroed area for the flattened results and
//     LowerString/LowerBytes/LowerList copy values the area points to. That memory stays valid
//     until the next call of Results, i.e. until the next export call, which is after the host
//     read the previous results.
//
// Every access checks that the address range lies inside such memory, so a wrong address from
// the host panics (and traps the instance) instead of reading unrelated Go memory. All blocks
// are 8-byte aligned, which satisfies every canonical ABI alignment.
//
// Why an arena: cabi_realloc runs while the host lowers values, when the component model
// forbids the guest to call imports ("cannot leave component instance"). Go's allocator may
// call one (it reads the WASI clock when it grows the heap), so cabi_realloc never allocates
// from the Go heap: it carves blocks out of arena chunks that are allocated at safe points
// (package initialisation, Ret and Results). A chunk is reused once all its blocks are freed.
// One transfer from the host (the arguments of one export call, or the results of one import
// call) may therefore use at most ChunkSize bytes; a larger one traps the instance.
//
// The package is not safe for concurrent use; a component instance runs one call at a time.
package cabi

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// ChunkSize is the size of one arena chunk, and so the most memory the host can ask for
// between two safe points. The arena counts toward the instance's memory limit, but pages the
// host never wrote stay untouched (and cost no resident memory).
const ChunkSize = 4 << 20

// block is a piece of Go heap memory the host may access (results and import arguments).
type block struct {
	addr, size uint32
	words      []uint64 // backing store; []uint64 keeps the block 8-byte aligned
}

// chunk is a piece of the arena: blocks are carved at used and the chunk is reset when its
// last block is freed.
type chunk struct {
	base, used, blocks uint32
	words              []uint64
}

var (
	live    []*block // heap blocks the host may access
	arena   []*chunk // changed only at safe points
	results []uint32 // addresses of the current export's result blocks
	scratch = Alloc(64)
)

func init() { reserve() }

// reserve makes sure that some chunk has at least half a chunk free. It allocates from the Go
// heap, so it runs only where the guest may call imports.
func reserve() {
	for _, c := range arena {
		if c.used <= ChunkSize/2 {
			return
		}
	}
	words := make([]uint64, ChunkSize/8)
	arena = append(arena, &chunk{base: addrOf(words), words: words})
}

func addrOf(words []uint64) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(words)))) }

func bytesOf(words []uint64, n uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(words))), n)
}

// Alloc returns the address of a new zeroed block of size bytes that the host may access. The
// caller releases it with Free. It allocates from the Go heap: never call it from cabi_realloc.
func Alloc(size uint32) uint32 {
	words := make([]uint64, (max(size, 1)+7)/8)
	b := &block{addr: addrOf(words), size: size, words: words}
	live = append(live, b)
	return b.addr
}

// Free releases the block that starts at ptr. Freeing 0 or an unknown address does nothing,
// so zero-length lists (which need no block) can be freed like any other.
func Free(ptr uint32) {
	for i, b := range live {
		if b.addr == ptr {
			live[i] = live[len(live)-1]
			live[len(live)-1] = nil
			live = live[:len(live)-1]
			return
		}
	}
	if c := chunkOf(ptr); c != nil && c.blocks > 0 {
		c.blocks--
		if c.blocks == 0 {
			c.used = 0
		}
	}
}

// chunkOf returns the chunk whose used part holds ptr, or nil.
func chunkOf(ptr uint32) *chunk {
	for _, c := range arena {
		if ptr >= c.base && ptr < c.base+c.used {
			return c
		}
	}
	return nil
}

// mem returns the n bytes at ptr, which must lie inside one live block or chunk.
func mem(ptr, n uint32) []byte {
	end := uint64(ptr) + uint64(n)
	for _, b := range live {
		if ptr >= b.addr && end <= uint64(b.addr)+uint64(b.size) {
			off := ptr - b.addr
			return bytesOf(b.words, b.size)[off : off+n : off+n]
		}
	}
	for _, c := range arena {
		if ptr >= c.base && end <= uint64(c.base)+uint64(c.used) {
			off := ptr - c.base
			return bytesOf(c.words, c.used)[off : off+n : off+n]
		}
	}
	panic("cabi: address outside guest-owned blocks")
}

// trapAddr is far beyond any linear memory: the host's first write there traps.
const trapAddr = 0xfffffff0

// realloc serves the host from the arena without touching the Go heap (see the package
// documentation). It returns trapAddr when no chunk has room, which traps the instance.
//
//go:wasmexport cabi_realloc
func realloc(oldPtr, oldSize, align, newSize uint32) uint32 {
	if align == 0 || align > 8 {
		return trapAddr
	}
	for _, c := range arena {
		start := (c.used + 7) &^ 7
		if uint64(start)+uint64(newSize) > ChunkSize {
			continue
		}
		c.used = start + max(newSize, 1)
		c.blocks++
		ptr := c.base + start
		if oldPtr != 0 {
			copy(mem(ptr, newSize), mem(oldPtr, min(oldSize, newSize)))
			Free(oldPtr)
		}
		return ptr
	}
	return trapAddr
}

// adapterArena serves cabi_realloc_adapter. The wasi_snapshot_preview1 adapter that turns the
// module into a component allocates its state and stack on the first WASI call, which the Go
// runtime makes while it initialises (reading the clock), before the Go heap exists. Its
// allocations therefore come from this static arena and never touch the Go runtime. They are
// made once per instance and never freed.
var (
	adapterArena [128 << 10]byte
	adapterUsed  uint32
)

// reallocAdapter is the allocator wit-component gives the preview1 adapter (it prefers an
// export named cabi_realloc_adapter to cabi_realloc). It runs before the Go runtime is ready,
// so it must not allocate, grow the stack or panic: when the arena is exhausted it returns
// trapAddr, so the adapter's first write traps.
//
//go:wasmexport cabi_realloc_adapter
//go:nosplit
func reallocAdapter(oldPtr, oldSize, align, newSize uint32) uint32 {
	base := uint32(uintptr(unsafe.Pointer(&adapterArena)))
	start := (base + adapterUsed + align - 1) &^ (align - 1)
	if oldPtr != 0 || align == 0 || start+newSize > base+uint32(len(adapterArena)) {
		return trapAddr
	}
	adapterUsed = start + newSize - base
	return start
}

// Ret returns the scratch area (64 bytes) where an import writes results that do not fit in
// one core value. Read it with the Load functions right after the import returns.
func Ret() uint32 {
	reserve()
	clear(mem(scratch, 64))
	return scratch
}

// TakeString copies the n bytes at ptr into a Go string and frees their block.
func TakeString(ptr, n uint32) string {
	if n == 0 {
		Free(ptr) // the host may have allocated an empty block
		return ""
	}
	s := string(mem(ptr, n))
	Free(ptr)
	return s
}

// TakeBytes copies the n bytes at ptr into a new slice and frees their block. It returns nil
// for n == 0.
func TakeBytes(ptr, n uint32) []byte {
	if n == 0 {
		Free(ptr)
		return nil
	}
	b := append([]byte(nil), mem(ptr, n)...)
	Free(ptr)
	return b
}

// TakeStrings copies the list<string> of n elements at ptr into Go strings and frees its blocks.
func TakeStrings(ptr, n uint32) []string {
	ss := make([]string, n)
	for i := range ss {
		e := ptr + uint32(i)*8
		ss[i] = TakeString(Load32(e), Load32(e+4))
	}
	Free(ptr)
	return ss
}

// Load8 reads the byte at ptr (bool, u8, s8, enum and variant discriminants).
func Load8(ptr uint32) uint8 { return mem(ptr, 1)[0] }

// Load32 reads the little-endian u32 at ptr.
func Load32(ptr uint32) uint32 { return binary.LittleEndian.Uint32(mem(ptr, 4)) }

// Load64 reads the little-endian u64 at ptr.
func Load64(ptr uint32) uint64 { return binary.LittleEndian.Uint64(mem(ptr, 8)) }

// LoadF64 reads the f64 at ptr.
func LoadF64(ptr uint32) float64 { return math.Float64frombits(Load64(ptr)) }

// Store8 writes the byte v at ptr.
func Store8(ptr uint32, v uint8) { mem(ptr, 1)[0] = v }

// Store32 writes v at ptr, little-endian.
func Store32(ptr, v uint32) { binary.LittleEndian.PutUint32(mem(ptr, 4), v) }

// Store64 writes v at ptr, little-endian.
func Store64(ptr uint32, v uint64) { binary.LittleEndian.PutUint64(mem(ptr, 8), v) }

// StoreF64 writes v at ptr.
func StoreF64(ptr uint32, v float64) { Store64(ptr, math.Float64bits(v)) }

// Results starts lowering an export's results: it releases the memory lowered for the previous
// export call and returns a zeroed block of size bytes for the flattened results, whose address
// the export returns.
func Results(size uint32) uint32 {
	ReleaseResults()
	reserve()
	return resultBlock(size)
}

// ReleaseResults frees the memory lowered for the current export's results. Generated
// post-return functions (`cabi_post_NAME`) call it once the host has read the results; Results
// calls it too. It neither allocates nor calls imports, as post-return requires.
func ReleaseResults() {
	for _, p := range results {
		Free(p)
	}
	results = results[:0]
}

func resultBlock(size uint32) uint32 {
	p := Alloc(size)
	results = append(results, p)
	return p
}

// LowerString copies s into result memory and returns its address and length.
func LowerString(s string) (ptr, n uint32) {
	if len(s) == 0 {
		return 0, 0
	}
	ptr = resultBlock(uint32(len(s)))
	copy(mem(ptr, uint32(len(s))), s)
	return ptr, uint32(len(s))
}

// LowerBytes copies b into result memory and returns its address and length.
func LowerBytes(b []byte) (ptr, n uint32) {
	return LowerString(unsafe.String(unsafe.SliceData(b), len(b)))
}

// LowerList returns the address of zeroed result memory for n elements of elemSize bytes;
// the caller stores the elements with the Store functions.
func LowerList(n, elemSize uint32) uint32 {
	if n == 0 {
		return 0
	}
	return resultBlock(n * elemSize)
}

// CopyString copies s into a new block, for strings that an import reads from inside a list or
// record argument, and returns its address and length. Free the block after the import returns.
func CopyString(s string) (ptr, n uint32) {
	if len(s) == 0 {
		return 0, 0
	}
	ptr = Alloc(uint32(len(s)))
	copy(mem(ptr, uint32(len(s))), s)
	return ptr, uint32(len(s))
}

// LowerStrings copies ss into result memory as a list<string> and returns its address and
// length.
func LowerStrings(ss []string) (ptr, n uint32) {
	ptr = LowerList(uint32(len(ss)), 8)
	for i, s := range ss {
		p, l := LowerString(s)
		Store32(ptr+uint32(i)*8, p)
		Store32(ptr+uint32(i)*8+4, l)
	}
	return ptr, uint32(len(ss))
}

// ReturnString lowers s as an export's only result (a string: address@0, length@4) and returns
// the address the export returns.
func ReturnString(s string) uint32 {
	ret := Results(8)
	p, n := LowerString(s)
	Store32(ret, p)
	Store32(ret+4, n)
	return ret
}

// ReturnResultString lowers a result<string, string> as an export's only result (tag@0: 0 ok,
// 1 err; string@4) and returns the address the export returns.
func ReturnResultString(s string, err error) uint32 {
	ret := Results(12)
	if err != nil {
		Store8(ret, 1)
		s = err.Error()
	}
	p, n := LowerString(s)
	Store32(ret+4, p)
	Store32(ret+8, n)
	return ret
}

// ReturnStrings lowers ss as an export's only result (a list<string>: address@0, length@4) and
// returns the address the export returns.
func ReturnStrings(ss []string) uint32 {
	ret := Results(8)
	p, n := LowerStrings(ss)
	Store32(ret, p)
	Store32(ret+4, n)
	return ret
}
