package wit

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// Encoded sizes. A lifted value is sent on as JSON (Cap'n Web's encoding: arrays wrapped in
// one more array, list<u8> as ["bytes","<base64>"], a resource as a stub ["export",id]). The
// functions here estimate the bytes of that encoding from the canonical form while a value is
// lifted, part by part, so that a value too large to send is refused before it is built:
// scalars, strings, names and list lengths are counted exactly; what is only estimated is a
// resource's stub (stubSize) and a list's separators.

// ErrTooLarge is what a *SizeError wraps: the value's encoding would pass the Budget's limit.
var ErrTooLarge = errors.New("value too large to encode")

// SizeError reports a value refused by its Budget: Size is its estimated encoding so far (the
// whole value is larger still), Limit the Budget's.
type SizeError struct {
	Size, Limit int64
}

// Error says how large the value is, about, and the limit.
func (e *SizeError) Error() string {
	return fmt.Sprintf("value is at least %s encoded, over the limit of %s", FormatSize(e.Size), FormatSize(e.Limit))
}

// Unwrap returns ErrTooLarge.
func (e *SizeError) Unwrap() error { return ErrTooLarge }

// FormatSize writes a byte count for people: "80 MB", "16 MiB" and "256 KiB" for exact
// mebibytes and kibibytes (as limits are), "512 B".
func FormatSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	case n >= 1e6:
		return strconv.FormatInt((n+5e5)/1e6, 10) + " MB"
	case n >= 1e3:
		return strconv.FormatInt((n+500)/1e3, 10) + " kB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// Budget bounds the estimated encoded size of what is lifted against it. The zero Budget is
// unbounded; its ChargeNode, ChargeString, ChargeList and CheckList cost nothing.
type Budget struct {
	// Limit is the most bytes the encoding may take; 0 is no limit.
	Limit int64
	// Used is the estimate so far.
	Used int64
}

// Charge adds n bytes to the estimate and returns a *SizeError once it passes the limit.
func (b *Budget) Charge(n int64) error {
	if err := b.Check(n); err != nil {
		return err
	}
	b.Used += n
	return nil
}

// Check returns the *SizeError that Charge(n) would, without charging.
func (b *Budget) Check(n int64) error {
	if b.Limit > 0 && b.Used+n > b.Limit {
		return &SizeError{Size: b.Used + n, Limit: b.Limit}
	}
	return nil
}

// ChargeNode charges Overhead(t, w), the part of a value of type t outside its strings and
// lists.
func (b *Budget) ChargeNode(t *Type, w uint64) error {
	if b.Limit == 0 {
		return nil
	}
	return b.Charge(Overhead(t, w))
}

// ChargeString charges StringSize(s).
func (b *Budget) ChargeString(s string) error {
	if b.Limit == 0 {
		return nil
	}
	return b.Charge(StringSize(s))
}

// CheckList checks that a list of n scalars of kind k may fit (at MinElemSize each), before
// the list is made.
func (b *Budget) CheckList(k Kind, n int) error {
	if b.Limit == 0 {
		return nil
	}
	return b.Check(int64(n) * MinElemSize(k))
}

// ChargeList charges ListSize(k, x).
func (b *Budget) ChargeList(k Kind, x any) error {
	if b.Limit == 0 {
		return nil
	}
	return b.Charge(ListSize(k, x))
}

// stubSize is the estimated encoding of a resource: a stub, ["export",-12].
const stubSize = 13

// Overhead is the encoded size of one value of type t apart from the strings and lists it
// holds, whose own sizes StringSize and ListSize give: all of a scalar (w is its canonical
// word), and the frame of the others around their parts, with the separators between them.
// w is the value's canonical word where it has one (a list's length, a case index, an option
// or result discriminant, flag bits); strings and lists of scalars ignore it.
func Overhead(t *Type, w uint64) int64 {
	switch t.Kind {
	case String:
		return 0
	case List:
		if t.Elem.Kind.Scalar() {
			return 0
		}
		return 4 + commas(int64(w)) // [[a,b]]
	case Tuple:
		return 4 + commas(int64(len(t.Elems)))
	case Record:
		n := 2 + commas(int64(len(t.Fields))) // {"a":x,"b":y}
		for _, fd := range t.Fields {
			n += int64(len(fd.Name)) + 3
		}
		return n
	case Variant:
		if w >= uint64(len(t.Cases)) {
			return 0
		}
		c := t.Cases[w] // {"tag":"c"} or {"tag":"c","val":x}
		n := int64(10 + len(c.Name))
		if c.Type != nil {
			n += 7
		}
		return n
	case Enum:
		if w >= uint64(len(t.Names)) {
			return 0
		}
		return int64(len(t.Names[w])) + 2
	case Option:
		switch {
		case w == 0:
			return 4 // null
		case t.Elem.Kind == Option:
			return 9 // {"some":x}
		}
		return 0
	case Result:
		side, n := t.Ok, int64(7) // {"ok":x}
		if w != 0 {
			side, n = t.Err, 8
		}
		if side == nil {
			n += 4 // null
		}
		return n
	case Flags:
		n := 4 + commas(int64(bits.OnesCount64(w))) // [["a","b"]]
		for i, name := range t.Names {
			if i < 64 && w&(1<<i) != 0 {
				n += int64(len(name)) + 2
			}
		}
		return n
	case Own, Borrow:
		return stubSize
	}
	return wordSize(t.Kind, w)
}

