package capnweb

import "math/big"

// Typed lists. A slice of booleans, numbers or strings ([]bool, []int8 ... []uint64, []float32,
// []float64, []string; []byte is bytes) is a canonical value as it is: it means the same array
// as the []any of its elements would, and is encoded straight from the slice, so a large list
// of scalars (a gadget's list<bool> or list<u32>, say) is never boxed element by element.
// Where a value is taken apart element by element (a pipelined path into it, .map(), a Go
// client's assignment), boxList gives its []any form.

// isTypedList reports whether v is one of the typed lists.
func isTypedList(v any) bool {
	switch v.(type) {
	case []bool, []int8, []int16, []uint16, []int32, []uint32, []int64, []uint64, []float32, []float64, []string:
		return true
	}
	return false
}

// boxList returns the []any form of an array value: v itself, or a typed list's elements as
// canonical values; ok is false for anything else.
func boxList(v any) (list []any, ok bool) {
	switch s := v.(type) {
	case []any:
		return s, true
	case []bool:
		return boxed(s, func(x bool) any { return x }), true
	case []int8:
		return boxed(s, func(x int8) any { return float64(x) }), true
	case []int16:
		return boxed(s, func(x int16) any { return float64(x) }), true
	case []uint16:
		return boxed(s, func(x uint16) any { return float64(x) }), true
	case []int32:
		return boxed(s, func(x int32) any { return float64(x) }), true
	case []uint32:
		return boxed(s, func(x uint32) any { return float64(x) }), true
	case []int64:
		return boxed(s, intValue), true
	case []uint64:
		return boxed(s, uintValue), true
	case []float32:
		return boxed(s, func(x float32) any { return float64(x) }), true
	case []float64:
		return boxed(s, func(x float64) any { return x }), true
	case []string:
		return boxed(s, func(x string) any { return x }), true
	}
	return nil, false
}

func boxed[T any](s []T, box func(T) any) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = box(x)
	}
	return out
}

// encodeTypedList appends the wire form of a typed list, as encodeValue would write its []any
// form; ok is false when v is not a typed list.
func encodeTypedList(b []byte, v any) (out []byte, ok bool) {
	switch s := v.(type) {
	case []bool:
		return appendList(b, s, appendBool), true
	case []int8:
		return appendList(b, s, func(b []byte, x int8) []byte { return appendJSONNumber(b, float64(x)) }), true
	case []int16:
		return appendList(b, s, func(b []byte, x int16) []byte { return appendJSONNumber(b, float64(x)) }), true
	case []uint16:
		return appendList(b, s, func(b []byte, x uint16) []byte { return appendJSONNumber(b, float64(x)) }), true
	case []int32:
		return appendList(b, s, func(b []byte, x int32) []byte { return appendJSONNumber(b, float64(x)) }), true
	case []uint32:
		return appendList(b, s, func(b []byte, x uint32) []byte { return appendJSONNumber(b, float64(x)) }), true
	case []int64:
		return appendList(b, s, func(b []byte, x int64) []byte {
			if x > maxSafeInt || x < -maxSafeInt {
				return appendBigInt(b, big.NewInt(x))
			}
			return appendJSONNumber(b, float64(x))
		}), true
	case []uint64:
		return appendList(b, s, func(b []byte, x uint64) []byte {
			if x > maxSafeInt {
				return appendBigInt(b, new(big.Int).SetUint64(x))
			}
			return appendJSONNumber(b, float64(x))
		}), true
	case []float32:
		return appendList(b, s, func(b []byte, x float32) []byte { return appendFloat(b, float64(x)) }), true
	case []float64:
		return appendList(b, s, appendFloat), true
	case []string:
		return appendList(b, s, appendJSONString), true
	}
	return b, false
}

func appendList[T any](b []byte, s []T, appendOne func([]byte, T) []byte) []byte {
	b = append(b, "[["...)
	for i, x := range s {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendOne(b, x)
	}
	return append(b, "]]"...)
}
