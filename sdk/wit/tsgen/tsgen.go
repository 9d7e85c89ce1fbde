// Package tsgen writes TypeScript declarations from a WIT world, for both sides of a gadget.
//
// Callers (agents, Cap'n Web clients): Declare declares what the world exports. It does not
// render TypeScript itself: it converts the world's exports from the parsed model
// (atelier/sdk/wit) into the runtime's type model (atelier/host/runtime/wit, what reflection of
// a compiled component yields) and hands them to atelier/host/runtime/wit/tsdecl, the renderer
// behind the kernel's describeBinding. So a world's declarations follow exactly the value
// mapping the host applies at run time, resources included (stubs with methods over Cap'n Web).
//
// Authors of JS and TS components: Modules declares the modules the world imports, as
// componentize-qjs presents them to the component's code, with the WIT doc comments as JSDoc.
//
// One difference from describeBinding on a compiled component: WIT knows the names of records,
// variants, enums and flags, which component reflection reports only for types exported by
// name, so the declarations here name them (`type Todo = {...}`) where describeBinding may
// spell the shape inline.
package tsgen

import (
	rtwit "atelier/host/runtime/wit"
	"atelier/host/runtime/wit/tsdecl"
	"atelier/sdk/wit"
)

// Declare returns the declarations of a binding called binding to a component of world w:
// the named types its exports use, then `declare const binding: {...}` with one method per
// exported function (including those of exported interfaces).
func Declare(w *wit.World, binding string, m tsdecl.Mapping) string {
	return tsdecl.Declare(binding, Items(w.AllExports), m)
}

// Items converts world items into the runtime's items: a function becomes an ItemFunc, an
// interface an ItemInstance whose exports are its functions, including its resources'
// constructors, methods and static functions under their component-model names
// ("[method]blob.read", with the `self` parameter spelled out).
func Items(items []*wit.WorldItem) []rtwit.Item {
	c := converter{}
	out := make([]rtwit.Item, 0, len(items))
	for _, it := range items {
		if it.Kind == wit.ItemFunc {
			out = append(out, rtwit.Item{Name: it.Key(), Kind: rtwit.ItemFunc, Func: c.fn(it.Func)})
			continue
		}
		inst := rtwit.Item{Name: it.Key(), Kind: rtwit.ItemInstance}
		for _, d := range it.Interface.Types {
			if d.Kind != wit.DefResource {
				continue
			}
			var funcs []*wit.Func
			if d.Constructor != nil {
				funcs = append(funcs, d.Constructor)
			}
			for _, f := range append(append(funcs, d.Methods...), d.Statics...) {
				inst.Exports = append(inst.Exports, rtwit.Item{Name: f.CoreName(), Kind: rtwit.ItemFunc, Func: c.fn(f)})
			}
		}
		for _, f := range it.Interface.Funcs {
			inst.Exports = append(inst.Exports, rtwit.Item{Name: f.Name, Kind: rtwit.ItemFunc, Func: c.fn(f)})
		}
		out = append(out, inst)
	}
	return out
}

// converter converts types, sharing one runtime type per named definition.
type converter map[*wit.TypeDef]*rtwit.Type

// fn converts a function, adding the implicit `self` of a method and the implicit result of
// an infallible constructor.
func (c converter) fn(f *wit.Func) *rtwit.FuncType {
	ft := &rtwit.FuncType{}
	if f.Kind == wit.Method {
		ft.Params = append(ft.Params, rtwit.Param{Name: "self", Type: &rtwit.Type{Kind: rtwit.Borrow, Resource: f.Resource.Name}})
	}
	for _, p := range f.Params {
		ft.Params = append(ft.Params, rtwit.Param{Name: p.Name, Type: c.typ(p.Type)})
	}
	switch {
	case f.Result != nil:
		ft.Result = c.typ(f.Result)
	case f.Kind == wit.Constructor:
		ft.Result = &rtwit.Type{Kind: rtwit.Own, Resource: f.Resource.Name}
	}
	return ft
}

// prims maps the scalar kinds.
var prims = map[wit.Kind]rtwit.Kind{
	wit.Bool: rtwit.Bool, wit.S8: rtwit.S8, wit.S16: rtwit.S16, wit.S32: rtwit.S32, wit.S64: rtwit.S64,
	wit.U8: rtwit.U8, wit.U16: rtwit.U16, wit.U32: rtwit.U32, wit.U64: rtwit.U64, wit.F32: rtwit.F32,
	wit.F64: rtwit.F64, wit.Char: rtwit.Char, wit.String: rtwit.String, wit.ErrorContext: rtwit.ErrorContext,
}

// typ converts a type. A fixed-length list becomes a list and a map a list of key-value
// tuples: the runtime model has neither.
func (c converter) typ(t *wit.Type) *rtwit.Type {
	if t == nil {
		return nil
	}
	if k, ok := prims[t.Kind]; ok {
		return &rtwit.Type{Kind: k}
	}
	switch t.Kind {
	case wit.List:
		return &rtwit.Type{Kind: rtwit.List, Elem: c.typ(t.Elem)}
	case wit.Option:
		return &rtwit.Type{Kind: rtwit.Option, Elem: c.typ(t.Elem)}
	case wit.Future:
		return &rtwit.Type{Kind: rtwit.Future, Elem: c.typ(t.Elem)}
	case wit.Stream:
		return &rtwit.Type{Kind: rtwit.Stream, Elem: c.typ(t.Elem)}
	case wit.Result:
		return &rtwit.Type{Kind: rtwit.Result, Ok: c.typ(t.Ok), Err: c.typ(t.Err)}
	case wit.Map:
		pair := &rtwit.Type{Kind: rtwit.Tuple, Elems: []*rtwit.Type{c.typ(t.Key), c.typ(t.Elem)}}
		return &rtwit.Type{Kind: rtwit.List, Elem: pair}
	case wit.Tuple:
		elems := make([]*rtwit.Type, len(t.Elems))
		for i, e := range t.Elems {
			elems[i] = c.typ(e)
		}
		return &rtwit.Type{Kind: rtwit.Tuple, Elems: elems}
	case wit.Own, wit.Borrow:
		k := rtwit.Own
		if t.Kind == wit.Borrow {
			k = rtwit.Borrow
		}
		return &rtwit.Type{Kind: k, Resource: t.Def.Underlying().Name}
	}
	return c.named(t.Def.Underlying())
}

// named converts a named definition (never an alias of another name: see Underlying).
func (c converter) named(d *wit.TypeDef) *rtwit.Type {
	if rt := c[d]; rt != nil {
		return rt
	}
	rt := &rtwit.Type{Name: d.Name}
	switch d.Kind {
	case wit.DefAlias:
		return c.typ(d.Alias)
	case wit.DefResource:
		return &rtwit.Type{Kind: rtwit.Own, Resource: d.Name}
	case wit.DefRecord:
		rt.Kind = rtwit.Record
		for _, f := range d.Fields {
			rt.Fields = append(rt.Fields, rtwit.Field{Name: f.Name, Type: c.typ(f.Type)})
		}
	case wit.DefVariant:
		rt.Kind = rtwit.Variant
		for _, cs := range d.Cases {
			rt.Cases = append(rt.Cases, rtwit.Case{Name: cs.Name, Type: c.typ(cs.Type)})
		}
	case wit.DefEnum, wit.DefFlags:
		rt.Kind = rtwit.Enum
		if d.Kind == wit.DefFlags {
			rt.Kind = rtwit.Flags
		}
		for _, n := range d.Names {
			rt.Names = append(rt.Names, n.Name)
		}
	}
	c[d] = rt
	return rt
}
