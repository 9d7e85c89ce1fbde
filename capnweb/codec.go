package capnweb

import (
	"encoding/base64"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// A decoded protocol value ("canonical value") is one of: nil, Undefined, bool, float64, string,
// *big.Int, time.Time, []byte, TypedArray, *Error, *url.URL, http.Header, []any, Object,
// map[string]any, *Stub or *Promise. Objects received are decoded to Object (keys in the
// sender's order); a map[string]any, from Go code, is written with sorted keys. Go values are
// converted to this form before they are encoded.

// capDecoder turns capability references met while decoding into *Stub / *Promise values.
type capDecoder interface {
	// decodeExport handles ["export", id]: a capability the sender exports.
	decodeExport(id int64) (any, error)
	// decodePromise handles ["promise", id]: a promise the sender will resolve on its own.
	decodePromise(id int64) (any, error)
	// decodeRef handles ["import", id, path?, args?] (asStub) and ["pipeline", id, path?, args?].
	decodeRef(asStub bool, id int64, path []any, args []any, hasArgs bool) (any, error)
	// decodeRemap handles ["remap", id, path, captures, instructions].
	decodeRemap(id int64, path []any, captures []any, instrs []any) (any, error)
	// decodeReadable handles ["readable", id]: a stream through the pipe the sender created.
	decodeReadable(id int64) (any, error)
	// decodeWritable handles ["writable", id]: a sink the sender exports.
	decodeWritable(id int64) (any, error)
}

// decoder converts wire expressions (already parsed JSON) into canonical values.
type decoder struct {
	lim  Limits
	caps capDecoder
}

// decodeValue decodes a plain value with no capabilities allowed.
func decodeValue(raw any, lim Limits) (any, error) {
	return (&decoder{lim: lim.withDefaults()}).value(raw)
}

func (d *decoder) value(raw any) (any, error) {
	switch v := raw.(type) {
	case nil, bool, float64, string:
		return v, nil
	case Object:
		return d.object(v)
	case []any:
		return d.array(v)
	}
	return nil, badMessage("unexpected JSON value %T", raw)
}

// object decodes the fields of a JSON object in order, leaving out the members a JavaScript
// receiver ignores (blockedMember).
func (d *decoder) object(v Object) (Object, error) {
	out := make(Object, 0, len(v))
	for _, f := range v {
		dv, err := d.value(f.Value)
		if err != nil {
			disposeValue(out)
			return nil, err
		}
		if blockedMember(f.Key) {
			disposeValue(dv)
			continue
		}
		out = append(out, Field{Key: f.Key, Value: dv})
	}
	return out, nil
}

// array decodes a JSON array: an escaped array [[...]] or a tagged special value.
func (d *decoder) array(v []any) (any, error) {
	if len(v) == 0 {
		return nil, unknownSpecial(v)
	}
	if inner, ok := v[0].([]any); ok {
		if len(v) != 1 {
			return nil, unknownSpecial(v)
		}
		out := make([]any, 0, len(inner))
		for _, e := range inner {
			dv, err := d.value(e)
			if err != nil {
				disposeValue(out)
				return nil, err
			}
			out = append(out, dv)
		}
		return out, nil
	}
	tag, ok := v[0].(string)
	if !ok {
		return nil, unknownSpecial(v)
	}
	switch tag {
	case "undefined":
		if len(v) == 1 {
			return Undefined, nil
		}
	case "inf", "-inf", "nan":
		if len(v) == 1 {
			return map[string]float64{"inf": math.Inf(1), "-inf": math.Inf(-1), "nan": math.NaN()}[tag], nil
		}
	case "bigint":
		if len(v) == 2 {
			return d.bigint(v[1])
		}
	case "date":
		if len(v) == 2 {
			if v[1] == nil {
				return time.Time{}, nil
			}
			if ms, ok := v[1].(float64); ok && !math.IsInf(ms, 0) && math.Abs(ms) <= 8.64e15 {
				return time.UnixMilli(int64(ms)).UTC(), nil
			}
		}
	case "bytes":
		return d.bytes(v)
	case "error":
		return d.errorValue(v)
	case "url":
		if len(v) != 2 {
			break
		}
		if s, ok := v[1].(string); ok {
			u, err := url.Parse(s)
			if err != nil {
				return nil, badMessage("bad url: %v", err)
			}
			return u, nil
		}
	case "headers":
		return d.headers(v)
	case "export", "promise":
		if len(v) == 2 && d.caps != nil {
			id, err := idArg(v[1])
			if err != nil {
				return nil, err
			}
			if tag == "export" {
				return d.caps.decodeExport(id)
			}
			return d.caps.decodePromise(id)
		}
	case "import", "pipeline":
		if len(v) >= 2 && len(v) <= 4 && d.caps != nil {
			return d.ref(tag == "import", v)
		}
	case "remap":
		if len(v) == 5 && d.caps != nil {
			return d.remap(v)
		}
	case "readable", "writable":
		if len(v) == 2 && d.caps != nil {
			id, err := idArg(v[1])
			if err != nil {
				return nil, err
			}
			if tag == "readable" {
				return d.caps.decodeReadable(id)
			}
			return d.caps.decodeWritable(id)
		}
	case "blob", "request", "response":
		return nil, badMessage("%q values are not supported by this peer", tag)
	}
	return nil, unknownSpecial(v)
}

func unknownSpecial(v []any) error {
	return badMessage("unknown special value: %s", string(mustEncodeRaw(v)))
}

// mustEncodeRaw re-encodes parsed JSON for error messages.
func mustEncodeRaw(v any) []byte {
	b, err := appendRaw(nil, v)
	if err != nil {
		return []byte(fmt.Sprint(v))
	}
	return b
}

// appendRaw appends parsed JSON (not a protocol value) as JSON text.
func appendRaw(b []byte, v any) ([]byte, error) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case bool:
		if v {
			return append(b, "true"...), nil
		}
		return append(b, "false"...), nil
	case float64:
		return appendJSONNumber(b, v), nil
	case string:
		return appendJSONString(b, v), nil
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendRaw(b, e); err != nil {
				return nil, err
			}
		}
		return append(b, ']'), nil
	case Object:
		b = append(b, '{')
		for i, f := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.Key)
			b = append(b, ':')
			var err error
			if b, err = appendRaw(b, f.Value); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	}
	return nil, fmt.Errorf("not JSON: %T", v)
}

