package wit_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"reflect"
	goruntime "runtime"
	"testing"
	"unicode/utf8"

	"atelier/host/runtime/wit"
)

// TestScalarListsLiftTyped checks that lists of scalars lift as typed slices (list<char> as
// []string), from JSON-ish numbers and from typed slices alike, and that a typed slice of the
// list's own type is taken as it is.
func TestScalarListsLiftTyped(t *testing.T) {
	for _, c := range []struct {
		elem wit.Kind
		in   any
		want any
	}{
		{wit.Bool, []any{true, false}, []bool{true, false}},
		{wit.U8, []any{1.0, 255.0}, []byte{1, 255}},
		{wit.S8, []any{-1.0, 5.0}, []int8{-1, 5}},
		{wit.U16, []int{7}, []uint16{7}},
		{wit.S32, []any{json.Number("-3")}, []int32{-3}},
		{wit.U32, []uint32{1, 2}, []uint32{1, 2}},
		{wit.S64, []any{-1.0}, []int64{-1}},
		{wit.U64, []any{uint64(math.MaxUint64)}, []uint64{math.MaxUint64}},
		{wit.F32, []any{0.5}, []float32{0.5}},
		{wit.F64, []float64{1.5}, []float64{1.5}},
		{wit.Char, []any{"a", "é", "😀"}, []string{"a", "é", "😀"}},
		{wit.Char, []string{}, []string{}},
	} {
		typ := &wit.Type{Kind: wit.List, Elem: prim(c.elem)}
		var f wit.Flat
		if err := wit.Lower(typ, c.in, "x", &f); err != nil {
			t.Fatalf("lower %v as %s: %v", c.in, typ, err)
		}
		got, err := wit.Lift(typ, &f, "x")
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: lift(lower(%v)) = %#v, %v; want %#v", typ, c.in, got, err, c.want)
		}
	}
	in := []uint32{1, 2, 3}
	var f wit.Flat
	if err := wit.Lower(&wit.Type{Kind: wit.List, Elem: tU32}, in, "x", &f); err != nil || &f.Lists[0].([]uint32)[0] != &in[0] {
		t.Errorf("a []uint32 for list<u32> was copied (%v)", err)
	}
	if err := wit.Lower(&wit.Type{Kind: wit.List, Elem: prim(wit.U8)}, []any{1.0, 256.0}, "x", &f); err == nil || err.Error() != "x[1]: 256 is out of range for u8" {
		t.Errorf("out-of-range u8 element: %v", err)
	}
}

// TestBudget checks that a Budget refuses the charge that passes its limit and says by how
// much, that its estimating charges use the encoded sizes, and that the zero Budget estimates
// nothing.
func TestBudget(t *testing.T) {
	b := wit.Budget{Limit: 16 << 20}
	if err := b.Charge(10 << 20); err != nil {
		t.Fatal(err)
	}
	err := b.Charge(70_000_000)
	var se *wit.SizeError
	if !errors.Is(err, wit.ErrTooLarge) || !errors.As(err, &se) || err.Error() != "value is at least 80 MB encoded, over the limit of 16 MiB" {
		t.Fatalf("charge past the limit = %v", err)
	}
	if b.Used != 10<<20 {
		t.Errorf("a refused charge was counted: used %d", b.Used)
	}
	var free wit.Budget
	if err := free.Charge(math.MaxInt32); err != nil || free.Used != math.MaxInt32 {
		t.Errorf("zero budget: %v, used %d", err, free.Used)
	}
	if err := free.ChargeString("abc"); err != nil || free.Used != math.MaxInt32 {
		t.Errorf("zero budget estimated a string: %v, used %d", err, free.Used)
	}
	small := wit.Budget{Limit: 10}
	if err := small.CheckList(wit.Bool, 3); !errors.Is(err, wit.ErrTooLarge) || small.Used != 0 {
		t.Errorf("3 bools (at least 15 bytes) against 10: %v, used %d", err, small.Used)
	}
	if err := small.ChargeList(wit.U32, []uint32{1, 22}); err != nil || small.Used != 8 { // [[1,22]]
		t.Errorf("[[1,22]]: %v, used %d", err, small.Used)
	}
	if err := small.ChargeNode(&wit.Type{Kind: wit.Bool}, 0); !errors.Is(err, wit.ErrTooLarge) { // false
		t.Errorf("false past the limit: %v", err)
	}
}

