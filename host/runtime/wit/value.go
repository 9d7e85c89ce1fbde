package wit

import (
	"fmt"
	"strings"

	"atelier/capnweb/ordered"
)

// Handle is an opaque reference to a resource held by the instance that produced it. It is only
// meaningful to that instance; its JSON-ish and canonical forms are the same number.
type Handle uint32

// ValueError reports a value that does not fit its WIT type. Path locates the value inside the
// call (`args[0].items[3].title`).
type ValueError struct {
	Path string
	Msg  string
	err  error // what Unwrap returns, if anything
}

// Error returns "path: message".
func (e *ValueError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// Unwrap returns ErrFlatShort for a canonical value that does not match its type.
func (e *ValueError) Unwrap() error { return e.err }

// under prefixes the error's path with seg, a field name or an index "[i]". Paths are built
// this way, while an error unwinds, so that conversions that succeed never pay for them.
func under(err error, seg string) error {
	e, ok := err.(*ValueError)
	if !ok {
		return err
	}
	switch {
	case e.Path == "":
		e.Path = seg
	case strings.HasPrefix(e.Path, "["):
		e.Path = seg + e.Path
	default:
		e.Path = seg + "." + e.Path
	}
	return e
}

func errorf(format string, args ...any) error {
	return &ValueError{Msg: fmt.Sprintf(format, args...)}
}

func mismatch(want *Type, got any) error {
	return errorf("want %s, got %s", want.String(), describe(got))
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
	case map[string]any, ordered.Object:
		return "object"
	case Handle:
		return "resource handle"
	}
	if _, ok := toNumber(v); ok {
		return "number"
	}
	return fmt.Sprintf("%T", v)
}
