package wit

import (
	"math"

	"atelier/capnweb/ordered"
)

// Lift consumes one canonical value of type t from f and returns its JSON-ish form (see the
// package documentation). A Flat that does not match t is reported as a *ValueError wrapping
// ErrFlatShort rather than a panic; at names the value in error messages. Resources are
// Handles (Converter.Lift converts them otherwise).
func Lift(t *Type, f *Flat, at string) (any, error) { return Converter{}.Lift(t, f, at) }

// LiftArg is Lift for argument i of a call (error paths start with "args[i]").
func LiftArg(t *Type, f *Flat, i int) (any, error) { return Converter{}.LiftArg(t, f, i) }

// LiftReturn is the inverse of LowerReturn: it consumes what a function returned and, when t
// is a result type, unwraps it into the payload of the side it holds and isErr.
func LiftReturn(t *Type, f *Flat) (v any, isErr bool, err error) { return Converter{}.LiftReturn(t, f) }

// Lift is the package's Lift with cv's resource values.
func (cv Converter) Lift(t *Type, f *Flat, at string) (any, error) {
	v, err := cv.lift(t, f)
	if err != nil {
		return nil, under(err, at)
	}
	return v, nil
}

// LiftArg is the package's LiftArg with cv's resource values.
func (cv Converter) LiftArg(t *Type, f *Flat, i int) (any, error) {
	v, err := cv.lift(t, f)
	if err != nil {
		return nil, under(err, "args"+index(i))
	}
	return v, nil
}

// LiftReturn is the package's LiftReturn with cv's resource values.
func (cv Converter) LiftReturn(t *Type, f *Flat) (v any, isErr bool, err error) {
	if t.Kind != Result {
		v, err = cv.Lift(t, f, "result")
		return v, false, err
	}
	key, side, err := liftSide(t, f)
	if err == nil && side != nil {
		v, err = cv.lift(side, f)
		err = under(err, key)
	}
	if err != nil {
		return nil, false, under(err, "result")
	}
	return v, key == "err", nil
}

// liftSide consumes a result's discriminant and returns its key ("ok" or "err") and the type
// of its payload (nil when that side has none).
func liftSide(t *Type, f *Flat) (string, *Type, error) {
	d, ok := f.Index(2)
	switch {
	case !ok:
		return "", nil, shortError(t)
	case d == 1:
		return "err", t.Err, nil
	}
	return "ok", t.Ok, nil
}

func (cv Converter) lift(t *Type, f *Flat) (any, error) {
	switch t.Kind {
	case String:
		if s, ok := f.Str(); ok {
			return s, nil
		}
		return nil, shortError(t)
	case List:
		if k := t.Elem.Kind; k.Scalar() {
			x, ok := f.List()
			if _, isList := ListOf(k, x); !ok || !isList {
				return nil, shortError(t)
			}
			return liftList(k, x), nil
		}
		n, ok := f.Word()
		if !ok || n > uint64(f.Left()) { // each element takes one at least
			return nil, shortError(t)
		}
		return cv.liftSeq(f, int(n), func(int) *Type { return t.Elem })
	case Tuple:
		return cv.liftSeq(f, len(t.Elems), func(i int) *Type { return t.Elems[i] })
	case Record:
		// One slice in declaration order: what JSON shows, with no map to build and no
		// second pass to order it.
		out := make(ordered.Object, len(t.Fields))
		for i, fd := range t.Fields {
			x, err := cv.lift(fd.Type, f)
			if err != nil {
				return nil, under(err, fd.Name)
			}
			out[i] = ordered.Field{Key: fd.Name, Value: x}
		}
		return out, nil
	case Variant:
		i, ok := f.Index(len(t.Cases))
		if !ok {
			return nil, shortError(t)
		}
		c := t.Cases[i]
		if c.Type == nil {
			return map[string]any{"tag": c.Name}, nil
		}
		x, err := cv.lift(c.Type, f)
		if err != nil {
			return nil, under(err, c.Name)
		}
		return map[string]any{"tag": c.Name, "val": x}, nil
	case Enum:
		i, ok := f.Index(len(t.Names))
		if !ok {
			return nil, shortError(t)
		}
		return t.Names[i], nil
	case Option:
		some, ok := f.Index(2)
		if !ok {
			return nil, shortError(t)
		}
		if some == 0 {
			return nil, nil
		}
		x, err := cv.lift(t.Elem, f)
		if err != nil {
			return nil, err
		}
		if t.Elem.Kind == Option {
			return map[string]any{"some": x}, nil
		}
		return x, nil
	case Result:
		key, side, err := liftSide(t, f)
		if err != nil {
			return nil, err
		}
		if side == nil {
			return map[string]any{key: nil}, nil
		}
		x, err := cv.lift(side, f)
		if err != nil {
			return nil, under(err, key)
		}
		return map[string]any{key: x}, nil
	case Own, Borrow:
		w, ok := f.Word()
		if !ok {
			return nil, shortError(t)
		}
		if cv.Resources == nil {
			return Handle(w), nil
		}
		v, err := cv.Resources.LiftResource(t, w)
		return v, resourceError(err)
	case Flags:
		bits, ok := f.Word()
		if !ok || len(t.Names) < MaxFlags && bits>>len(t.Names) != 0 {
			return nil, shortError(t)
		}
		out := make([]string, 0, len(t.Names))
		for i, n := range t.Names {
			if bits&(1<<i) != 0 {
				out = append(out, n)
			}
		}
		return out, nil
	}
	w, ok := f.Word()
	if !ok {
		return nil, shortError(t)
	}
	return liftWord(t, w)
}

// liftWord converts the one-word canonical forms.
func liftWord(t *Type, w uint64) (any, error) {
	switch t.Kind {
	case Bool:
		return w != 0, nil
	case S8:
		return int8(w), nil
	case U8:
		return uint8(w), nil
	case S16:
		return int16(w), nil
	case U16:
		return uint16(w), nil
	case S32:
		return int32(w), nil
	case U32:
		return uint32(w), nil
	case S64:
		return int64(w), nil
	case U64:
		return w, nil
	case F32:
		return math.Float32frombits(uint32(w)), nil
	case F64:
		return math.Float64frombits(w), nil
	case Char:
		return string(rune(w)), nil
	}
	return nil, errorf("values of type %s are not supported", t.String())
}

func (cv Converter) liftSeq(f *Flat, n int, elem func(int) *Type) (any, error) {
	out := make([]any, n)
	for i := range out {
		x, err := cv.lift(elem(i), f)
		if err != nil {
			return nil, under(err, index(i))
		}
		out[i] = x
	}
	return out, nil
}
