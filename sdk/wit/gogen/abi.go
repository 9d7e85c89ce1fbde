package gogen

import (
	"atelier/sdk/wit"
)

// This file holds the canonical ABI's layout rules: the size and alignment of every type in
// linear memory, and its flattening into core values.

// core is a core WebAssembly value type.
type core uint8

const (
	i32 core = iota
	i64
	f32
	f64
)

// goType is the Go type the generated code holds a core value in.
func (c core) goType() string { return [...]string{"uint32", "uint64", "float32", "float64"}[c] }

// Limits of the canonical ABI's flattening.
const (
	maxFlatParams  = 16
	maxFlatResults = 1
)

// resolved follows names and aliases to the type t finally stands for: an anonymous type, or
// (def != nil) a named record, variant, enum, flags or resource.
func resolved(t *wit.Type) (*wit.Type, *wit.TypeDef) {
	for {
		switch t.Kind {
		case wit.Named:
			d := t.Def.Underlying()
			if d.Kind == wit.DefAlias {
				t = d.Alias
				continue
			}
			return t, d
		case wit.Own, wit.Borrow:
			return t, t.Def.Underlying()
		}
		return t, nil
	}
}

// isBorrow reports whether t is a borrowed handle.
func isBorrow(t *wit.Type) bool {
	t, _ = resolved(t)
	return t.Kind == wit.Borrow
}

// cases returns the payload types of a variant-like type (variant, enum, option, result), nil
// for a case without payload, and false for other types.
func cases(t *wit.Type) ([]*wit.Type, bool) {
	t, d := resolved(t)
	if d != nil {
		switch d.Kind {
		case wit.DefVariant:
			ps := make([]*wit.Type, len(d.Cases))
			for i, c := range d.Cases {
				ps[i] = c.Type
			}
			return ps, true
		case wit.DefEnum:
			return make([]*wit.Type, len(d.Names)), true
		}
		return nil, false
	}
	switch t.Kind {
	case wit.Option:
		return []*wit.Type{nil, t.Elem}, true
	case wit.Result:
		return []*wit.Type{t.Ok, t.Err}, true
	}
	return nil, false
}

// fields returns the member types of a record or tuple, and false for other types.
func fields(t *wit.Type) ([]*wit.Type, bool) {
	t, d := resolved(t)
	if d != nil {
		if d.Kind != wit.DefRecord {
			return nil, false
		}
		fs := make([]*wit.Type, len(d.Fields))
		for i, f := range d.Fields {
			fs[i] = f.Type
		}
		return fs, true
	}
	if t.Kind == wit.Tuple {
		return t.Elems, true
	}
	return nil, false
}

// discSize is the size in bytes of the discriminant of a variant with n cases.
func discSize(n int) uint32 {
	switch {
	case n <= 1<<8:
		return 1
	case n <= 1<<16:
		return 2
	}
	return 4
}

// flagsSize is the size in bytes of flags with n names.
func flagsSize(n int) uint32 {
	switch {
	case n == 0:
		return 0
	case n <= 8:
		return 1
	case n <= 16:
		return 2
	}
	return 4 * uint32((n+31)/32)
}

func alignTo(n, a uint32) uint32 { return (n + a - 1) / a * a }

// layout returns the size and alignment of t in linear memory.
func layout(t *wit.Type) (size, align uint32) {
	if fs, ok := fields(t); ok {
		return recordLayout(fs)
	}
	if cs, ok := cases(t); ok {
		size, align, _ := variantLayout(cs)
		return size, align
	}
	t, d := resolved(t)
	if d != nil {
		switch d.Kind {
		case wit.DefFlags:
			s := flagsSize(len(d.Names))
			return s, min(max(s, 1), 4)
		case wit.DefResource:
			return 4, 4
		}
	}
	switch t.Kind {
	case wit.Bool, wit.S8, wit.U8:
		return 1, 1
	case wit.S16, wit.U16:
		return 2, 2
	case wit.S32, wit.U32, wit.F32, wit.Char, wit.Own, wit.Borrow:
		return 4, 4
	case wit.S64, wit.U64, wit.F64:
		return 8, 8
	case wit.String, wit.List:
		return 8, 4
	}
	panic("gogen: no layout for " + t.String()) // refused by check before generation
}

