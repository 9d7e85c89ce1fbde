package wit

import "strings"

// Resources converts own<R> and borrow<R> values between their canonical word and their
// JSON-ish form, for a Converter. Its errors become *ValueErrors (with the value's path) that
// wrap them.
type Resources interface {
	// LiftResource returns the JSON-ish value of the canonical word w, of type t (Own or Borrow).
	LiftResource(t *Type, w uint64) (any, error)
	// LowerResource returns the canonical word of the JSON-ish value v, of type t.
	LowerResource(t *Type, v any) (uint64, error)
}

// Converter is the conversions of this package with a choice of resource values. The zero
// Converter (what the package-level functions use) represents resources as Handles whose
// number is the canonical word; one with Resources lets it convert them.
type Converter struct {
	Resources Resources
}

// resourceError makes err, from Resources, a *ValueError so that a path can be put on it.
func resourceError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := err.(*ValueError); ok {
		return err
	}
	return &ValueError{Msg: err.Error(), err: err}
}

// SplitResourceFunc splits the component-model names "[constructor]R", "[method]R.m" and
// "[static]R.m" into the kind ("[method]"), R and m; other names have no kind.
func SplitResourceFunc(name string) (kind, res, fn string) {
	for _, k := range []string{"[constructor]", "[method]", "[static]"} {
		if rest, ok := strings.CutPrefix(name, k); ok {
			res, fn, _ = strings.Cut(rest, ".")
			return k, res, fn
		}
	}
	return "", "", ""
}

// Contains reports whether t or a type inside it satisfies is.
func Contains(t *Type, is func(*Type) bool) bool {
	if t == nil {
		return false
	}
	if is(t) || Contains(t.Elem, is) || Contains(t.Ok, is) || Contains(t.Err, is) {
		return true
	}
	for _, e := range t.Elems {
		if Contains(e, is) {
			return true
		}
	}
	for _, f := range t.Fields {
		if Contains(f.Type, is) {
			return true
		}
	}
	for _, c := range t.Cases {
		if Contains(c.Type, is) {
			return true
		}
	}
	return false
}

// HasResource reports whether values of type t can hold a resource handle (own or borrow).
func HasResource(t *Type) bool { return Contains(t, isHandle) }

func isHandle(t *Type) bool { return t.Kind == Own || t.Kind == Borrow }

// FuncHasResource reports whether a function of type ft takes or returns a resource handle.
func FuncHasResource(ft *FuncType) bool {
	if ft == nil {
		return false
	}
	for _, p := range ft.Params {
		if HasResource(p.Type) {
			return true
		}
	}
	return HasResource(ft.Result)
}
