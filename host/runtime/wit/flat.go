package wit

import (
	"errors"
	"strconv"
)

// Flat holds values in their canonical form: the scalars, strings and byte lists a depth-first
// walk of their types meets, in that order, without a tree of boxed Go values. Lower appends
// to it and Lift consumes it; internal/capi does the reverse against Wasmtime's C values.
// Both sides walk the same type, so the layout needs no tags:
//
//	bool, integers, char    one word (signed values sign-extended, char as its code point)
//	f32, f64                one word holding the IEEE bits
//	string                  one string
//	list<S>, S a scalar     one typed slice (see MakeList): []bool, []int8, []byte, []int16,
//	                        []uint16, []int32, []uint32, []int64, []uint64, []float32,
//	                        []float64, or []rune for char
//	list<T>, other T        one word (the length), then the elements
//	record, tuple           the fields or elements, in order
//	variant                 one word (the case index), then the payload if the case has one
//	enum                    one word (the case index)
//	option                  one word (0 none, 1 some), then the payload if some
//	result                  one word (0 ok, 1 err), then the payload if that side has a type
//	flags                   one word: bit i set when flag i (in declaration order) is set
//	own, borrow             one word (the Handle, or what a Converter's Resources make of it)
//
// A Flat is reused from call to call (Reset keeps its capacity), which is what makes crossing
// the boundary cheap. The zero value is empty and ready to use. Not safe for concurrent use.
type Flat struct {
	Words []uint64
	Strs  []string
	// Lists holds the lists of scalars, each one typed slice: a list costs its elements'
	// natural size, not a word each.
	Lists []any
	// read positions of Word, Str and List
	w, s, l int
}

// ErrFlatShort reports a Flat that ends before its type says it should (or holds a case,
// option or result discriminant out of range): a bug in whatever produced it.
var ErrFlatShort = errors.New("canonical value does not match its type")

// Reset empties f for reuse, dropping its references to strings and lists.
func (f *Flat) Reset() {
	clear(f.Strs)
	clear(f.Lists)
	f.Words, f.Strs, f.Lists = f.Words[:0], f.Strs[:0], f.Lists[:0]
	f.w, f.s, f.l = 0, 0, 0
}

// PutWord appends a word.
func (f *Flat) PutWord(x uint64) { f.Words = append(f.Words, x) }

// PutStr appends a string.
func (f *Flat) PutStr(s string) { f.Strs = append(f.Strs, s) }

// PutList appends a list of scalars, a typed slice (see MakeList).
func (f *Flat) PutList(x any) { f.Lists = append(f.Lists, x) }

// Word consumes the next word; ok is false when there is none.
func (f *Flat) Word() (x uint64, ok bool) {
	if f.w >= len(f.Words) {
		return 0, false
	}
	f.w++
	return f.Words[f.w-1], true
}

// Str consumes the next string; ok is false when there is none.
func (f *Flat) Str() (s string, ok bool) {
	if f.s >= len(f.Strs) {
		return "", false
	}
	f.s++
	return f.Strs[f.s-1], true
}

// List consumes the next list of scalars; ok is false when there is none.
func (f *Flat) List() (x any, ok bool) {
	if f.l >= len(f.Lists) {
		return nil, false
	}
	f.l++
	return f.Lists[f.l-1], true
}

// Rewind moves the read positions back to the start (to read the same values again).
func (f *Flat) Rewind() { f.w, f.s, f.l = 0, 0, 0 }

// Left is how many words, strings and lists f has left to read: a bound on the elements a
// list length read from f may claim, as each element takes one at least.
func (f *Flat) Left() int { return len(f.Words) - f.w + len(f.Strs) - f.s + len(f.Lists) - f.l }

// Index consumes a word that must be below n (a case index or a discriminant).
func (f *Flat) Index(n int) (int, bool) {
	x, ok := f.Word()
	if !ok || x >= uint64(n) {
		return 0, false
	}
	return int(x), true
}

// MaxFlags is the most flags a flags type may have here (the component model allows 32).
const MaxFlags = 64

// shortError is the *ValueError for a Flat that does not match t.
func shortError(t *Type) error {
	return &ValueError{Msg: ErrFlatShort.Error() + " (" + t.String() + ")", err: ErrFlatShort}
}

// index renders a list position as a path segment.
func index(i int) string { return "[" + strconv.Itoa(i) + "]" }