// FuzzLiftBound generates a WIT type and a canonical value of it from the input, lifts it and
// checks the estimate of its encoding made from the canonical parts (wit.Overhead,
// StringSize, ListSize, as internal/capi charges them while lifting from Wasmtime): it is at
// least a quarter of the real JSON encoding and at most four times it (plus a little per
// resource and list frame), and the lifting allocated at most maxAllocPerByte times it.
func FuzzLiftBound(f *testing.F) {
	f.Add([]byte{13, 0, 200, 1, 2, 3})
	f.Add([]byte{14, 2, 12, 0, 13, 11, 5, 'a', 'b'})
	f.Add([]byte{13, 11, 255, 0xe2, 0x82, 0xac, 0})
	f.Add([]byte{17, 3, 15, 1, 9, 0, 0, 0, 13, 3, 40, 7, 7, 7, 7, 7, 7, 7, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		g := &gen{data: data}
		typ := g.typ(0)
		var fl wit.Flat
		g.value(typ, &fl)
		est := estimate(t, typ, &fl)
		// TotalAlloc counts every goroutine's allocations (the fuzzing engine's too): the
		// lifting's own is the least of a few runs.
		var v any
		grew := int64(math.MaxInt64)
		for range 3 {
			fl.Rewind()
			var before, after goruntime.MemStats
			goruntime.ReadMemStats(&before)
			lifted, err := wit.Lift(typ, &fl, "v")
			goruntime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("lift %s: %v", typ, err)
			}
			v, grew = lifted, min(grew, int64(after.TotalAlloc-before.TotalAlloc))
		}
		var enc bytes.Buffer
		je := json.NewEncoder(&enc)
		je.SetEscapeHTML(false) // as Cap'n Web writes strings
		if err := je.Encode(v); err != nil {
			t.Fatalf("encode %s: %v", typ, err)
		}
		real := int64(enc.Len() - 1) // without Encode's newline
		if est*4 < real || est > 4*real+64+int64(g.frames)*16 {
			t.Errorf("%s: estimate %d for an encoding of %d: %s", typ, est, real, enc.Bytes())
		}
		const maxAllocPerByte = 64 // a small record costs its fields and their boxed values
		if grew > maxAllocPerByte*est+4096 {
			t.Errorf("%s: lifting allocated %d bytes for an estimate of %d", typ, grew, est)
		}
	})
}

// estimate walks a canonical value and adds up what internal/capi charges for each part.
func estimate(t *testing.T, typ *wit.Type, f *wit.Flat) int64 {
	switch {
	case typ.Kind == wit.String:
		s, _ := f.Str()
		return wit.StringSize(s)
	case typ.Kind == wit.List && typ.Elem.Kind.Scalar():
		x, _ := f.List()
		return wit.ListSize(typ.Elem.Kind, x)
	case typ.Kind == wit.Record:
		n := wit.Overhead(typ, 0)
		for _, fd := range typ.Fields {
			n += estimate(t, fd.Type, f)
		}
		return n
	case typ.Kind == wit.Tuple:
		n := wit.Overhead(typ, 0)
		for _, e := range typ.Elems {
			n += estimate(t, e, f)
		}
		return n
	}
	w, ok := f.Word()
	if !ok {
		t.Fatalf("flat of %s ends early", typ)
	}
	n := wit.Overhead(typ, w)
	switch typ.Kind {
	case wit.List:
		for range w {
			n += estimate(t, typ.Elem, f)
		}
	case wit.Variant:
		if c := typ.Cases[w]; c.Type != nil {
			n += estimate(t, c.Type, f)
		}
	case wit.Option:
		if w == 1 {
			n += estimate(t, typ.Elem, f)
		}
	case wit.Result:
		side := typ.Ok
		if w == 1 {
			side = typ.Err
		}
		if side != nil {
			n += estimate(t, side, f)
		}
	}
	return n
}

// gen makes types and values from fuzz input; past its end every byte reads as 0.
type gen struct {
	data   []byte
	i      int
	frames int // lists and resources made, whose estimate is a little above their JSON
}

