package ordered_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"atelier/capnweb/ordered"
)

func TestObject(t *testing.T) {
	o := ordered.Object{
		{Key: "b", Value: 1},
		{Key: "a", Value: []any{ordered.Object{{Key: "d", Value: true}, {Key: "c", Value: nil}}}},
	}
	if b, err := json.Marshal(o); err != nil || string(b) != `{"b":1,"a":[{"d":true,"c":null}]}` {
		t.Errorf("MarshalJSON = %s, %v", b, err)
	}
	if v, ok := o.Get("b"); !ok || v != 1 {
		t.Errorf("Get(b) = %v, %v", v, ok)
	}
	if o.Value("b") != 1 || o.Value("z") != nil {
		t.Errorf("Value(b), Value(z) = %v, %v", o.Value("b"), o.Value("z"))
	}
	if _, ok := o.Get("z"); ok {
		t.Error("Get(z) found a missing key")
	}
	want := map[string]any{"b": 1, "a": []any{map[string]any{"d": true, "c": nil}}}
	if got := ordered.Plain(o); !reflect.DeepEqual(got, want) {
		t.Errorf("Plain = %#v, want %#v", got, want)
	}
	plain := []any{1, "x"}
	if got := ordered.Plain(plain); &got.([]any)[0] != &plain[0] {
		t.Error("Plain copied a value without an Object")
	}
	if got := ordered.FromMap(map[string]any{"b": 1, "a": 2}); !reflect.DeepEqual(got, ordered.Object{{Key: "a", Value: 2}, {Key: "b", Value: 1}}) {
		t.Errorf("FromMap = %#v", got)
	}
}
