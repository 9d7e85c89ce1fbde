package wit

import (
	"fmt"
	"strconv"
	"strings"
)

// VariantValue is the canonical form of a variant value: the case name and its payload (nil when
// the case has none).
type VariantValue struct {
	Case string
	Val  any
}

// SomeValue is the canonical form of a present option value; an absent one is nil.
type SomeValue struct{ Val any }

// ResultValue is the canonical form of a result value: IsErr tells which side Val belongs to
// (Val is nil when that side has no payload).
type ResultValue struct {
	IsErr bool
	Val   any
}

// Handle is an opaque reference to a resource held by the instance that produced it. It is only
// meaningful to that instance; its JSON-ish and canonical forms are the same value.
type Handle uint32

// ValueError reports a value that does not fit its WIT type. Path locates the value inside the
// call (`args[0].items[3].title`).
type ValueError struct {
	Path string
	Msg  string
}

// Error returns "path: message".
func (e *ValueError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// path is a lazily rendered location inside a value: segments are only joined into a string
// when an error is reported, so successful conversions do not pay for it.
type path struct {
	parent *path
	field  string
	index  int
}

func (p *path) String() string {
	var segs []*path
	for q := p; q != nil; q = q.parent {
		segs = append(segs, q)
	}
	var b strings.Builder
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		switch {
		case s.field != "" && b.Len() == 0:
			b.WriteString(s.field)
		case s.field != "":
			b.WriteByte('.')
			b.WriteString(s.field)
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

func (p *path) child(name string) *path { return &path{parent: p, field: name} }
func (p *path) at(i int) *path          { return &path{parent: p, index: i} }

func (p *path) errorf(format string, args ...any) error {
	return &ValueError{Path: p.String(), Msg: fmt.Sprintf(format, args...)}
}

func (p *path) mismatch(want *Type, got any) error {
	return p.errorf("want %s, got %s", want.String(), describe(got))
}

// describe names the JSON-ish kind of v for error messages.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "bool"
	case string:
		return "string"
	case []byte:
		return "bytes"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case Handle:
		return "resource handle"
	}
	if _, ok := toNumber(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
