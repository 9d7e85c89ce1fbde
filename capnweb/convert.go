package capnweb

import (
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"time"

	"atelier/capnweb/ordered"
)

// maxSafeInt is 2^53, the largest integer a JavaScript number holds exactly.
const maxSafeInt = 1 << 53

// canonicalArgs converts call arguments to canonical values.
func canonicalArgs(s *Session, args []any) ([]any, error) {
	out := make([]any, 0, len(args))
	for _, a := range args {
		v, err := canonicalize(s, a)
		if err != nil {
			disposeValue(out)
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// canonicalize converts a Go value to a canonical protocol value. Targets become new stubs
// (exported by s), stubs and promises are duplicated, so the result owns its references.
func canonicalize(s *Session, v any) (any, error) {
	return canon(s, v, 0)
}

const maxCanonDepth = 512

func canon(s *Session, v any, depth int) (any, error) {
	if depth > maxCanonDepth {
		return nil, RangeError("value nested too deeply to serialize")
	}
	switch v := v.(type) {
	case nil, UndefinedType, bool, string, float64, time.Time, TypedArray, http.Header, MapRef,
		*ReadableStream, *WritableStream:
		return v, nil
	case []byte:
		return v, nil
	case float32:
		return float64(v), nil
	case int:
		return intValue(int64(v)), nil
	case int8:
		return float64(v), nil
	case int16:
		return float64(v), nil
	case int32:
		return float64(v), nil
	case int64:
		return intValue(v), nil
	case uint:
		return uintValue(uint64(v)), nil
	case uint8:
		return float64(v), nil
	case uint16:
		return float64(v), nil
	case uint32:
		return float64(v), nil
	case uint64:
		return uintValue(v), nil
	case *big.Int:
		if v == nil {
			return nil, nil
		}
		return new(big.Int).Set(v), nil
	case *url.URL:
		if v == nil {
			return nil, nil
		}
		return v, nil
	case *Stub:
		if v == nil {
			return nil, nil
		}
		if _, err := v.hook(); err != nil {
			return nil, err
		}
		return v.Dup(), nil
	case *Promise:
		if v == nil {
			return nil, nil
		}
		return v.dup(), nil
	case *Error:
		if v == nil {
			return nil, nil
		}
		return canonError(s, v, depth)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			c, err := canon(s, e, depth+1)
			if err != nil {
				disposeValue(out)
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			c, err := canon(s, e, depth+1)
			if err != nil {
				disposeValue(out)
				return nil, err
			}
			out[k] = c
		}
		return out, nil
	case Object:
		out := make(Object, 0, len(v))
		for _, f := range v {
			c, err := canon(s, f.Value, depth+1)
			if err != nil {
				disposeValue(out)
				return nil, err
			}
			out = append(out, Field{Key: f.Key, Value: c})
		}
		return out, nil
	}
	if isTypedList(v) {
		if reflect.ValueOf(v).IsNil() {
			return nil, nil
		}
		return v, nil
	}
	if isTarget(v) {
		lt, err := newLocalTarget(s, v)
		if err != nil {
			return nil, err
		}
		return &Stub{h: &targetHook{lt: lt}}, nil
	}
	if e, ok := v.(error); ok {
		return canonError(s, toWireError(e), depth)
	}
	return canonReflect(s, reflect.ValueOf(v), depth)
}

func canonError(s *Session, e *Error, depth int) (any, error) {
	if len(e.Props) == 0 {
		return e, nil
	}
	props, err := canon(s, e.Props, depth+1)
	if err != nil {
		return nil, err
	}
	c := *e
	c.Props = props.(map[string]any)
	return &c, nil
}

func intValue(n int64) any {
	if n > maxSafeInt || n < -maxSafeInt {
		return big.NewInt(n)
	}
	return float64(n)
}

func uintValue(n uint64) any {
	if n > maxSafeInt {
		return new(big.Int).SetUint64(n)
	}
	return float64(n)
}

// canonReflect handles named basic types, pointers, slices, arrays, maps and structs.
func canonReflect(s *Session, rv reflect.Value, depth int) (any, error) {
	switch rv.Kind() {
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intValue(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintValue(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			return nil, nil
		}
		return canon(s, rv.Elem().Interface(), depth+1)
	case reflect.Slice:
		if rv.IsNil() {
			return nil, nil
		}
		if rv.Type().Elem().Kind() == reflect.Uint8 {
			return rv.Bytes(), nil
		}
		fallthrough
	case reflect.Array:
		out := make([]any, rv.Len())
		for i := range out {
			c, err := canon(s, rv.Index(i).Interface(), depth+1)
			if err != nil {
				disposeValue(out)
				return nil, err
			}
			out[i] = c
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, TypeError("cannot serialize %s: map keys must be strings", rv.Type())
		}
		if rv.IsNil() {
			return nil, nil
		}
		out := make(map[string]any, rv.Len())
		for it := rv.MapRange(); it.Next(); {
			c, err := canon(s, it.Value().Interface(), depth+1)
			if err != nil {
				disposeValue(out)
				return nil, err
			}
			out[it.Key().String()] = c
		}
		return out, nil
	case reflect.Struct:
		fields := structFields(rv.Type())
		out := make(Object, 0, len(fields))
		for _, f := range fields {
			fv := rv.FieldByIndex(f.index)
			if f.omitEmpty && fv.IsZero() {
				continue
			}
			c, err := canon(s, fv.Interface(), depth+1)
			if err != nil {
				disposeValue(out)
				return nil, err
			}
			out = setField(out, f.name, c)
		}
		return out, nil
	}
	return nil, TypeError("cannot serialize value of type %s", rv.Type())
}

// setField sets key in o to v: a key already there (a field of an embedded struct named like
// a later one) takes the later value, as it did when structs became maps.
func setField(o Object, key string, v any) Object {
	for i := range o {
		if o[i].Key == key {
			disposeValue(o[i].Value)
			o[i].Value = v
			return o
		}
	}
	return append(o, Field{Key: key, Value: v})
}

// fieldInfo is one serialized struct field.
type fieldInfo struct {
	name      string
	index     []int
	omitEmpty bool
}

// structFields lists the exported fields of a struct type, named by their json tag or, without
// one, by the JavaScript form of the Go name ("UserID" -> "userID"). Anonymous struct fields
// without a tag are flattened.
func structFields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for _, sub := range structFields(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if name == "" {
			name = jsName(f.Name)
		}
		out = append(out, fieldInfo{name: name, index: []int{i}, omitEmpty: strings.Contains(opts, "omitempty")})
	}
	return out
}

var (
	anyType    = reflect.TypeFor[any]()
	stubType   = reflect.TypeFor[*Stub]()
	streamType = reflect.TypeFor[*ReadableStream]()
	sinkType   = reflect.TypeFor[*WritableStream]()
	timeType   = reflect.TypeFor[time.Time]()
	bigIntType = reflect.TypeFor[*big.Int]()
	urlType    = reflect.TypeFor[*url.URL]()
	headerType = reflect.TypeFor[http.Header]()
	typedType  = reflect.TypeFor[TypedArray]()
	errPtrType = reflect.TypeFor[*Error]()
	objectType = reflect.TypeFor[Object]()
)

// assignValue stores canonical value v into *dst (dst must be a non-nil pointer).
func assignValue(dst any, v any) error {
	rv := reflect.ValueOf(dst)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return fmt.Errorf("capnweb: assign target must be a non-nil pointer, got %T", dst)
	}
	return assign(rv.Elem(), v)
}

// assign converts canonical value v to dst's type. undefined and null give the zero value.
func assign(dst reflect.Value, v any) error {
	t := dst.Type()
	if t == anyType {
		if v != nil {
			dst.Set(reflect.ValueOf(v))
		}
		return nil
	}
	if v == nil || v == Undefined {
		dst.SetZero()
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Type().AssignableTo(t) {
		switch t {
		case stubType, streamType, sinkType, timeType, bigIntType, urlType, headerType, typedType, errPtrType:
			dst.Set(rv)
			return nil
		}
		if t.Kind() == reflect.Interface {
			dst.Set(rv)
			return nil
		}
	}
	switch t {
	case stubType, streamType, sinkType, timeType, bigIntType, urlType, headerType, typedType, errPtrType:
		return fmt.Errorf("expected %s, got %s", t, describe(v))
	case objectType:
		switch o := v.(type) {
		case Object:
			dst.Set(reflect.ValueOf(o))
		case map[string]any:
			dst.Set(reflect.ValueOf(ordered.FromMap(o)))
		default:
			return fmt.Errorf("expected object, got %s", describe(v))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("expected boolean, got %s", describe(v))
		}
		dst.SetBool(b)
	case reflect.String:
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("expected string, got %s", describe(v))
		}
		dst.SetString(str)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := toInt(v)
		if err != nil {
			return err
		}
		if dst.OverflowInt(n) {
			return fmt.Errorf("%d overflows %s", n, t)
		}
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		n, err := toInt(v)
		if err != nil {
			if b, ok := v.(*big.Int); ok && b.IsUint64() {
				dst.SetUint(b.Uint64())
				return nil
			}
			return err
		}
		if n < 0 || dst.OverflowUint(uint64(n)) {
			return fmt.Errorf("%d overflows %s", n, t)
		}
		dst.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		f, ok := v.(float64)
		if !ok {
			if b, isBig := v.(*big.Int); isBig {
				f, _ = new(big.Float).SetInt(b).Float64()
			} else {
				return fmt.Errorf("expected number, got %s", describe(v))
			}
		}
		dst.SetFloat(f)
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := assign(p.Elem(), v); err != nil {
			return err
		}
		dst.Set(p)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			if b, ok := v.([]byte); ok {
				dst.SetBytes(b)
				return nil
			}
		}
		list, ok := boxList(v)
		if !ok {
			return fmt.Errorf("expected array, got %s", describe(v))
		}
		out := reflect.MakeSlice(t, len(list), len(list))
		for i, e := range list {
			if err := assignNested(out.Index(i), e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		dst.Set(out)
	case reflect.Array:
		list, ok := boxList(v)
		if !ok || len(list) != t.Len() {
			return fmt.Errorf("expected array of %d, got %s", t.Len(), describe(v))
		}
		for i, e := range list {
			if err := assignNested(dst.Index(i), e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
	case reflect.Map:
		m, ok := asObjectMap(v)
		if !ok || t.Key().Kind() != reflect.String {
			return fmt.Errorf("expected object, got %s", describe(v))
		}
		out := reflect.MakeMapWithSize(t, len(m))
		for k, e := range m {
			ev := reflect.New(t.Elem()).Elem()
			if err := assignNested(ev, e); err != nil {
				return fmt.Errorf("%s: %w", k, err)
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(t.Key()), ev)
		}
		dst.Set(out)
	case reflect.Struct:
		m, ok := asObjectMap(v)
		if !ok {
			return fmt.Errorf("expected object, got %s", describe(v))
		}
		for _, f := range structFields(t) {
			e, found := m[f.name]
			if !found {
				continue
			}
			if err := assignNested(dst.FieldByIndex(f.index), e); err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
		}
	default:
		return fmt.Errorf("cannot convert %s to %s", describe(v), t)
	}
	return nil
}

// asObjectMap returns the fields of an object value (Object or map[string]any) as a map; the
// values are not converted (assign converts them to the destination's element type).
func asObjectMap(v any) (map[string]any, bool) {
	switch o := v.(type) {
	case map[string]any:
		return o, true
	case Object:
		m := make(map[string]any, len(o))
		for _, f := range o {
			m[f.Key] = f.Value
		}
		return m, true
	}
	return nil, false
}

// assignNested is assign for a value inside a Go slice, array, map or struct: there, a Go value
// of type any receives objects as map[string]any (ordered.Plain), as code written against
// maps expects; only a parameter or AwaitAs result of type any itself receives Object.
func assignNested(dst reflect.Value, v any) error {
	if dst.Type() == anyType && v != nil {
		dst.Set(reflect.ValueOf(ordered.Plain(v)))
		return nil
	}
	return assign(dst, v)
}

// toInt converts a number or bigint to an exact int64.
func toInt(v any) (int64, error) {
	switch n := v.(type) {
	case float64:
		if n != math.Trunc(n) || math.Abs(n) > math.MaxInt64 {
			return 0, fmt.Errorf("expected integer, got %v", n)
		}
		return int64(n), nil
	case *big.Int:
		if !n.IsInt64() {
			return 0, fmt.Errorf("%s overflows int64", n)
		}
		return n.Int64(), nil
	}
	return 0, fmt.Errorf("expected integer, got %s", describe(v))
}

// describe names the protocol type of v for conversion errors.
func describe(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case UndefinedType:
		return "undefined"
	case float64:
		return "number"
	case string:
		return "string"
	case bool:
		return "boolean"
	case []any:
		return "array"
	case map[string]any, Object:
		return "object"
	case *Stub:
		return "stub"
	}
	if isTypedList(v) {
		return "array"
	}
	return fmt.Sprintf("%T", v)
}
