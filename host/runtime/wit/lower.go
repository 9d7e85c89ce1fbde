package wit

import (
	"reflect"
	"unicode/utf8"

	"atelier/capnweb/ordered"
)

// Lower checks the JSON-ish value v against t and appends its canonical form to f (see the
// package documentation for both forms). at names the value in error messages, for example
// "result". Every mismatch is a *ValueError, after which f holds a partial value (Reset it);
// Lower never panics. Resources are Handles (Converter.Lower converts them otherwise).
func Lower(t *Type, v any, at string, f *Flat) error { return Converter{}.Lower(t, v, at, f) }

// LowerArg is Lower for argument i of a call: error paths start with "args[i]".
func LowerArg(t *Type, v any, i int, f *Flat) error { return Converter{}.LowerArg(t, v, i, f) }

// LowerReturn lowers what a function returns, with a WIT `result` unwrapped: when t is a
// result type, v is the payload of its ok side, or of its err side when isErr is set (nil for
// a side without type). For any other t, v is the value and isErr must be false.
func LowerReturn(t *Type, v any, isErr bool, f *Flat) error {
	return Converter{}.LowerReturn(t, v, isErr, f)
}

// Lower is the package's Lower with cv's resource values.
func (cv Converter) Lower(t *Type, v any, at string, f *Flat) error {
	if err := cv.lower(t, v, f); err != nil {
		return under(err, at)
	}
	return nil
}

// LowerArg is the package's LowerArg with cv's resource values.
func (cv Converter) LowerArg(t *Type, v any, i int, f *Flat) error {
	if err := cv.lower(t, v, f); err != nil {
		return under(err, "args"+index(i))
	}
	return nil
}

// LowerReturn is the package's LowerReturn with cv's resource values.
func (cv Converter) LowerReturn(t *Type, v any, isErr bool, f *Flat) error {
	var err error
	switch {
	case t.Kind == Result:
		err = cv.lowerSide(t, v, isErr, f)
	case isErr:
		err = errorf("an error for %s, which is not a result type", t.String())
	default:
		err = cv.lower(t, v, f)
	}
	if err != nil {
		return under(err, "result")
	}
	return nil
}

// lowerSide lowers the payload v of the ok (or, with isErr, the err) side of result type t.
func (cv Converter) lowerSide(t *Type, v any, isErr bool, f *Flat) error {
	key, side := "ok", t.Ok
	if isErr {
		key, side = "err", t.Err
	}
	f.PutWord(b2w(isErr))
	if side == nil {
		if v != nil {
			return errorf("%s of %s has no payload", key, t.String())
		}
		return nil
	}
	if err := cv.lower(side, v, f); err != nil {
		return under(err, key)
	}
	return nil
}