func (d *decoder) bigint(raw any) (any, error) {
	s, ok := raw.(string)
	digits := strings.TrimPrefix(s, "-")
	if !ok || digits == "" || strings.Trim(digits, "0123456789") != "" {
		return nil, badMessage("bad bigint %v", raw)
	}
	if len(digits) > d.lim.MaxBigIntDigits {
		return nil, badMessage("bigint of %d digits exceeds the limit of %d", len(digits), d.lim.MaxBigIntDigits)
	}
	n, _ := new(big.Int).SetString(s, 10)
	return n, nil
}

func (d *decoder) bytes(v []any) (any, error) {
	if len(v) != 2 && len(v) != 3 {
		return nil, unknownSpecial(v)
	}
	s, ok := v[1].(string)
	if !ok {
		return nil, unknownSpecial(v)
	}
	// Accept padded, unpadded and URL-safe base64, like Node's decoder.
	s = strings.TrimRight(strings.NewReplacer("-", "+", "_", "/").Replace(s), "=")
	data, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, badMessage("bad base64 in bytes value: %v", err)
	}
	if len(v) == 2 {
		return data, nil
	}
	typ, ok := v[2].(string)
	size, known := typedArraySizes[typ]
	if !ok || !known {
		return nil, badMessage("unknown byte container type %v", v[2])
	}
	if len(data)%size != 0 {
		return nil, badMessage("%s byte length %d is not a multiple of %d", typ, len(data), size)
	}
	if typ == "Uint8Array" {
		return data, nil
	}
	return TypedArray{Type: typ, Data: data}, nil
}

func (d *decoder) errorValue(v []any) (any, error) {
	if len(v) < 3 || len(v) > 5 {
		return nil, unknownSpecial(v)
	}
	name, ok1 := v[1].(string)
	msg, ok2 := v[2].(string)
	if !ok1 || !ok2 {
		return nil, unknownSpecial(v)
	}
	e := &Error{Name: name, Message: msg}
	if len(v) >= 4 && v[3] != nil {
		stack, ok := v[3].(string)
		if !ok {
			return nil, unknownSpecial(v)
		}
		e.Stack = stack
	}
	if len(v) == 5 {
		props, ok := v[4].(Object)
		if !ok {
			return nil, unknownSpecial(v)
		}
		dv, err := d.object(props)
		if err != nil {
			return nil, err
		}
		// Error.Props is a map: the properties of an error are written back sorted.
		e.Props = make(map[string]any, len(dv))
		for _, f := range dv {
			switch f.Key {
			case "name", "message", "stack":
				disposeValue(f.Value)
			default:
				e.Props[f.Key] = f.Value
			}
		}
	}
	return e, nil
}

func (d *decoder) headers(v []any) (any, error) {
	if len(v) != 2 {
		return nil, unknownSpecial(v)
	}
	pairs, ok := v[1].([]any)
	if !ok {
		return nil, unknownSpecial(v)
	}
	h := http.Header{}
	for _, p := range pairs {
		kv, ok := p.([]any)
		if !ok || len(kv) != 2 {
			return nil, unknownSpecial(v)
		}
		name, ok1 := kv[0].(string)
		value, ok2 := kv[1].(string)
		if !ok1 || !ok2 {
			return nil, unknownSpecial(v)
		}
		h.Add(name, value)
	}
	return h, nil
}

