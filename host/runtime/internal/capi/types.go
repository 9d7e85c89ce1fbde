package capi

// #include "shim.h"
import "C"

import (
	"unsafe"

	"atelier/host/runtime/wit"
)

// scope holds the named types and resources of one instance (or of the component root), so
// that reflected types can be given their WIT names: the C API describes types structurally.
type scope struct {
	types     []namedType
	resources []namedResource
}

type namedType struct {
	name string
	vt   C.wasmtime_component_valtype_t
}

type namedResource struct {
	name string
	rt   *C.wasmtime_component_resource_type_t
}

func (s *scope) add(name string, item *C.wasmtime_component_item_t) {
	switch item.kind {
	case C.WASMTIME_COMPONENT_ITEM_TYPE:
		nt := namedType{name: name}
		C.wasmtime_component_valtype_clone((*C.wasmtime_component_valtype_t)(unsafe.Pointer(&item.of)), &nt.vt)
		s.types = append(s.types, nt)
	case C.WASMTIME_COMPONENT_ITEM_RESOURCE:
		rt := *(**C.wasmtime_component_resource_type_t)(unsafe.Pointer(&item.of))
		s.resources = append(s.resources, namedResource{name: name, rt: C.wasmtime_component_resource_type_clone(rt)})
	}
}

func (s *scope) delete() {
	if s == nil {
		return
	}
	for i := range s.types {
		C.wasmtime_component_valtype_delete(&s.types[i].vt)
	}
	for _, r := range s.resources {
		C.wasmtime_component_resource_type_delete(r.rt)
	}
}

func (s *scope) typeName(vt *C.wasmtime_component_valtype_t) string {
	if s == nil {
		return ""
	}
	for i := range s.types {
		if C.wasmtime_component_valtype_equal(vt, &s.types[i].vt) {
			return s.types[i].name
		}
	}
	return ""
}

func (s *scope) resourceName(rt *C.wasmtime_component_resource_type_t) string {
	if s == nil {
		return ""
	}
	for _, r := range s.resources {
		if C.wasmtime_component_resource_type_equal(rt, r.rt) {
			return r.name
		}
	}
	return ""
}

// rootScope collects the named types the component exports at its root.
func (e *Engine) rootScope(ty *C.wasmtime_component_type_t) *scope {
	s := &scope{}
	n := int(C.wasmtime_component_type_export_count(ty, e.ptr))
	for i := 0; i < n; i++ {
		var name *C.char
		var nlen C.size_t
		var item C.wasmtime_component_item_t
		if C.wasmtime_component_type_export_nth(ty, e.ptr, C.size_t(i), &name, &nlen, &item) {
			s.add(C.GoStringN(name, C.int(nlen)), &item)
			C.wasmtime_component_item_delete(&item)
		}
	}
	return s
}

func (e *Engine) convertItem(name string, item *C.wasmtime_component_item_t, sc *scope) wit.Item {
	of := unsafe.Pointer(&item.of)
	switch item.kind {
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT_FUNC:
		return wit.Item{Name: name, Kind: wit.ItemFunc, Func: convertFunc(*(**C.wasmtime_component_func_type_t)(of), sc)}
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT_INSTANCE:
		return wit.Item{Name: name, Kind: wit.ItemInstance, Exports: e.instanceExports(*(**C.wasmtime_component_instance_type_t)(of))}
	case C.WASMTIME_COMPONENT_ITEM_TYPE:
		t := convertValtype((*C.wasmtime_component_valtype_t)(of), sc)
		if t.Name == "" {
			t.Name = name
		}
		return wit.Item{Name: name, Kind: wit.ItemType, Type: t}
	case C.WASMTIME_COMPONENT_ITEM_RESOURCE:
		return wit.Item{Name: name, Kind: wit.ItemResource}
	case C.WASMTIME_COMPONENT_ITEM_MODULE:
		return wit.Item{Name: name, Kind: wit.ItemModule}
	case C.WASMTIME_COMPONENT_ITEM_COMPONENT:
		return wit.Item{Name: name, Kind: wit.ItemComponent}
	}
	return wit.Item{Name: name, Kind: wit.ItemCoreFunc}
}

func (e *Engine) instanceExports(it *C.wasmtime_component_instance_type_t) []wit.Item {
	n := int(C.wasmtime_component_instance_type_export_count(it, e.ptr))
	items := make([]C.wasmtime_component_item_t, 0, n)
	names := make([]string, 0, n)
	sc := &scope{}
	defer sc.delete()
	for i := 0; i < n; i++ {
		var name *C.char
		var nlen C.size_t
		var item C.wasmtime_component_item_t
		if C.wasmtime_component_instance_type_export_nth(it, e.ptr, C.size_t(i), &name, &nlen, &item) {
			names = append(names, C.GoStringN(name, C.int(nlen)))
			items = append(items, item)
			sc.add(names[len(names)-1], &item)
		}
	}
	out := make([]wit.Item, len(items))
	for i := range items {
		out[i] = e.convertItem(names[i], &items[i], sc)
		C.wasmtime_component_item_delete(&items[i])
	}
	return out
}

