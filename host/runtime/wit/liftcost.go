package wit

// Lift cost. Wasmtime's C API (wasmtime_component_func_call) lifts a call's whole result into
// its own values before the host sees any of it: a Rust Val and then a C
// wasmtime_component_val_t for every component value, a list's elements each among them. The
// host cannot bound that copy by the result's encoded size (Budget comes after it), but every
// list element and string byte lies in the instance's linear memory when the call returns, so
// the copy costs at most LiftFactor(t) times the bytes of that memory. The constants were
// measured by host/runtime's TestLiftCost (peak RSS while Wasmtime 39 lifts lists of millions
// of values) and rounded up.

const (
	// LiftValBytes is the host memory Wasmtime's C API allocates per component value it
	// lifts: 71-72 bytes measured for list<bool>, list<u8> and list<u32> elements (a Rust Val,
	// a 32-byte C value and the allocator's share), 80 with a margin.
	LiftValBytes = 80
	// LiftNameBytes is what a record field, variant case, enum case or flag name adds to the
	// value that holds it, apart from its characters (2 bytes each: the Rust String and its C
	// copy): 136 measured per field of list<record{x: u32, y: u32, on: bool}> (694 bytes an
	// element, 58 per byte of guest memory; counted as 734 and 62).
	LiftNameBytes = 136
)

// LiftFactor returns the most host bytes Wasmtime's C API allocates while it lifts a value of
// type t, per byte of the guest's linear memory the value's lists occupy: 0 when t holds no
// list, else the largest over the lists reachable in t of what one element costs the host
// (liftBytes) divided by its canonical size, rounded up. The lists of one value lie in distinct
// bytes of guest memory, so a value whose lists take m bytes costs at most LiftFactor(t)×m,
// plus a part bounded by t alone, plus its strings.
//
// Strings are left out: Wasmtime lifts one into a single buffer and copies it once for C, 2
// bytes per byte (1.93 measured for a 64 MiB string), the order of the Go copies a result
// takes anyway; counting them would reserve three times the memory of every call of a
// JavaScript gadget (its results are strings). A string in a list is covered: its element
// costs LiftValBytes over 8 bytes, more than its characters do.
func LiftFactor(t *Type) int64 {
	if t == nil {
		return 0
	}
	f := int64(0)
	if t.Kind == List {
		size := max(canonSize(t.Elem), 1)
		f = (liftBytes(t.Elem) + size - 1) / size
	}
	for _, c := range children(t) {
		f = max(f, LiftFactor(c))
	}
	return f
}

// children returns the types a value of type t holds directly.
func children(t *Type) []*Type {
	var cs []*Type
	switch t.Kind {
	case List, Option:
		cs = append(cs, t.Elem)
	case Record:
		for _, fd := range t.Fields {
			cs = append(cs, fd.Type)
		}
	case Tuple:
		cs = append(cs, t.Elems...)
	case Variant:
		for _, c := range t.Cases {
			cs = append(cs, c.Type)
		}
	case Result:
		cs = append(cs, t.Ok, t.Err)
	}
	return cs
}

// liftBytes is the most host memory Wasmtime's C API allocates to lift one value of type t
// (nil: none), apart from the elements of its lists and the bytes of its strings.
func liftBytes(t *Type) int64 {
	if t == nil {
		return 0
	}
	n := int64(LiftValBytes)
	switch t.Kind {
	case Record:
		for _, fd := range t.Fields {
			n += nameBytes(fd.Name) + liftBytes(fd.Type)
		}
	case Tuple:
		for _, e := range t.Elems {
			n += liftBytes(e)
		}
	case Variant:
		most := int64(0)
		for _, c := range t.Cases {
			most = max(most, nameBytes(c.Name)+liftBytes(c.Type))
		}
		n += most
	case Enum:
		most := int64(0)
		for _, name := range t.Names {
			most = max(most, nameBytes(name))
		}
		n += most
	case Flags:
		for _, name := range t.Names {
			n += nameBytes(name)
		}
	case Option:
		n += liftBytes(t.Elem)
	case Result:
		n += max(liftBytes(t.Ok), liftBytes(t.Err))
	}
	return n
}

func nameBytes(name string) int64 { return LiftNameBytes + 2*int64(len(name)) }

// canonSize is the canonical ABI size of a value of type t in linear memory (nil: 0).
func canonSize(t *Type) int64 {
	size, _ := canonLayout(t)
	return size
}

// canonLayout returns the canonical ABI size and alignment of type t (nil: 0 and 1).
func canonLayout(t *Type) (size, align int64) {
	if t == nil {
		return 0, 1
	}
	switch t.Kind {
	case Bool, S8, U8:
		return 1, 1
	case S16, U16:
		return 2, 2
	case S64, U64, F64:
		return 8, 8
	case String, List:
		return 8, 4
	case Record:
		var ts []*Type
		for _, fd := range t.Fields {
			ts = append(ts, fd.Type)
		}
		return structLayout(ts)
	case Tuple:
		return structLayout(t.Elems)
	case Variant:
		var ts []*Type
		for _, c := range t.Cases {
			ts = append(ts, c.Type)
		}
		return variantLayout(len(t.Cases), ts)
	case Enum:
		return variantLayout(len(t.Names), nil)
	case Option:
		return variantLayout(2, []*Type{t.Elem})
	case Result:
		return variantLayout(2, []*Type{t.Ok, t.Err})
	case Flags:
		switch n := int64(len(t.Names)); {
		case n == 0:
			return 0, 1
		case n <= 8:
			return 1, 1
		case n <= 16:
			return 2, 2
		default:
			return 4 * ((n + 31) / 32), 4
		}
	}
	return 4, 4 // s32, u32, f32, char, handles, futures, streams, error contexts
}

// structLayout is the canonical layout of a record or tuple of fields of types ts.
func structLayout(ts []*Type) (size, align int64) {
	align = 1
	for _, t := range ts {
		s, a := canonLayout(t)
		size = alignTo(size, a) + s
		align = max(align, a)
	}
	return alignTo(size, align), align
}

// variantLayout is the canonical layout of a variant of n cases with the payload types ts
// (nil for a case without one).
func variantLayout(n int, ts []*Type) (size, align int64) {
	disc := int64(4)
	switch {
	case n <= 1<<8:
		disc = 1
	case n <= 1<<16:
		disc = 2
	}
	payload, align := int64(0), disc
	for _, t := range ts {
		s, a := canonLayout(t)
		payload, align = max(payload, s), max(align, a)
	}
	return alignTo(alignTo(disc, align)+payload, align), align
}

func alignTo(n, a int64) int64 { return (n + a - 1) / a * a }
