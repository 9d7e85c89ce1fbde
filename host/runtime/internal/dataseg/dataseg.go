// Package dataseg rewrites the data segments of the core modules in a WebAssembly component
// for a Wasmtime engine without Wasmtime's copy-on-write memory images (one with a custom
// memory creator): Prepare takes the segments out of the modules whose memory images the
// creator can map itself, and returns the Layout that tells it which memory gets which image
// (layout.go); Merge merges the segments of the other modules, so that Wasmtime initialises
// their memories with a few copies instead of one per segment.
//
// Toolchains emit many small segments (the Go linker splits data at every run of zeros, Wizer
// snapshots emit one segment per non-zero run: 22505 and 5958 segments in the example Go and
// JS gadgets), and Wasmtime's per-segment work costs about 25 ns each, more than copying a few
// hundred bytes. Wasmtime itself merges segments into one image per memory at compile time,
// but only when copy-on-write initialisation is on.
//
// The rewrite keeps the module's meaning: only a module that defines all its memories (imports
// none), has no data-count section (so no instruction names a segment), and whose segments are
// all active, in memory 0, at i32.const offsets and pairwise disjoint is rewritten. A run of
// consecutive segments in ascending order whose gaps are at most MaxGap bytes becomes one
// segment, its gaps filled with zeros; a gap is filled only when no other segment lies in it,
// so the zeros land where the fresh memory is zero anyway. The merged segment is out of bounds
// exactly when one of its segments was, so instantiation traps exactly when it did. Everything
// else is copied byte for byte; input that is not understood is returned unchanged.
package dataseg

import (
	"cmp"
	"slices"
	"sort"
)

// MaxGap is the longest run of zeros a merged segment fills in: copying it costs about as
// much as Wasmtime's work for one more segment.
const MaxGap = 256

// zeros fills the gaps of merged segments.
var zeros [MaxGap]byte

// Merge returns the component (or core module) bin with the data segments of its core
// modules merged, or bin itself when nothing changes or the binary is not understood.
func Merge(bin []byte) []byte {
	out, changed := rewrite(bin)
	if !changed {
		return bin
	}
	return out
}

var (
	magic     = []byte{0, 'a', 's', 'm'}
	coreLayer = []byte{1, 0, 0, 0}
)

// rewrite handles one component or core module, with its preamble.
func rewrite(bin []byte) ([]byte, bool) {
	if len(bin) < 8 || string(bin[:4]) != string(magic) {
		return nil, false
	}
	if string(bin[4:8]) == string(coreLayer) {
		return mergeModule(bin)
	}
	if bin[6] != 1 || bin[7] != 0 { // a component's layer
		return nil, false
	}
	secs, ok := sections(bin[8:])
	if !ok {
		return nil, false
	}
	out := append([]byte(nil), bin[:8]...)
	changed := false
	for _, s := range secs {
		payload := s.payload
		if s.id == 1 || s.id == 4 { // a core module or a nested component
			if p, ok := rewrite(payload); ok {
				payload, changed = p, true
			}
		}
		out = appendSection(out, s.id, payload)
	}
	return out, changed
}

type section struct {
	id      byte
	payload []byte
}

// sections splits a binary's body (after the preamble) into sections.
func sections(b []byte) ([]section, bool) {
	var out []section
	for r := (reader{b: b}); !r.done(); {
		id := r.byte()
		n := r.u32()
		payload := r.bytes(n)
		if r.bad {
			return nil, false
		}
		out = append(out, section{id, payload})
	}
	return out, true
}

func appendSection(out []byte, id byte, payload []byte) []byte {
	out = append(out, id)
	out = appendU32(out, uint32(len(payload)))
	return append(out, payload...)
}

// Segment is an active data segment of memory 0: data at an offset.
type Segment struct {
	Offset uint32
	Data   []byte
}

func (s Segment) end() uint64 { return uint64(s.Offset) + uint64(len(s.Data)) }

// mergeModule rewrites the data section of one core module, if the module qualifies.
func mergeModule(bin []byte) ([]byte, bool) {
	secs, ok := sections(bin[8:])
	if !ok {
		return nil, false
	}
	data := dataSection(secs)
	if data < 0 {
		return nil, false
	}
	segs, ok := parseData(secs[data].payload)
	if !ok {
		return nil, false
	}
	merged := mergeSegments(segs)
	if len(merged) == len(segs) {
		return nil, false
	}
	out := append([]byte(nil), bin[:8]...)
	for i, s := range secs {
		payload := s.payload
		if i == data {
			payload = encodeData(merged)
		}
		out = appendSection(out, s.id, payload)
	}
	return out, true
}

