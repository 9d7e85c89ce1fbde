package wit

import (
	"math"
	"reflect"
	"unicode/utf8"
)

// Scalar reports whether values of kind k are scalars: bool, the integers, the floats and
// char, one word each in a Flat. A list of scalars is one typed slice instead (see MakeList),
// in a Flat and in Lift's result (where list<char> is a []string).
func (k Kind) Scalar() bool { return k <= Char }

// listTypes are the Go types of the canonical lists of each scalar kind.
var listTypes = [...]reflect.Type{
	Bool: reflect.TypeFor[[]bool](),
	S8:   reflect.TypeFor[[]int8](),
	U8:   reflect.TypeFor[[]byte](),
	S16:  reflect.TypeFor[[]int16](),
	U16:  reflect.TypeFor[[]uint16](),
	S32:  reflect.TypeFor[[]int32](),
	U32:  reflect.TypeFor[[]uint32](),
	S64:  reflect.TypeFor[[]int64](),
	U64:  reflect.TypeFor[[]uint64](),
	F32:  reflect.TypeFor[[]float32](),
	F64:  reflect.TypeFor[[]float64](),
	Char: reflect.TypeFor[[]rune](),
}

// MakeList returns the canonical list of n zero scalars of kind k (see Flat), as a
// reflect.Value of its typed slice; k must be a scalar kind.
func MakeList(k Kind, n int) reflect.Value { return reflect.MakeSlice(listTypes[k], n, n) }

// ListOf returns x as the canonical list of scalars of kind k it is, and false when it is not
// one (a slice of another type, or not a slice).
func ListOf(k Kind, x any) (reflect.Value, bool) {
	rv := reflect.ValueOf(x)
	if !k.Scalar() || !rv.IsValid() || rv.Type() != listTypes[k] {
		return reflect.Value{}, false
	}
	return rv, true
}

// setWord sets element i of the canonical list x to the scalar whose canonical word is w.
func setWord(x any, i int, w uint64) {
	switch s := x.(type) {
	case []bool:
		s[i] = w != 0
	case []int8:
		s[i] = int8(w)
	case []byte:
		s[i] = byte(w)
	case []int16:
		s[i] = int16(w)
	case []uint16:
		s[i] = uint16(w)
	case []int32: // s32 and char
		s[i] = int32(w)
	case []uint32:
		s[i] = uint32(w)
	case []int64:
		s[i] = int64(w)
	case []uint64:
		s[i] = w
	case []float32:
		s[i] = math.Float32frombits(uint32(w))
	case []float64:
		s[i] = math.Float64frombits(w)
	}
}

// liftList returns the JSON-ish form of the canonical list x of kind k: x itself, except that
// a list of chars becomes a []string.
func liftList(k Kind, x any) any {
	runes, ok := x.([]rune)
	if !ok || k != Char {
		return x
	}
	all := string(runes) // one allocation; the chars are substrings of it
	out := make([]string, len(runes))
	at := 0
	for i, r := range runes {
		n := utf8.RuneLen(r)
		if n < 0 { // not a scalar value: string(runes) wrote U+FFFD
			n = utf8.RuneLen(utf8.RuneError)
		}
		out[i] = all[at : at+n]
		at += n
	}
	return out
}