// ref decodes ["import"|"pipeline", id, path?, args?].
func (d *decoder) ref(asStub bool, v []any) (any, error) {
	id, err := idArg(v[1])
	if err != nil {
		return nil, err
	}
	var path []any
	if len(v) >= 3 {
		if path, err = pathArg(v[2]); err != nil {
			return nil, err
		}
	}
	if len(v) < 4 {
		return d.caps.decodeRef(asStub, id, path, nil, false)
	}
	args, err := d.args(v[3])
	if err != nil {
		return nil, err
	}
	return d.caps.decodeRef(asStub, id, path, args, true)
}

// args decodes a bare (unescaped) argument list.
func (d *decoder) args(raw any) ([]any, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, badMessage("call arguments must be an array")
	}
	out := make([]any, 0, len(list))
	for _, e := range list {
		dv, err := d.value(e)
		if err != nil {
			disposeValue(out)
			return nil, err
		}
		out = append(out, dv)
	}
	return out, nil
}

func (d *decoder) remap(v []any) (any, error) {
	id, err := idArg(v[1])
	if err != nil {
		return nil, err
	}
	path, err := pathArg(v[2])
	if err != nil {
		return nil, err
	}
	captures, ok1 := v[3].([]any)
	instrs, ok2 := v[4].([]any)
	if !ok1 || !ok2 || len(instrs) == 0 {
		return nil, badMessage("bad remap expression")
	}
	return d.caps.decodeRemap(id, path, captures, instrs)
}

// idArg checks that a JSON number is an integer id in the safe-integer range.
func idArg(raw any) (int64, error) {
	f, ok := raw.(float64)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, badMessage("bad id %v", raw)
	}
	return int64(f), nil
}

// pathArg checks a property path: an array of strings and numbers.
func pathArg(raw any) ([]any, error) {
	list, ok := raw.([]any)
	if !ok {
		return nil, badMessage("property path must be an array")
	}
	for _, p := range list {
		switch p.(type) {
		case string, float64:
		default:
			return nil, badMessage("bad property path element %v", p)
		}
	}
	return list, nil
}

// capEncoder writes capability references met while encoding.
type capEncoder interface {
	encodeStub(b []byte, s *Stub) ([]byte, error)
	encodePromise(b []byte, p *Promise) ([]byte, error)
	encodeMapRef(b []byte, r MapRef) ([]byte, error)
	encodeReadable(b []byte, r *ReadableStream) ([]byte, error)
	encodeWritable(b []byte, w *WritableStream) ([]byte, error)
}

// encodeValue appends the wire form of a canonical value. caps may be nil when v holds no
// capabilities.
func encodeValue(b []byte, v any, caps capEncoder, depth int) ([]byte, error) {
	if depth <= 0 {
		return nil, RangeError("value nested too deeply to serialize")
	}
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), nil
	case UndefinedType:
		return append(b, `["undefined"]`...), nil
	case bool:
		return appendBool(b, v), nil
	case float64:
		return appendFloat(b, v), nil
	case string:
		return appendJSONString(b, v), nil
	case *big.Int:
		return appendBigInt(b, v), nil
	case time.Time:
		if v.IsZero() {
			return append(b, `["date",null]`...), nil
		}
		b = append(b, `["date",`...)
		return append(appendJSONNumber(b, float64(v.UnixMilli())), ']'), nil
	case []byte:
		b = append(b, `["bytes",`...)
		return append(appendJSONString(b, base64.RawStdEncoding.EncodeToString(v)), ']'), nil
	case TypedArray:
		if _, ok := typedArraySizes[v.Type]; !ok {
			return nil, TypeError("unknown byte container type %q", v.Type)
		}
		b = append(b, `["bytes",`...)
		b = appendJSONString(b, base64.RawStdEncoding.EncodeToString(v.Data))
		b = append(b, ',')
		return append(appendJSONString(b, v.Type), ']'), nil
	case *Error:
		return encodeError(b, v, caps, depth)
	case *url.URL:
		b = append(b, `["url",`...)
		return append(appendJSONString(b, v.String()), ']'), nil
	case http.Header:
		return encodeHeaders(b, v), nil
	case []any:
		b = append(b, "[["...)
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = encodeValue(b, e, caps, depth-1); err != nil {
				return nil, err
			}
		}
		return append(b, "]]"...), nil
	case map[string]any:
		b = append(b, '{')
		for i, k := range sortedKeys(v) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = encodeValue(b, v[k], caps, depth-1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case Object:
		b = append(b, '{')
		for i, f := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.Key)
			b = append(b, ':')
			var err error
			if b, err = encodeValue(b, f.Value, caps, depth-1); err != nil {
				return nil, err
			}
		}
		return append(b, '}'), nil
	case *Stub:
		if caps == nil {
			return nil, TypeError("cannot serialize a stub outside a session")
		}
		return caps.encodeStub(b, v)
	case *Promise:
		if caps == nil {
			return nil, TypeError("cannot serialize a promise outside a session")
		}
		return caps.encodePromise(b, v)
	case MapRef:
		if caps == nil {
			return nil, TypeError("MapRef used outside its map function")
		}
		return caps.encodeMapRef(b, v)
	case *ReadableStream:
		if caps == nil {
			return nil, TypeError("cannot serialize a stream outside a session")
		}
		return caps.encodeReadable(b, v)
	case *WritableStream:
		if caps == nil {
			return nil, TypeError("cannot serialize a stream outside a session")
		}
		return caps.encodeWritable(b, v)
	}
	if out, ok := encodeTypedList(b, v); ok {
		return out, nil
	}
	return nil, TypeError("cannot serialize value of type %T", v)
}