func (g *gen) byte() byte {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return g.data[g.i-1]
}

func (g *gen) name() string { return string(rune('a' + g.byte()%26)) }

func (g *gen) typ(depth int) *wit.Type {
	k := wit.Kind(g.byte() % 22)
	if depth >= 4 && !k.Scalar() {
		k = wit.String
	}
	t := &wit.Type{Kind: k}
	switch k {
	case wit.List, wit.Option:
		t.Elem = g.typ(depth + 1)
	case wit.Record:
		for i := range 1 + int(g.byte()%4) {
			t.Fields = append(t.Fields, wit.Field{Name: g.name() + string(rune('0'+i)), Type: g.typ(depth + 1)})
		}
	case wit.Tuple:
		for range 1 + int(g.byte()%3) {
			t.Elems = append(t.Elems, g.typ(depth+1))
		}
	case wit.Variant:
		for i := range 1 + int(g.byte()%3) {
			c := wit.Case{Name: g.name() + string(rune('0'+i))}
			if g.byte()%2 == 0 {
				c.Type = g.typ(depth + 1)
			}
			t.Cases = append(t.Cases, c)
		}
	case wit.Enum, wit.Flags:
		for i := range 1 + int(g.byte()%5) {
			t.Names = append(t.Names, g.name()+string(rune('0'+i)))
		}
	case wit.Result:
		if g.byte()%2 == 0 {
			t.Ok = g.typ(depth + 1)
		}
		if g.byte()%2 == 0 {
			t.Err = g.typ(depth + 1)
		}
	}
	return t
}

// word makes a random canonical word for a scalar of kind k (finite floats: JSON has no NaN).
func (g *gen) word(k wit.Kind) uint64 {
	var w uint64
	for range 1 + int(g.byte()%8) {
		w = w<<8 | uint64(g.byte())
	}
	switch k {
	case wit.F32:
		if x := math.Float32frombits(uint32(w)); math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return 0
		}
	case wit.F64:
		if x := math.Float64frombits(w); math.IsNaN(x) || math.IsInf(x, 0) {
			return 0
		}
	case wit.Char:
		if r := rune(w % 0x110000); utf8.ValidRune(r) {
			return uint64(r)
		}
		return 'x'
	}
	return w
}

func (g *gen) value(t *wit.Type, f *wit.Flat) {
	switch t.Kind {
	case wit.String:
		n := int(g.byte())
		b := make([]byte, 0, n)
		for range n {
			b = append(b, g.byte())
		}
		f.PutStr(string(b))
	case wit.List:
		n := int(g.byte() % 8)
		if t.Elem.Kind.Scalar() {
			n = int(g.byte()) << (g.byte() % 8) // up to 32 K elements
			x := wit.MakeList(t.Elem.Kind, n)
			for i := range n {
				wit.SetListWord(x, i, g.word(t.Elem.Kind))
			}
			f.PutList(x.Interface())
			return
		}
		g.frames++
		f.PutWord(uint64(n))
		for range n {
			g.value(t.Elem, f)
		}
	case wit.Record:
		for _, fd := range t.Fields {
			g.value(fd.Type, f)
		}
	case wit.Tuple:
		for _, e := range t.Elems {
			g.value(e, f)
		}
	case wit.Variant:
		i := int(g.byte()) % len(t.Cases)
		f.PutWord(uint64(i))
		if c := t.Cases[i].Type; c != nil {
			g.value(c, f)
		}
	case wit.Enum:
		f.PutWord(uint64(int(g.byte()) % len(t.Names)))
	case wit.Flags:
		f.PutWord(uint64(g.byte()) & (1<<len(t.Names) - 1))
	case wit.Option:
		some := g.byte() % 2
		f.PutWord(uint64(some))
		if some == 1 {
			g.value(t.Elem, f)
		}
	case wit.Result:
		isErr := g.byte() % 2
		f.PutWord(uint64(isErr))
		side := t.Ok
		if isErr == 1 {
			side = t.Err
		}
		if side != nil {
			g.value(side, f)
		}
	case wit.Own, wit.Borrow:
		g.frames++
		f.PutWord(uint64(g.byte()))
	default:
		f.PutWord(g.word(t.Kind))
	}
}
