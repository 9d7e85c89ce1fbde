package witdecode

import (
	"fmt"
	"unicode/utf8"
)

// decodeError is how the reader gives up: it is raised with panic and turned back into an
// error by Decode (and only there), so that the parser reads as a grammar.
type decodeError struct{ err error }

// reader reads one byte range of the file; off is relative to b, base is b's offset in the
// file (for messages).
type reader struct {
	b    []byte
	off  int
	base int
}

func (r *reader) failf(format string, args ...any) {
	panic(decodeError{fmt.Errorf("at byte %#x: %s", r.base+r.off, fmt.Sprintf(format, args...))})
}

func (r *reader) done() bool { return r.off >= len(r.b) }

func (r *reader) remaining() int { return len(r.b) - r.off }

func (r *reader) byte() byte {
	if r.off >= len(r.b) {
		r.failf("unexpected end of data")
	}
	c := r.b[r.off]
	r.off++
	return c
}

func (r *reader) peek() byte {
	if r.off >= len(r.b) {
		r.failf("unexpected end of data")
	}
	return r.b[r.off]
}

// u32 reads an unsigned LEB128 number of at most 32 bits.
func (r *reader) u32() uint32 { return uint32(r.uleb(32)) }

// u64 reads an unsigned LEB128 number of at most 64 bits (core limits).
func (r *reader) u64() uint64 { return r.uleb(64) }

// uleb reads an unsigned LEB128 number of at most bits bits (32 or 64): at most
// ceil(bits/7) bytes, the last of which may carry only the bits that are left.
func (r *reader) uleb(bits int) uint64 {
	var v uint64
	for shift := 0; shift < bits; shift += 7 {
		c := r.byte()
		if shift+7 > bits && uint64(c&0x7f)>>(bits-shift) != 0 {
			r.failf("integer too large for u%d", bits)
		}
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v
		}
	}
	r.failf("integer representation too long")
	return 0
}

// s33 reads a signed LEB128 number of at most 33 bits, as type indices and heap types are
// written.
func (r *reader) s33() int64 {
	var v int64
	shift := 0
	for {
		c := r.byte()
		v |= int64(c&0x7f) << shift
		shift += 7
		if c&0x80 == 0 {
			if shift < 64 && c&0x40 != 0 {
				v |= -1 << shift
			}
			break
		}
		if shift >= 35 {
			r.failf("integer representation too long")
		}
	}
	if v < -(1<<32) || v >= 1<<32 {
		r.failf("integer too large for s33")
	}
	return v
}

// count reads a vector length. Every element takes at least one byte, so a count larger than
// what is left is malformed; that bounds every allocation by the input's size.
func (r *reader) count(what string) int {
	n := r.u32()
	if int64(n) > int64(r.remaining()) {
		r.failf("%s count %d exceeds the %d bytes left", what, n, r.remaining())
	}
	return int(n)
}

// bytes reads n bytes.
func (r *reader) bytes(n uint32, what string) []byte {
	if int64(n) > int64(r.remaining()) {
		r.failf("%s of %d bytes exceeds the %d bytes left", what, n, r.remaining())
	}
	b := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return b
}

// name reads a length-prefixed UTF-8 string.
func (r *reader) name() string {
	b := r.bytes(r.u32(), "name")
	if !utf8.Valid(b) {
		r.failf("name is not valid UTF-8")
	}
	return string(b)
}

// sub returns a reader of the next n bytes and skips them.
func (r *reader) sub(n uint32, what string) *reader {
	start := r.off
	b := r.bytes(n, what)
	return &reader{b: b, base: r.base + start}
}
