// Package ordered holds Object, a JSON-ish object whose keys keep their order. It is the form
// in which Cap'n Web (package capnweb) decodes objects and the runtime lifts WIT records, so
// that key order survives from one side to the other: JavaScript shows an object's keys in
// insertion order, and a WIT record's fields in declaration order. It depends on nothing but
// the standard library, so that both can use it.
package ordered

import (
	"encoding/json"
	"slices"
)

// Object is an object with its keys in order. Its keys are unique: the decoders that build
// one keep them so, and code that builds one must too (a repeated key would be written twice).
type Object []Field

// Field is one key and value of an Object.
type Field struct {
	// Key is the property name.
	Key string
	// Value is the property value.
	Value any
}

// Value returns the value of key, nil when the object has no such key: for reading a record
// whose fields are known to be there (as wit.Lift makes them, all fields in declaration order).
func (o Object) Value(key string) any {
	v, _ := o.Get(key)
	return v
}

// Get returns the value of key and whether the object has it.
func (o Object) Get(key string) (any, bool) {
	for i := range o {
		if o[i].Key == key {
			return o[i].Value, true
		}
	}
	return nil, false
}

// Map returns the fields as a map, with the Objects inside the values (at any depth, in
// arrays too) turned into maps as well (see Plain).
func (o Object) Map() map[string]any {
	out := make(map[string]any, len(o))
	for _, f := range o {
		out[f.Key] = Plain(f.Value)
	}
	return out
}

// MarshalJSON writes the object with its keys in order; values are written by encoding/json.
func (o Object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, f := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(f.Key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.Value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// FromMap returns the entries of m as an Object with sorted keys.
func FromMap(m map[string]any) Object {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(Object, len(keys))
	for i, k := range keys {
		out[i] = Field{Key: k, Value: m[k]}
	}
	return out
}

// Plain returns v with every Object in it (at any depth, inside []any and map[string]any too)
// turned into a map[string]any, for code written against maps. Values without an Object are
// returned as they are, without a copy.
func Plain(v any) any {
	switch v := v.(type) {
	case Object:
		return v.Map()
	case []any:
		if !slices.ContainsFunc(v, Has) {
			return v
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = Plain(e)
		}
		return out
	case map[string]any:
		if !Has(v) {
			return v
		}
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = Plain(e)
		}
		return out
	}
	return v
}

// Has reports whether v is or contains (inside []any and map[string]any) an Object.
func Has(v any) bool {
	switch v := v.(type) {
	case Object:
		return true
	case []any:
		return slices.ContainsFunc(v, Has)
	case map[string]any:
		for _, e := range v {
			if Has(e) {
				return true
			}
		}
	}
	return false
}
