package wit

import (
	"encoding/json"
	"math"
	"strconv"
)

// number is a JSON-ish number of any Go representation, kept exact until it is checked against
// its WIT type.
type number struct {
	kind numKind
	i    int64
	u    uint64
	f    float64
}

type numKind uint8

const (
	numInt numKind = iota
	numUint
	numFloat
)

// toNumber accepts every Go integer and float type and json.Number.
func toNumber(v any) (number, bool) {
	switch x := v.(type) {
	case int:
		return number{kind: numInt, i: int64(x)}, true
	case int8:
		return number{kind: numInt, i: int64(x)}, true
	case int16:
		return number{kind: numInt, i: int64(x)}, true
	case int32:
		return number{kind: numInt, i: int64(x)}, true
	case int64:
		return number{kind: numInt, i: x}, true
	case uint:
		return number{kind: numUint, u: uint64(x)}, true
	case uint8:
		return number{kind: numUint, u: uint64(x)}, true
	case uint16:
		return number{kind: numUint, u: uint64(x)}, true
	case uint32:
		return number{kind: numUint, u: uint64(x)}, true
	case uint64:
		return number{kind: numUint, u: x}, true
	case uintptr:
		return number{kind: numUint, u: uint64(x)}, true
	case float32:
		return number{kind: numFloat, f: float64(x)}, true
	case float64:
		return number{kind: numFloat, f: x}, true
	case json.Number:
		return parseNumber(string(x))
	}
	return number{}, false
}

func parseNumber(s string) (number, bool) {
	if i, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number{kind: numInt, i: i}, true
	}
	if u, err := strconv.ParseUint(s, 10, 64); err == nil {
		return number{kind: numUint, u: u}, true
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return number{}, false
	}
	return number{kind: numFloat, f: f}, true
}

// signed returns n as an integer in [-2^(bits-1), 2^(bits-1)).
func (n number) signed(bits uint) (int64, bool) {
	lo, hi := int64(-1)<<(bits-1), int64(uint64(1)<<(bits-1)-1)
	switch n.kind {
	case numInt:
		return n.i, n.i >= lo && n.i <= hi
	case numUint:
		return int64(n.u), n.u <= uint64(hi)
	}
	if n.f != math.Trunc(n.f) || math.IsInf(n.f, 0) {
		return 0, false
	}
	// float64(hi)+1 is exactly 2^(bits-1); comparing against it avoids rounding hi up.
	if n.f < float64(lo) || n.f >= math.Ldexp(1, int(bits-1)) {
		return 0, false
	}
	return int64(n.f), true
}

// unsigned returns n as an integer in [0, 2^bits).
func (n number) unsigned(bits uint) (uint64, bool) {
	hi := uint64(math.MaxUint64)
	if bits < 64 {
		hi = uint64(1)<<bits - 1
	}
	switch n.kind {
	case numInt:
		return uint64(n.i), n.i >= 0 && uint64(n.i) <= hi
	case numUint:
		return n.u, n.u <= hi
	}
	if n.f != math.Trunc(n.f) || math.IsInf(n.f, 0) || n.f < 0 || n.f >= math.Ldexp(1, int(bits)) {
		return 0, false
	}
	return uint64(n.f), true
}

// float returns n as a float64 (integers beyond 2^53 round to the nearest float).
func (n number) float() float64 {
	switch n.kind {
	case numInt:
		return float64(n.i)
	case numUint:
		return float64(n.u)
	}
	return n.f
}

// word returns n as the canonical word of the number kind k (see Flat); ok is false when n is
// out of k's range.
func (n number) word(k Kind) (uint64, bool) {
	switch k {
	case S8, S16, S32, S64:
		i, ok := n.signed(intBits(k))
		return uint64(i), ok
	case F32:
		x := n.float()
		if !math.IsInf(x, 0) && !math.IsNaN(x) && math.Abs(x) > math.MaxFloat32 {
			return 0, false
		}
		return uint64(math.Float32bits(float32(x))), true
	case F64:
		return math.Float64bits(n.float()), true
	}
	return n.unsigned(intBits(k))
}