func convertFunc(ft *C.wasmtime_component_func_type_t, sc *scope) *wit.FuncType {
	f := &wit.FuncType{}
	n := int(C.wasmtime_component_func_type_param_count(ft))
	for i := 0; i < n; i++ {
		var name *C.char
		var nlen C.size_t
		var vt C.wasmtime_component_valtype_t
		if C.wasmtime_component_func_type_param_nth(ft, C.size_t(i), &name, &nlen, &vt) {
			f.Params = append(f.Params, wit.Param{Name: C.GoStringN(name, C.int(nlen)), Type: convertValtype(&vt, sc)})
			C.wasmtime_component_valtype_delete(&vt)
		}
	}
	var vt C.wasmtime_component_valtype_t
	if C.wasmtime_component_func_type_result(ft, &vt) {
		f.Result = convertValtype(&vt, sc)
		C.wasmtime_component_valtype_delete(&vt)
	}
	return f
}

// primitiveKind maps the C API's primitive value type kinds (whose order differs from the
// value kinds) to wit kinds.
func primitiveKind(k C.wasmtime_component_valtype_kind_t) (wit.Kind, bool) {
	switch k {
	case C.WASMTIME_COMPONENT_VALTYPE_BOOL:
		return wit.Bool, true
	case C.WASMTIME_COMPONENT_VALTYPE_S8:
		return wit.S8, true
	case C.WASMTIME_COMPONENT_VALTYPE_S16:
		return wit.S16, true
	case C.WASMTIME_COMPONENT_VALTYPE_S32:
		return wit.S32, true
	case C.WASMTIME_COMPONENT_VALTYPE_S64:
		return wit.S64, true
	case C.WASMTIME_COMPONENT_VALTYPE_U8:
		return wit.U8, true
	case C.WASMTIME_COMPONENT_VALTYPE_U16:
		return wit.U16, true
	case C.WASMTIME_COMPONENT_VALTYPE_U32:
		return wit.U32, true
	case C.WASMTIME_COMPONENT_VALTYPE_U64:
		return wit.U64, true
	case C.WASMTIME_COMPONENT_VALTYPE_F32:
		return wit.F32, true
	case C.WASMTIME_COMPONENT_VALTYPE_F64:
		return wit.F64, true
	case C.WASMTIME_COMPONENT_VALTYPE_CHAR:
		return wit.Char, true
	case C.WASMTIME_COMPONENT_VALTYPE_STRING:
		return wit.String, true
	}
	return 0, false
}