func commas(n int64) int64 { return max(n-1, 0) }

// wordSize is the encoded size of the scalar of kind k whose canonical word is w.
func wordSize(k Kind, w uint64) int64 {
	switch k {
	case Bool:
		if w != 0 {
			return 4
		}
		return 5
	case S8:
		return intSize(int64(int8(w)))
	case S16:
		return intSize(int64(int16(w)))
	case S32:
		return intSize(int64(int32(w)))
	case S64:
		return intSize(int64(w))
	case U8, U16, U32, U64:
		return uintSize(w)
	case F32:
		return floatSize(float64(math.Float32frombits(uint32(w))))
	case F64:
		return floatSize(math.Float64frombits(w))
	case Char:
		return StringSize(string(rune(w)))
	}
	return 0
}

// uintSize is the encoded size of an unsigned integer: its digits, or ["bigint","<digits>"]
// beyond 2^53, where JavaScript numbers end.
func uintSize(u uint64) int64 {
	n := int64(1)
	for x := u; x >= 10; x /= 10 {
		n++
	}
	if u > 1<<53 {
		n += 13
	}
	return n
}

func intSize(i int64) int64 {
	if i < 0 {
		return 1 + uintSize(uint64(-i))
	}
	return uintSize(uint64(i))
}

// floatSize is the encoded size of a float (f32 values are sent as the f64 they widen to): its
// shortest decimal form, or ["nan"] and the like.
func floatSize(x float64) int64 {
	switch {
	case math.IsNaN(x) || math.IsInf(x, 1):
		return 7
	case math.IsInf(x, -1):
		return 8
	case x == math.Trunc(x) && math.Abs(x) < 1e15:
		return intSize(int64(x))
	}
	var buf [32]byte
	return int64(len(strconv.AppendFloat(buf[:0], x, 'g', -1, 64)))
}

// StringSize is the encoded size of the string s: quoted, with quotes, backslashes and
// control characters escaped, and an invalid byte as \ufffd.
func StringSize(s string) int64 {
	n := int64(len(s)) + 2
	for i := 0; i < len(s); i++ {
		n += int64(escapeExtra[s[i]])
	}
	if utf8.ValidString(s) {
		return n
	}
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 5
		}
		i += size
	}
	return n
}

// escapeExtra is what escaping adds to each byte of a string: 1 for \" \\ \b \f \n \r \t, 5 for
// the other control characters (\u001f).
var escapeExtra = func() (t [256]uint8) {
	for c := range 0x20 {
		t[c] = 5
	}
	for _, c := range "\"\\\b\f\n\r\t" {
		t[c] = 1
	}
	return t
}()

// MinElemSize is the least encoded size of an element of a list of scalars of kind k, with
// its separator: what a list of n of them costs at least, before its elements are read.
func MinElemSize(k Kind) int64 {
	switch k {
	case Bool:
		return 5 // true,
	case U8:
		return 1 // 3 bytes of base64 per 3 bytes
	case Char:
		return 4 // "c",
	}
	return 2 // 0,
}

// ListSize is the encoded size of x, the canonical list of scalars of kind k (see MakeList).
func ListSize(k Kind, x any) int64 {
	if b, ok := x.([]byte); ok {
		return 12 + (int64(len(b))*4+2)/3 // ["bytes","<base64>"]
	}
	rv, ok := ListOf(k, x)
	if !ok {
		return 0
	}
	n := 4 + commas(int64(rv.Len()))
	switch s := x.(type) {
	case []bool:
		n += sum(k, s, b2w)
	case []int8:
		n += sum(k, s, func(v int8) uint64 { return uint64(v) })
	case []int16:
		n += sum(k, s, func(v int16) uint64 { return uint64(v) })
	case []uint16:
		n += sum(k, s, func(v uint16) uint64 { return uint64(v) })
	case []int32: // s32 and char
		n += sum(k, s, func(v int32) uint64 { return uint64(v) })
	case []uint32:
		n += sum(k, s, func(v uint32) uint64 { return uint64(v) })
	case []int64:
		n += sum(k, s, func(v int64) uint64 { return uint64(v) })
	case []uint64:
		n += sum(k, s, func(v uint64) uint64 { return v })
	case []float32:
		n += sum(k, s, func(v float32) uint64 { return uint64(math.Float32bits(v)) })
	case []float64:
		n += sum(k, s, math.Float64bits)
	}
	return n
}

// sum is the encoded size of the elements of s, each sized by wordSize of its canonical word.
func sum[T any](k Kind, s []T, word func(T) uint64) int64 {
	n := int64(0)
	for _, v := range s {
		n += wordSize(k, word(v))
	}
	return n
}
