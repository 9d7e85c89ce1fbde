package wit

import (
	"math"
	"reflect"
	"unicode/utf8"
)

// Lower checks the JSON-ish value v against t and returns its canonical form (see the package
// documentation for both forms). at names the value in error messages, for example "args[0]".
// Every mismatch is a *ValueError; Lower never panics.
func Lower(t *Type, v any, at string) (any, error) {
	return lower(t, v, &path{field: at})
}

func lower(t *Type, v any, p *path) (any, error) {
	switch t.Kind {
	case Bool:
		if b, ok := v.(bool); ok {
			return b, nil
		}
		return nil, p.mismatch(t, v)
	case S8, S16, S32, S64:
		n, ok := toNumber(v)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		bits := intBits(t.Kind)
		i, ok := n.signed(bits)
		if !ok {
			return nil, p.errorf("%v is out of range for %s", v, t.Kind)
		}
		switch t.Kind {
		case S8:
			return int8(i), nil
		case S16:
			return int16(i), nil
		case S32:
			return int32(i), nil
		}
		return i, nil
	case U8, U16, U32, U64:
		n, ok := toNumber(v)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		u, ok := n.unsigned(intBits(t.Kind))
		if !ok {
			return nil, p.errorf("%v is out of range for %s", v, t.Kind)
		}
		switch t.Kind {
		case U8:
			return uint8(u), nil
		case U16:
			return uint16(u), nil
		case U32:
			return uint32(u), nil
		}
		return u, nil
	case F32:
		n, ok := toNumber(v)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		f := n.float()
		if !math.IsInf(f, 0) && !math.IsNaN(f) && math.Abs(f) > math.MaxFloat32 {
			return nil, p.errorf("%v is out of range for f32", v)
		}
		return float32(f), nil
	case F64:
		n, ok := toNumber(v)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		return n.float(), nil
	case Char:
		s, ok := v.(string)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		r, size := utf8.DecodeRuneInString(s)
		if size == 0 || size != len(s) || (r == utf8.RuneError && size == 1) {
			return nil, p.errorf("want exactly one Unicode scalar value, got %q", s)
		}
		return r, nil
	case String:
		s, ok := v.(string)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		if !utf8.ValidString(s) {
			return nil, p.errorf("string is not valid UTF-8")
		}
		return s, nil
	case List:
		return lowerList(t, v, p)
	case Record:
		return lowerRecord(t, v, p)
	case Tuple:
		elems, ok := asSlice(v)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		if len(elems) != len(t.Elems) {
			return nil, p.errorf("want %d tuple elements, got %d", len(t.Elems), len(elems))
		}
		out := make([]any, len(elems))
		for i, e := range elems {
			x, err := lower(t.Elems[i], e, p.at(i))
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case Variant:
		return lowerVariant(t, v, p)
	case Enum:
		s, ok := v.(string)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		for _, n := range t.Names {
			if n == s {
				return n, nil
			}
		}
		return nil, p.errorf("%q is not a case of %s", s, t.String())
	case Option:
		return lowerOption(t, v, p)
	case Result:
		return lowerResult(t, v, p)
	case Flags:
		return lowerFlags(t, v, p)
	case Own, Borrow:
		if h, ok := v.(Handle); ok {
			return h, nil
		}
		return nil, p.mismatch(t, v)
	}
	return nil, p.errorf("values of type %s are not supported", t.String())
}

func intBits(k Kind) uint {
	switch k {
	case S8, U8:
		return 8
	case S16, U16:
		return 16
	case S32, U32:
		return 32
	}
	return 64
}

func lowerList(t *Type, v any, p *path) (any, error) {
	if t.Elem.Kind == U8 {
		if b, ok := v.([]byte); ok {
			return b, nil
		}
		elems, ok := asSlice(v)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		out := make([]byte, len(elems))
		for i, e := range elems {
			x, err := lower(t.Elem, e, p.at(i))
			if err != nil {
				return nil, err
			}
			out[i] = x.(uint8)
		}
		return out, nil
	}
	elems, ok := asSlice(v)
	if !ok {
		return nil, p.mismatch(t, v)
	}
	out := make([]any, len(elems))
	for i, e := range elems {
		x, err := lower(t.Elem, e, p.at(i))
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	return out, nil
}

func lowerRecord(t *Type, v any, p *path) (any, error) {
	m, ok := asMap(v)
	if !ok {
		return nil, p.mismatch(t, v)
	}
	out := make([]any, len(t.Fields))
	seen := 0
	for i, f := range t.Fields {
		fv, present := m[f.Name]
		if !present {
			if f.Type.Kind == Option {
				continue // an absent optional field is none
			}
			return nil, p.errorf("missing field %q of %s", f.Name, t.String())
		}
		seen++
		x, err := lower(f.Type, fv, p.child(f.Name))
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	if seen != len(m) {
		for k := range m {
			if !hasField(t, k) {
				return nil, p.errorf("unknown field %q for %s", k, t.String())
			}
		}
	}
	return out, nil
}

func hasField(t *Type, name string) bool {
	for _, f := range t.Fields {
		if f.Name == name {
			return true
		}
	}
	return false
}

func lowerVariant(t *Type, v any, p *path) (any, error) {
	var tag string
	var val any
	hasVal := false
	switch x := v.(type) {
	case string:
		tag = x
	default:
		m, ok := asMap(v)
		if !ok {
			return nil, p.mismatch(t, v)
		}
		tv, ok := m["tag"].(string)
		if !ok {
			return nil, p.errorf("want an object with a string \"tag\" for %s", t.String())
		}
		for k := range m {
			if k != "tag" && k != "val" {
				return nil, p.errorf("unknown key %q in variant value (want \"tag\" and \"val\")", k)
			}
		}
		tag = tv
		val, hasVal = m["val"]
	}
	for _, c := range t.Cases {
		if c.Name != tag {
			continue
		}
		if c.Type == nil {
			if val != nil {
				return nil, p.errorf("case %q of %s has no payload", tag, t.String())
			}
			return VariantValue{Case: c.Name}, nil
		}
		if !hasVal {
			return nil, p.errorf("case %q of %s needs a \"val\"", tag, t.String())
		}
		x, err := lower(c.Type, val, p.child(tag))
		if err != nil {
			return nil, err
		}
		return VariantValue{Case: c.Name, Val: x}, nil
	}
	return nil, p.errorf("%q is not a case of %s", tag, t.String())
}

func lowerOption(t *Type, v any, p *path) (any, error) {
	if v == nil {
		return nil, nil
	}
	if t.Elem.Kind == Option {
		m, ok := asMap(v)
		if !ok || len(m) != 1 {
			return nil, p.errorf("want null or {\"some\": value} for %s", t.String())
		}
		inner, ok := m["some"]
		if !ok {
			return nil, p.errorf("want null or {\"some\": value} for %s", t.String())
		}
		v = inner
	}
	x, err := lower(t.Elem, v, p)
	if err != nil {
		return nil, err
	}
	return SomeValue{Val: x}, nil
}

func lowerResult(t *Type, v any, p *path) (any, error) {
	m, ok := asMap(v)
	if !ok || len(m) != 1 {
		return nil, p.errorf("want {\"ok\": value} or {\"err\": value} for %s, got %s", t.String(), describe(v))
	}
	var k string
	var x any
	for k, x = range m {
	}
	var side *Type
	switch k {
	case "ok":
		side = t.Ok
	case "err":
		side = t.Err
	default:
		return nil, p.errorf("want {\"ok\": value} or {\"err\": value} for %s, got key %q", t.String(), k)
	}
	if side == nil {
		if x != nil {
			return nil, p.errorf("%s of %s has no payload", k, t.String())
		}
		return ResultValue{IsErr: k == "err"}, nil
	}
	y, err := lower(side, x, p.child(k))
	if err != nil {
		return nil, err
	}
	return ResultValue{IsErr: k == "err", Val: y}, nil
}

func lowerFlags(t *Type, v any, p *path) (any, error) {
	set := make(map[string]bool)
	if m, ok := asMap(v); ok {
		for k, x := range m {
			b, ok := x.(bool)
			if !ok {
				return nil, p.child(k).errorf("want bool, got %s", describe(x))
			}
			set[k] = b
		}
	} else if elems, ok := asSlice(v); ok {
		for i, e := range elems {
			s, ok := e.(string)
			if !ok {
				return nil, p.at(i).errorf("want flag name, got %s", describe(e))
			}
			set[s] = true
		}
	} else {
		return nil, p.mismatch(t, v)
	}
	out := make([]string, 0, len(set))
	known := 0
	for _, n := range t.Names {
		if b, ok := set[n]; ok {
			known++
			if b {
				out = append(out, n)
			}
		}
	}
	if known != len(set) {
		for k := range set {
			if !contains(t.Names, k) {
				return nil, p.errorf("%q is not a flag of %s", k, t.String())
			}
		}
	}
	return out, nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// asSlice accepts []any and, through reflection, any other slice or array type.
func asSlice(v any) ([]any, bool) {
	if s, ok := v.([]any); ok {
		return s, true
	}
	if v == nil {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array {
		return nil, false
	}
	out := make([]any, rv.Len())
	for i := range out {
		out[i] = rv.Index(i).Interface()
	}
	return out, true
}

// asMap accepts map[string]any and, through reflection, any other map with string keys.
func asMap(v any) (map[string]any, bool) {
	if m, ok := v.(map[string]any); ok {
		return m, true
	}
	if v == nil {
		return nil, false
	}
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Map || rv.Type().Key().Kind() != reflect.String {
		return nil, false
	}
	out := make(map[string]any, rv.Len())
	it := rv.MapRange()
	for it.Next() {
		out[it.Key().String()] = it.Value().Interface()
	}
	return out, true
}

// LowerArg is Lower for argument i of a call: error paths start with "args[i]", built only when
// there is an error.
func LowerArg(t *Type, v any, i int) (any, error) {
	return lower(t, v, (&path{field: "args"}).at(i))
}