// convertValtype converts a borrowed C value type (the caller still deletes vt).
func convertValtype(vt *C.wasmtime_component_valtype_t, sc *scope) *wit.Type {
	of := unsafe.Pointer(&vt.of)
	if k, ok := primitiveKind(vt.kind); ok {
		return &wit.Type{Kind: k}
	}
	sub := func(fill func(*C.wasmtime_component_valtype_t) bool) *wit.Type {
		var x C.wasmtime_component_valtype_t
		if !fill(&x) {
			return nil
		}
		defer C.wasmtime_component_valtype_delete(&x)
		return convertValtype(&x, sc)
	}
	name := func(get func(*(*C.char), *C.size_t) bool) (string, bool) {
		var p *C.char
		var n C.size_t
		if !get(&p, &n) {
			return "", false
		}
		return C.GoStringN(p, C.int(n)), true
	}
	t := &wit.Type{}
	switch vt.kind {
	case C.WASMTIME_COMPONENT_VALTYPE_LIST:
		lt := *(**C.wasmtime_component_list_type_t)(of)
		t.Kind = wit.List
		t.Elem = sub(func(x *C.wasmtime_component_valtype_t) bool {
			C.wasmtime_component_list_type_element(lt, x)
			return true
		})
	case C.WASMTIME_COMPONENT_VALTYPE_RECORD:
		rt := *(**C.wasmtime_component_record_type_t)(of)
		t.Kind = wit.Record
		n := int(C.wasmtime_component_record_type_field_count(rt))
		for i := 0; i < n; i++ {
			var fname string
			ft := sub(func(x *C.wasmtime_component_valtype_t) bool {
				var p *C.char
				var l C.size_t
				ok := bool(C.wasmtime_component_record_type_field_nth(rt, C.size_t(i), &p, &l, x))
				fname = C.GoStringN(p, C.int(l))
				return ok
			})
			t.Fields = append(t.Fields, wit.Field{Name: fname, Type: ft})
		}
	case C.WASMTIME_COMPONENT_VALTYPE_TUPLE:
		tt := *(**C.wasmtime_component_tuple_type_t)(of)
		t.Kind = wit.Tuple
		n := int(C.wasmtime_component_tuple_type_types_count(tt))
		for i := 0; i < n; i++ {
			t.Elems = append(t.Elems, sub(func(x *C.wasmtime_component_valtype_t) bool {
				return bool(C.wasmtime_component_tuple_type_types_nth(tt, C.size_t(i), x))
			}))
		}
	case C.WASMTIME_COMPONENT_VALTYPE_VARIANT:
		vr := *(**C.wasmtime_component_variant_type_t)(of)
		t.Kind = wit.Variant
		n := int(C.wasmtime_component_variant_type_case_count(vr))
		for i := 0; i < n; i++ {
			var cname string
			ct := sub(func(x *C.wasmtime_component_valtype_t) bool {
				var p *C.char
				var l C.size_t
				var has C.bool
				C.wasmtime_component_variant_type_case_nth(vr, C.size_t(i), &p, &l, &has, x)
				cname = C.GoStringN(p, C.int(l))
				return bool(has)
			})
			t.Cases = append(t.Cases, wit.Case{Name: cname, Type: ct})
		}
	case C.WASMTIME_COMPONENT_VALTYPE_ENUM:
		et := *(**C.wasmtime_component_enum_type_t)(of)
		t.Kind = wit.Enum
		n := int(C.wasmtime_component_enum_type_names_count(et))
		for i := 0; i < n; i++ {
			if s, ok := name(func(p **C.char, l *C.size_t) bool {
				return bool(C.wasmtime_component_enum_type_names_nth(et, C.size_t(i), p, l))
			}); ok {
				t.Names = append(t.Names, s)
			}
		}
	case C.WASMTIME_COMPONENT_VALTYPE_FLAGS:
		ft := *(**C.wasmtime_component_flags_type_t)(of)
		t.Kind = wit.Flags
		n := int(C.wasmtime_component_flags_type_names_count(ft))
		for i := 0; i < n; i++ {
			if s, ok := name(func(p **C.char, l *C.size_t) bool {
				return bool(C.wasmtime_component_flags_type_names_nth(ft, C.size_t(i), p, l))
			}); ok {
				t.Names = append(t.Names, s)
			}
		}
	case C.WASMTIME_COMPONENT_VALTYPE_OPTION:
		ot := *(**C.wasmtime_component_option_type_t)(of)
		t.Kind = wit.Option
		t.Elem = sub(func(x *C.wasmtime_component_valtype_t) bool { C.wasmtime_component_option_type_ty(ot, x); return true })
	case C.WASMTIME_COMPONENT_VALTYPE_RESULT:
		rt := *(**C.wasmtime_component_result_type_t)(of)
		t.Kind = wit.Result
		t.Ok = sub(func(x *C.wasmtime_component_valtype_t) bool { return bool(C.wasmtime_component_result_type_ok(rt, x)) })
		t.Err = sub(func(x *C.wasmtime_component_valtype_t) bool { return bool(C.wasmtime_component_result_type_err(rt, x)) })
	case C.WASMTIME_COMPONENT_VALTYPE_OWN, C.WASMTIME_COMPONENT_VALTYPE_BORROW:
		t.Kind = wit.Own
		if vt.kind == C.WASMTIME_COMPONENT_VALTYPE_BORROW {
			t.Kind = wit.Borrow
		}
		t.Resource = sc.resourceName(*(**C.wasmtime_component_resource_type_t)(of))
	case C.WASMTIME_COMPONENT_VALTYPE_FUTURE:
		ft := *(**C.wasmtime_component_future_type_t)(of)
		t.Kind = wit.Future
		t.Elem = sub(func(x *C.wasmtime_component_valtype_t) bool { return bool(C.wasmtime_component_future_type_ty(ft, x)) })
	case C.WASMTIME_COMPONENT_VALTYPE_STREAM:
		st := *(**C.wasmtime_component_stream_type_t)(of)
		t.Kind = wit.Stream
		t.Elem = sub(func(x *C.wasmtime_component_valtype_t) bool { return bool(C.wasmtime_component_stream_type_ty(st, x)) })
	default:
		t.Kind = wit.ErrorContext
	}
	switch t.Kind {
	case wit.Record, wit.Variant, wit.Enum, wit.Flags:
		t.Name = sc.typeName(vt)
	}
	return t
}
