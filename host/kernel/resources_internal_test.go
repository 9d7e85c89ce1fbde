package kernel

import (
	"maps"
	"reflect"
	"slices"
	"testing"

	"atelier/capnweb"
	"atelier/host/runtime/wit"
)

func TestExportNamesOfResources(t *testing.T) {
	own := &wit.Type{Kind: wit.Own, Resource: "counter-set"}
	borrow := &wit.Type{Kind: wit.Borrow, Resource: "counter-set"}
	u32 := &wit.Type{Kind: wit.U32}
	fn := func(name string, res *wit.Type, params ...*wit.Type) wit.Item {
		ft := &wit.FuncType{Result: res}
		for _, p := range params {
			ft.Params = append(ft.Params, wit.Param{Name: "p", Type: p})
		}
		return wit.Item{Name: name, Kind: wit.ItemFunc, Func: ft}
	}
	items := []wit.Item{
		fn("[constructor]counter-set", own, u32),
		fn("[method]counter-set.add-one", u32, borrow),
		fn("plain-fn", u32),
		{Name: "acme:app/api@1.0.0", Kind: wit.ItemInstance, Exports: []wit.Item{
			fn("[constructor]counter-set", own),
			fn("[static]counter-set.make-big", own, u32),
			fn("[method]counter-set.add-one", u32, borrow, u32),
			fn("take", u32, own),
		}},
	}
	exports, types := exportNames(items)
	want := []string{"api.counterSet.makeBig", "api.counterSet.new", "api.take", "counterSet.new", "plainFn"}
	if got := slices.Sorted(maps.Keys(exports)); !slices.Equal(got, want) {
		t.Fatalf("exports = %v, want %v", got, want)
	}
	if f := exports["api.counterSet.makeBig"]; f.name != "acme:app/api@1.0.0#[static]counter-set.make-big" || f.scope != "acme:app/api@1.0.0" || !f.res {
		t.Fatalf("static function = %+v", f)
	}
	if exports["plainFn"].res {
		t.Fatal("plain-fn is marked as taking a resource")
	}
	top, inner := types[resourceKey("", "counter-set")], types[resourceKey("acme:app/api@1.0.0", "counter-set")]
	if top == nil || inner == nil || len(types) != 2 {
		t.Fatalf("resource types = %v", types)
	}
	if m := top.methods["addOne"]; m.name != "[method]counter-set.add-one" {
		t.Fatalf("top-level method = %+v", m)
	}
	if m := inner.methods["addOne"]; m.name != "acme:app/api@1.0.0#[method]counter-set.add-one" || len(m.ft.Params) != 2 {
		t.Fatalf("interface method = %+v", m)
	}
	if err := exports["api.take"].checkJSON("api.take", []any{1.0}); err == nil {
		t.Fatal("a JSON caller may call a function taking a resource")
	}
}

func TestMapResources(t *testing.T) {
	own := &wit.Type{Kind: wit.Own, Resource: "r"}
	rec := &wit.Type{Kind: wit.Record, Fields: []wit.Field{{Name: "r", Type: own}, {Name: "n", Type: &wit.Type{Kind: wit.U32}}}}
	typ := &wit.Type{Kind: wit.List, Elem: &wit.Type{Kind: wit.Option, Elem: rec}}
	in := []any{map[string]any{"r": "a", "n": 1.0}, nil, map[string]any{"r": "b", "n": 2.0}}
	out, err := mapResources(typ, in, func(_ *wit.Type, v any) (any, error) { return v.(string) + "!", nil })
	if err != nil {
		t.Fatal(err)
	}
	l := out.([]any)
	if l[0].(map[string]any)["r"] != "a!" || l[1] != nil || l[2].(map[string]any)["r"] != "b!" || l[2].(map[string]any)["n"] != 2.0 {
		t.Fatalf("mapped %v", out)
	}
	if in[0].(map[string]any)["r"] != "a" {
		t.Fatal("mapResources changed its input")
	}
	// A record as wit.Lift makes it, or as Cap'n Web decodes it, keeps its key order.
	obj := capnweb.Object{{Key: "n", Value: 3.0}, {Key: "r", Value: "c"}}
	out, err = mapResources(rec, obj, func(_ *wit.Type, v any) (any, error) { return v.(string) + "!", nil })
	if err != nil || !reflect.DeepEqual(out, capnweb.Object{{Key: "n", Value: 3.0}, {Key: "r", Value: "c!"}}) {
		t.Fatalf("object mapped to %#v, %v", out, err)
	}
	if obj[1].Value != "c" {
		t.Fatal("mapResources changed its input object")
	}
	v := &wit.Type{Kind: wit.Variant, Cases: []wit.Case{{Name: "none"}, {Name: "one", Type: own}}}
	out, _ = mapResources(v, map[string]any{"tag": "one", "val": "x"}, func(_ *wit.Type, v any) (any, error) { return "y", nil })
	if out.(map[string]any)["val"] != "y" {
		t.Fatalf("variant mapped to %v", out)
	}
}