// recordLayout lays out fields in order and returns the size and alignment of the whole.
func recordLayout(fs []*wit.Type) (size, align uint32) {
	_, size, align = offsets(fs)
	return size, align
}

// offsets returns the offset of each field of a record or tuple, and its size and alignment.
func offsets(fs []*wit.Type) (offs []uint32, size, align uint32) {
	align = 1
	for _, f := range fs {
		s, a := layout(f)
		size = alignTo(size, a)
		offs = append(offs, size)
		size += s
		align = max(align, a)
	}
	return offs, alignTo(size, align), align
}

// variantLayout returns the size, alignment and payload offset of a variant with the payload
// types cs.
func variantLayout(cs []*wit.Type) (size, align, payload uint32) {
	ds := discSize(len(cs))
	var maxSize, maxAlign uint32 = 0, ds
	for _, c := range cs {
		if c == nil {
			continue
		}
		s, a := layout(c)
		maxSize, maxAlign = max(maxSize, s), max(maxAlign, a)
	}
	payload = alignTo(ds, maxAlign)
	return alignTo(payload+maxSize, maxAlign), maxAlign, payload
}

// flat returns the core values t flattens to.
func flat(t *wit.Type) []core {
	if fs, ok := fields(t); ok {
		var out []core
		for _, f := range fs {
			out = append(out, flat(f)...)
		}
		return out
	}
	if cs, ok := cases(t); ok {
		return append([]core{i32}, joined(cs)...)
	}
	t, d := resolved(t)
	if d != nil && d.Kind == wit.DefFlags {
		out := make([]core, (len(d.Names)+31)/32)
		return out // all i32
	}
	switch t.Kind {
	case wit.S64, wit.U64:
		return []core{i64}
	case wit.F32:
		return []core{f32}
	case wit.F64:
		return []core{f64}
	case wit.String, wit.List:
		return []core{i32, i32}
	}
	return []core{i32}
}

// joined returns the flattened payload of a variant: at each position the join of what the
// cases have there.
func joined(cs []*wit.Type) []core {
	var out []core
	for _, c := range cs {
		if c == nil {
			continue
		}
		for i, v := range flat(c) {
			if i == len(out) {
				out = append(out, v)
				continue
			}
			out[i] = join(out[i], v)
		}
	}
	return out
}

func join(a, b core) core {
	switch {
	case a == b:
		return a
	case a == i32 && b == f32 || a == f32 && b == i32:
		return i32
	}
	return i64
}

// fromCore converts the Go expression x, a core value held as joined type have, to the core
// type want that the case's flattening has at that position.
func fromCore(x string, have, want core) string {
	switch {
	case have == want:
		return x
	case have == i64 && want == i32:
		return "uint32(" + x + ")"
	case have == i32 && want == f32:
		return "math.Float32frombits(" + x + ")"
	case have == i64 && want == f32:
		return "math.Float32frombits(uint32(" + x + "))"
	case have == i64 && want == f64:
		return "math.Float64frombits(" + x + ")"
	}
	panic("gogen: cannot convert core value")
}

// toCore converts the Go expression x, a core value of type have, to the joined type want.
func toCore(x string, have, want core) string {
	switch {
	case have == want:
		return x
	case have == i32 && want == i64:
		return "uint64(" + x + ")"
	case have == f32 && want == i32:
		return "math.Float32bits(" + x + ")"
	case have == f32 && want == i64:
		return "uint64(math.Float32bits(" + x + "))"
	case have == f64 && want == i64:
		return "math.Float64bits(" + x + ")"
	}
	panic("gogen: cannot convert core value")
}