// dataSection returns the index in secs (a core module's sections) of the data section whose
// segments may be rewritten or taken out: the module imports no memory and has one data
// section and no data count section (instructions may name segments by index). -1 otherwise.
func dataSection(secs []section) int {
	data := -1
	for i, s := range secs {
		switch s.id {
		case 2:
			if !importsNoMemory(s.payload) {
				return -1
			}
		case 11:
			if data >= 0 {
				return -1
			}
			data = i
		case 12: // data count
			return -1
		}
	}
	return data
}

// importsNoMemory reports whether an import section is understood and imports no memory.
func importsNoMemory(b []byte) bool {
	r := reader{b: b}
	n := r.u32()
	for i := uint32(0); i < n && !r.bad; i++ {
		r.bytes(r.u32()) // module
		r.bytes(r.u32()) // name
		switch r.byte() {
		case 0x00: // func: a type index
			r.u32()
		case 0x04: // tag: an attribute byte and a type index
			r.byte()
			r.u32()
		case 0x01: // table: reference type and limits
			if t := r.byte(); t != 0x70 && t != 0x6f {
				return false
			}
			if _, _, _, ok := r.limits(); !ok {
				return false
			}
		case 0x03: // global: value type and mutability
			switch r.byte() {
			case 0x7f, 0x7e, 0x7d, 0x7c, 0x7b, 0x70, 0x6f:
			default:
				return false
			}
			r.byte()
		default: // 0x02, a memory, or not understood
			return false
		}
	}
	return !r.bad && r.done()
}

// parseData reads a data section whose segments are all active in memory 0 at i32.const
// offsets.
func parseData(b []byte) ([]Segment, bool) {
	r := reader{b: b}
	n := r.u32()
	if r.bad || uint64(n) > uint64(len(b)) {
		return nil, false
	}
	segs := make([]Segment, 0, n)
	for i := uint32(0); i < n && !r.bad; i++ {
		switch r.u32() {
		case 0:
		case 2:
			if r.u32() != 0 {
				return nil, false
			}
		default: // passive, or not understood
			return nil, false
		}
		if r.byte() != 0x41 { // i32.const
			return nil, false
		}
		off := uint32(r.s32())
		if r.byte() != 0x0b { // end
			return nil, false
		}
		segs = append(segs, Segment{Offset: off, Data: r.bytes(r.u32())})
	}
	return segs, !r.bad && r.done()
}

// mergeSegments merges runs of consecutive ascending segments (see the package comment); it
// returns segs unchanged unless all segments are pairwise disjoint.
func mergeSegments(segs []Segment) []Segment {
	starts, ok := sortedDisjoint(segs)
	if !ok {
		return segs
	}
	// emptyGap reports whether no segment starts in [from, to).
	emptyGap := func(from uint64, to uint32) bool {
		i := sort.Search(len(starts), func(i int) bool { return uint64(starts[i].off) >= from })
		return i == len(starts) || starts[i].off >= to
	}
	var out []Segment
	for i := 0; i < len(segs); {
		run := segs[i]
		end := run.end()
		var data []byte
		j := i + 1
		for ; j < len(segs); j++ {
			next := segs[j]
			if uint64(next.Offset) < end || uint64(next.Offset)-end > MaxGap || !emptyGap(end, next.Offset) {
				break
			}
			if data == nil {
				data = append(data, run.Data...)
			}
			data = append(data, zeros[:uint64(next.Offset)-end]...)
			data = append(data, next.Data...)
			end = next.end()
		}
		if data != nil {
			run.Data = data
		}
		out = append(out, run)
		i = j
	}
	return out
}

// sortedDisjoint returns where the segments lie, in ascending order, and whether they are
// pairwise disjoint.
func sortedDisjoint(segs []Segment) ([]span, bool) {
	spans := make([]span, len(segs)) // no pointers: sorting them is cheap
	for i, s := range segs {
		spans[i] = span{s.Offset, uint32(len(s.Data))}
	}
	spans = sortSpans(spans)
	for i := 1; i < len(spans); i++ {
		if uint64(spans[i].off) < spans[i-1].end() {
			return nil, false
		}
	}
	return spans, true
}

// span is where a segment lies.
type span struct{ off, n uint32 }

func (s span) end() uint64 { return uint64(s.off) + uint64(s.n) }