func appendBool(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// appendFloat appends a number, or ["nan"], ["inf"] or ["-inf"].
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, `["nan"]`...)
	case math.IsInf(v, 1):
		return append(b, `["inf"]`...)
	case math.IsInf(v, -1):
		return append(b, `["-inf"]`...)
	}
	return appendJSONNumber(b, v)
}

func appendBigInt(b []byte, v *big.Int) []byte {
	b = append(b, `["bigint",`...)
	return append(appendJSONString(b, v.String()), ']')
}

func encodeError(b []byte, e *Error, caps capEncoder, depth int) ([]byte, error) {
	b = append(b, `["error",`...)
	name := e.Name
	if name == "" {
		name = "Error"
	}
	b = appendJSONString(b, name)
	b = append(b, ',')
	b = appendJSONString(b, e.Message)
	if e.Stack == "" && len(e.Props) == 0 {
		return append(b, ']'), nil
	}
	b = append(b, ',')
	if e.Stack != "" {
		b = appendJSONString(b, e.Stack)
	} else {
		b = append(b, "null"...)
	}
	if len(e.Props) > 0 {
		b = append(b, ',')
		var err error
		if b, err = encodeValue(b, e.Props, caps, depth-1); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// encodeHeaders writes headers as JavaScript's Headers iterates them: lower-case names in order.
func encodeHeaders(b []byte, h http.Header) []byte {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	slices.SortFunc(names, func(x, y string) int { return strings.Compare(strings.ToLower(x), strings.ToLower(y)) })
	b = append(b, `["headers",[`...)
	first := true
	for _, k := range names {
		for _, val := range h[k] {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, '[')
			b = appendJSONString(b, strings.ToLower(k))
			b = append(b, ',')
			b = appendJSONString(b, val)
			b = append(b, ']')
		}
	}
	return append(b, "]]"...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// disposeValue releases every stub and promise held in a canonical value.
func disposeValue(v any) {
	switch v := v.(type) {
	case *Stub:
		v.Dispose()
	case *Promise:
		v.Dispose()
	case []any:
		disposeList(v)
	case map[string]any:
		for _, e := range v {
			disposeValue(e)
		}
	case Object:
		for _, f := range v {
			disposeValue(f.Value)
		}
	case *Error:
		disposeValue(v.Props)
	}
}

// disposeList is disposeValue for a list, which need not be boxed (an allocation) to pass it.
func disposeList(list []any) {
	for _, e := range list {
		disposeValue(e)
	}
}

// dupValue returns a copy of a canonical value whose stubs and promises are new references, so
// that the copy and the original can be disposed independently.
func dupValue(v any) any {
	switch v := v.(type) {
	case *Stub:
		return v.Dup()
	case *Promise:
		return v.dup()
	case []any:
		if !hasCaps(v) {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = dupValue(e)
		}
		return out
	case map[string]any:
		if !hasCaps(v) {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = dupValue(e)
		}
		return out
	case Object:
		if !hasCaps(v) {
			return v
		}
		out := make(Object, len(v))
		for i, f := range v {
			out[i] = Field{Key: f.Key, Value: dupValue(f.Value)}
		}
		return out
	case *Error:
		if !hasCaps(v.Props) {
			return v
		}
		c := *v
		c.Props = dupValue(v.Props).(map[string]any)
		return &c
	}
	return v
}

// hasCaps reports whether a canonical value contains a stub or promise.
func hasCaps(v any) bool {
	switch v := v.(type) {
	case *Stub, *Promise:
		return true
	case []any:
		return slices.ContainsFunc(v, hasCaps)
	case map[string]any:
		for _, e := range v {
			if hasCaps(e) {
				return true
			}
		}
	case Object:
		for _, f := range v {
			if hasCaps(f.Value) {
				return true
			}
		}
	case *Error:
		return v != nil && hasCaps(v.Props)
	}
	return false
}
