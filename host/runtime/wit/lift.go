package wit

import "fmt"

// Lift turns the canonical value v of type t into its JSON-ish form (see the package
// documentation). A canonical value that does not match t is reported as a *ValueError rather
// than a panic; at names the value in error messages.
func Lift(t *Type, v any, at string) (any, error) {
	return lift(t, v, &path{field: at})
}

func lift(t *Type, v any, p *path) (any, error) {
	switch t.Kind {
	case Bool, S8, U8, S16, U16, S32, U32, S64, U64, F32, F64, String, Enum:
		if !canonicalScalar(t.Kind, v) {
			return nil, p.mismatch(t, v)
		}
		return v, nil
	case Char:
		r, ok := v.(rune)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		return string(r), nil
	case List:
		if t.Elem.Kind == U8 {
			if b, ok := v.([]byte); ok {
				return b, nil
			}
			return nil, p.mismatch(t, v)
		}
		return liftSeq(v, p, t, func(int) *Type { return t.Elem }, -1)
	case Tuple:
		return liftSeq(v, p, t, func(i int) *Type { return t.Elems[i] }, len(t.Elems))
	case Record:
		elems, ok := v.([]any)
		if !ok || len(elems) != len(t.Fields) {
			return nil, p.mismatch(t, v)
		}
		out := make(map[string]any, len(elems))
		for i, f := range t.Fields {
			x, err := lift(f.Type, elems[i], p.child(f.Name))
			if err != nil {
				return nil, err
			}
			out[f.Name] = x
		}
		return out, nil
	case Variant:
		vv, ok := v.(VariantValue)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		for _, c := range t.Cases {
			if c.Name != vv.Case {
				continue
			}
			if c.Type == nil {
				return map[string]any{"tag": c.Name}, nil
			}
			x, err := lift(c.Type, vv.Val, p.child(c.Name))
			if err != nil {
				return nil, err
			}
			return map[string]any{"tag": c.Name, "val": x}, nil
		}
		return nil, p.errorf("%q is not a case of %s", vv.Case, t.String())
	case Option:
		if v == nil {
			return nil, nil
		}
		sv, ok := v.(SomeValue)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		x, err := lift(t.Elem, sv.Val, p)
		if err != nil {
			return nil, err
		}
		if t.Elem.Kind == Option {
			return map[string]any{"some": x}, nil
		}
		return x, nil
	case Result:
		rv, ok := v.(ResultValue)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		key, side := "ok", t.Ok
		if rv.IsErr {
			key, side = "err", t.Err
		}
		if side == nil {
			return map[string]any{key: nil}, nil
		}
		x, err := lift(side, rv.Val, p.child(key))
		if err != nil {
			return nil, err
		}
		return map[string]any{key: x}, nil
	case Flags:
		fs, ok := v.([]string)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		return fs, nil
	case Own, Borrow:
		h, ok := v.(Handle)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		return h, nil
	}
	return nil, p.errorf("values of type %s are not supported", t.String())
}

func liftSeq(v any, p *path, t *Type, elem func(int) *Type, n int) (any, error) {
	elems, ok := v.([]any)
	if !ok || (n >= 0 && len(elems) != n) {
		return nil, p.mismatch(t, v)
	}
	out := make([]any, len(elems))
	for i, e := range elems {
		x, err := lift(elem(i), e, p.at(i))
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

// canonicalScalar reports whether v has the exact Go type that the canonical form uses for k.
func canonicalScalar(k Kind, v any) bool {
	var ok bool
	switch k {
	case Bool:
		_, ok = v.(bool)
	case S8:
		_, ok = v.(int8)
	case U8:
		_, ok = v.(uint8)
	case S16:
		_, ok = v.(int16)
	case U16:
		_, ok = v.(uint16)
	case S32:
		_, ok = v.(int32)
	case U32:
		_, ok = v.(uint32)
	case S64:
		_, ok = v.(int64)
	case U64:
		_, ok = v.(uint64)
	case F32:
		_, ok = v.(float32)
	case F64:
		_, ok = v.(float64)
	case String, Enum:
		_, ok = v.(string)
	default:
		panic(fmt.Sprintf("BUG: canonicalScalar(%s)", k))
	}
	return ok
}

// LiftArg is Lift for argument i of a call (error paths start with "args[i]").
func LiftArg(t *Type, v any, i int) (any, error) {
	return lift(t, v, (&path{field: "args"}).at(i))
}