// sortSpans sorts spans by offset, in place or into a new slice (the result is sorted). It
// merges the ascending runs the input is made of: toolchains emit one or a few (the Go
// linker two), which takes linear time where a general sort does not.
func sortSpans(spans []span) []span {
	var runs []int // the end of each ascending run
	for i := 1; i <= len(spans); i++ {
		if i == len(spans) || spans[i].off < spans[i-1].off {
			runs = append(runs, i)
		}
	}
	switch {
	case len(runs) == 1:
		return spans
	case len(runs) > 64: // not a toolchain's order
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.off, b.off) })
		return spans
	}
	buf := make([]span, len(spans))
	for len(runs) > 1 {
		var merged []int
		start := 0
		for i := 0; i < len(runs); i += 2 {
			if i+1 == len(runs) {
				copy(buf[start:], spans[start:runs[i]])
				merged = append(merged, runs[i])
				break
			}
			mergeSpans(buf[start:runs[i+1]], spans[start:runs[i]], spans[runs[i]:runs[i+1]])
			merged = append(merged, runs[i+1])
			start = runs[i+1]
		}
		spans, buf, runs = buf, spans, merged
	}
	return spans
}

// mergeSpans merges the sorted a and b into out.
func mergeSpans(out, a, b []span) {
	i, j := 0, 0
	for k := range out {
		if j == len(b) || i < len(a) && a[i].off <= b[j].off {
			out[k] = a[i]
			i++
		} else {
			out[k] = b[j]
			j++
		}
	}
}

func encodeData(segs []Segment) []byte {
	out := appendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		out = append(out, 0x00, 0x41)
		out = appendS32(out, int32(s.Offset))
		out = append(out, 0x0b)
		out = appendU32(out, uint32(len(s.Data)))
		out = append(out, s.Data...)
	}
	return out
}

func appendU32(b []byte, v uint32) []byte {
	for v >= 0x80 {
		b = append(b, byte(v)|0x80)
		v >>= 7
	}
	return append(b, byte(v))
}

func appendS32(b []byte, v int32) []byte {
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if (v == 0 && c&0x40 == 0) || (v == -1 && c&0x40 != 0) {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// reader decodes the binary format strictly (LEB128 as the specification bounds it), so that
// nothing the validator would refuse is re-encoded into something it accepts. After the
// first error bad is set and every read returns zero.
type reader struct {
	b   []byte
	at  int // the next byte; an index rather than a resliced b, so reads write no pointer
	bad bool
}

func (r *reader) done() bool { return r.bad || r.at == len(r.b) }

func (r *reader) byte() byte {
	if r.bad || r.at == len(r.b) {
		r.bad = true
		return 0
	}
	c := r.b[r.at]
	r.at++
	return c
}

func (r *reader) bytes(n uint32) []byte {
	if r.bad || uint64(n) > uint64(len(r.b)-r.at) {
		r.bad = true
		return nil
	}
	end := r.at + int(n)
	out := r.b[r.at:end:end]
	r.at = end
	return out
}

func (r *reader) u32() uint32 {
	if !r.bad && r.at < len(r.b) && r.b[r.at] < 0x80 { // one byte: most values
		r.at++
		return uint32(r.b[r.at-1])
	}
	return r.u32long()
}

func (r *reader) u32long() uint32 {
	var v uint32
	for i := 0; i < 5; i++ {
		c := r.byte()
		if i == 4 && c&0xf0 != 0 { // continuation or bits beyond 32
			r.bad = true
		}
		v |= uint32(c&0x7f) << (7 * i)
		if c&0x80 == 0 || r.bad {
			break
		}
	}
	if r.bad {
		return 0
	}
	return v
}

func (r *reader) s32() int32 {
	var v int32
	for i := 0; i < 5; i++ {
		c := r.byte()
		if i == 4 {
			// No continuation, and the unused bits must repeat the sign bit (bit 3).
			if c&0x80 != 0 || (c&0x78 != 0 && c&0x78 != 0x78) {
				r.bad = true
				break
			}
			v |= int32(c) << 28
			break
		}
		v |= int32(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			if c&0x40 != 0 {
				v |= -1 << (7 * (i + 1))
			}
			break
		}
	}
	if r.bad {
		return 0
	}
	return v
}

// limits reads 32-bit, unshared limits of a table or memory: the minimum, and the maximum when
// flagged (hasMax); false for other limits (64-bit or shared: not understood).
func (r *reader) limits() (min, max uint32, hasMax, ok bool) {
	switch r.byte() {
	case 0x00:
		min = r.u32()
	case 0x01:
		min, max, hasMax = r.u32(), r.u32(), true
	default:
		return 0, 0, false, false
	}
	return min, max, hasMax, !r.bad
}