func b2w(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

func (cv Converter) lower(t *Type, v any, f *Flat) error {
	if t.Kind.Scalar() {
		w, err := lowerScalar(t, v)
		if err != nil {
			return err
		}
		f.PutWord(w)
		return nil
	}
	switch t.Kind {
	case String:
		s, ok := v.(string)
		if !ok {
			return mismatch(t, v)
		}
		if !utf8.ValidString(s) {
			return errorf("string is not valid UTF-8")
		}
		f.PutStr(s)
	case List:
		return cv.lowerList(t, v, f)
	case Record:
		return cv.lowerRecord(t, v, f)
	case Tuple:
		return cv.lowerTuple(t, v, f)
	case Variant:
		return cv.lowerVariant(t, v, f)
	case Enum:
		s, ok := v.(string)
		if !ok {
			return mismatch(t, v)
		}
		i := indexOf(t.Names, s)
		if i < 0 {
			return errorf("%q is not a case of %s", s, t.String())
		}
		f.PutWord(uint64(i))
	case Option:
		return cv.lowerOption(t, v, f)
	case Result:
		return cv.lowerResult(t, v, f)
	case Flags:
		return lowerFlags(t, v, f)
	case Own, Borrow:
		if cv.Resources != nil {
			w, err := cv.Resources.LowerResource(t, v)
			if err != nil {
				return resourceError(err)
			}
			f.PutWord(w)
			return nil
		}
		h, ok := v.(Handle)
		if !ok {
			return mismatch(t, v)
		}
		f.PutWord(uint64(h))
	default:
		return errorf("values of type %s are not supported", t.String())
	}
	return nil
}

// lowerScalar checks the JSON-ish scalar v against the scalar type t and returns its canonical
// word.
func lowerScalar(t *Type, v any) (uint64, error) {
	switch t.Kind {
	case Bool:
		b, ok := v.(bool)
		if !ok {
			return 0, mismatch(t, v)
		}
		return b2w(b), nil
	case S8, S16, S32, S64, U8, U16, U32, U64, F32, F64:
		n, ok := toNumber(v)
		if !ok {
			return 0, mismatch(t, v)
		}
		w, ok := n.word(t.Kind)
		if !ok {
			return 0, errorf("%v is out of range for %s", v, t.Kind)
		}
		return w, nil
	}
	// Char
	s, ok := v.(string)
	if !ok {
		return 0, mismatch(t, v)
	}
	r, size := utf8.DecodeRuneInString(s)
	if size == 0 || size != len(s) || (r == utf8.RuneError && size == 1) {
		return 0, errorf("want exactly one Unicode scalar value, got %q", s)
	}
	return uint64(r), nil
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

func (cv Converter) lowerList(t *Type, v any, f *Flat) error {
	k := t.Elem.Kind
	if _, ok := ListOf(k, v); ok && k != Char { // already canonical ([]rune may hold non-chars)
		f.PutList(v)
		return nil
	}
	elems, ok := asSlice(v)
	if !ok {
		return mismatch(t, v)
	}
	if k.Scalar() {
		x := MakeList(k, len(elems)).Interface()
		for i, e := range elems {
			w, err := lowerScalar(t.Elem, e)
			if err != nil {
				return under(err, index(i))
			}
			setWord(x, i, w)
		}
		f.PutList(x)
		return nil
	}
	f.PutWord(uint64(len(elems)))
	for i, e := range elems {
		if err := cv.lower(t.Elem, e, f); err != nil {
			return under(err, index(i))
		}
	}
	return nil
}

func (cv Converter) lowerTuple(t *Type, v any, f *Flat) error {
	elems, ok := asSlice(v)
	if !ok {
		return mismatch(t, v)
	}
	if len(elems) != len(t.Elems) {
		return errorf("want %d tuple elements, got %d", len(t.Elems), len(elems))
	}
	for i, et := range t.Elems {
		if err := cv.lower(et, elems[i], f); err != nil {
			return under(err, index(i))
		}
	}
	return nil
}

func (cv Converter) lowerRecord(t *Type, v any, f *Flat) error {
	ob, ok := asObject(v)
	if !ok {
		return mismatch(t, v)
	}
	seen := 0
	for _, fd := range t.Fields {
		fv, present := ob.get(fd.Name)
		if present {
			seen++
		} else if fd.Type.Kind != Option {
			return errorf("missing field %q of %s", fd.Name, t.String())
		} // an absent optional field is none: fv is nil
		if err := cv.lower(fd.Type, fv, f); err != nil {
			return under(err, fd.Name)
		}
	}
	if seen != ob.entries() { // an unknown key, or a key repeated in an ordered.Object
		if k, ok := ob.unknown(func(k string) bool { return hasField(t, k) }); ok {
			return errorf("unknown field %q for %s", k, t.String())
		}
	}
	return nil
}

func hasField(t *Type, name string) bool {
	for _, fd := range t.Fields {
		if fd.Name == name {
			return true
		}
	}
	return false
}

func (cv Converter) lowerVariant(t *Type, v any, f *Flat) error {
	var tag string
	var val any
	hasVal := false
	if s, ok := v.(string); ok {
		tag = s
	} else {
		ob, ok := asObject(v)
		if !ok {
			return mismatch(t, v)
		}
		tv, _ := ob.get("tag")
		if tag, ok = tv.(string); !ok {
			return errorf("want an object with a string \"tag\" for %s", t.String())
		}
		if k, ok := ob.unknown(func(k string) bool { return k == "tag" || k == "val" }); ok {
			return errorf("unknown key %q in variant value (want \"tag\" and \"val\")", k)
		}
		val, hasVal = ob.get("val")
	}
	for i, c := range t.Cases {
		if c.Name != tag {
			continue
		}
		f.PutWord(uint64(i))
		if c.Type == nil {
			if val != nil {
				return errorf("case %q of %s has no payload", tag, t.String())
			}
			return nil
		}
		if !hasVal {
			return errorf("case %q of %s needs a \"val\"", tag, t.String())
		}
		if err := cv.lower(c.Type, val, f); err != nil {
			return under(err, tag)
		}
		return nil
	}
	return errorf("%q is not a case of %s", tag, t.String())
}

func (cv Converter) lowerOption(t *Type, v any, f *Flat) error {
	if v == nil {
		f.PutWord(0)
		return nil
	}
	if t.Elem.Kind == Option {
		ob, _ := asObject(v)
		k, inner, ok := ob.single()
		if !ok || k != "some" {
			return errorf("want null or {\"some\": value} for %s", t.String())
		}
		v = inner
	}
	f.PutWord(1)
	return cv.lower(t.Elem, v, f)
}

func (cv Converter) lowerResult(t *Type, v any, f *Flat) error {
	ob, _ := asObject(v)
	k, x, ok := ob.single()
	if !ok {
		return errorf("want {\"ok\": value} or {\"err\": value} for %s, got %s", t.String(), describe(v))
	}
	if k != "ok" && k != "err" {
		return errorf("want {\"ok\": value} or {\"err\": value} for %s, got key %q", t.String(), k)
	}
	return cv.lowerSide(t, x, k == "err", f)
}

func lowerFlags(t *Type, v any, f *Flat) error {
	if len(t.Names) > MaxFlags {
		return errorf("%s has more than %d flags", t.String(), MaxFlags)
	}
	var bits uint64
	set := func(name string) error {
		i := indexOf(t.Names, name)
		if i < 0 {
			return errorf("%q is not a flag of %s", name, t.String())
		}
		bits |= 1 << i
		return nil
	}
	if m, ok := asMap(v); ok {
		for k, x := range m {
			b, ok := x.(bool)
			if !ok {
				return under(errorf("want bool, got %s", describe(x)), k)
			}
			if !b && indexOf(t.Names, k) >= 0 {
				continue
			}
			if err := set(k); err != nil {
				return err
			}
		}
		f.PutWord(bits)
		return nil
	}
	elems, ok := asSlice(v)
	if !ok {
		return mismatch(t, v)
	}
	for i, e := range elems {
		s, ok := e.(string)
		if !ok {
			return under(errorf("want flag name, got %s", describe(e)), index(i))
		}
		if err := set(s); err != nil {
			return err
		}
	}
	f.PutWord(bits)
	return nil
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return -1
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

// object is a JSON-ish object as Lower reads it, in place: a map[string]any or an
// ordered.Object (records as Lift makes them, objects from Cap'n Web). In an ordered.Object
// a repeated key takes its last value, as it does when the object becomes a map.
type object struct {
	m map[string]any
	o ordered.Object
}

// asObject accepts map[string]any, ordered.Object and, through reflection (a copy), any other
// map with string keys.
func asObject(v any) (object, bool) {
	switch o := v.(type) {
	case ordered.Object:
		return object{o: o}, true
	case map[string]any:
		return object{m: o}, true
	}
	m, ok := asMap(v)
	return object{m: m}, ok
}

// get returns the value of key k.
func (ob object) get(k string) (any, bool) {
	if ob.m != nil {
		x, ok := ob.m[k]
		return x, ok
	}
	for i := len(ob.o) - 1; i >= 0; i-- {
		if ob.o[i].Key == k {
			return ob.o[i].Value, true
		}
	}
	return nil, false
}

// entries is the number of keys, counting a repeated key of an ordered.Object each time.
func (ob object) entries() int { return len(ob.m) + len(ob.o) }

// unknown returns a key that known refuses, if there is one.
func (ob object) unknown(known func(string) bool) (string, bool) {
	for k := range ob.m {
		if !known(k) {
			return k, true
		}
	}
	for _, fl := range ob.o {
		if !known(fl.Key) {
			return fl.Key, true
		}
	}
	return "", false
}

// single returns the key and value of an object that has exactly one key.
func (ob object) single() (string, any, bool) {
	for k, x := range ob.m {
		return k, x, len(ob.m) == 1
	}
	if len(ob.o) == 0 {
		return "", nil, false
	}
	k := ob.o[0].Key
	for _, fl := range ob.o[1:] {
		if fl.Key != k {
			return "", nil, false
		}
	}
	return k, ob.o[len(ob.o)-1].Value, true
}

// asMap accepts map[string]any, ordered.Object (objects from Cap'n Web) and, through
// reflection, any other map with string keys.
func asMap(v any) (map[string]any, bool) {
	switch m := v.(type) {
	case map[string]any:
		return m, true
	case ordered.Object:
		out := make(map[string]any, len(m))
		for _, f := range m {
			out[f.Key] = f.Value
		}
		return out, true
	case nil:
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
