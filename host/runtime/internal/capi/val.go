package capi

// #include "shim.h"
import "C"

import (
	"fmt"
	"math"
	"unsafe"

	"atelier/host/runtime/wit"
)

// The wit.Kind values 0..21 are the C API's WASMTIME_COMPONENT_* value kinds, in order; Borrow
// shares the resource kind with Own.
const cKindResource = C.WASMTIME_COMPONENT_RESOURCE

func cKind(k wit.Kind) C.wasmtime_component_valkind_t {
	if k == wit.Borrow {
		return cKindResource
	}
	return C.wasmtime_component_valkind_t(k)
}

const valSize = C.size_t(unsafe.Sizeof(C.wasmtime_component_val_t{}))

func unionOf(c *C.wasmtime_component_val_t) unsafe.Pointer { return unsafe.Pointer(&c.of) }

func vals(p *C.wasmtime_component_val_t, n C.size_t) []C.wasmtime_component_val_t {
	if n == 0 {
		return nil
	}
	return unsafe.Slice(p, int(n))
}

// goString copies a C name or string.
func goString(n *C.wasm_name_t) string {
	if n.size == 0 {
		return ""
	}
	return string(unsafe.Slice((*byte)(unsafe.Pointer(n.data)), int(n.size)))
}

// intern returns the entry of names equal to the C name, without allocating.
func intern(n *C.wasm_name_t, names []string) (string, bool) {
	var s string
	if n.size > 0 {
		s = unsafe.String((*byte)(unsafe.Pointer(n.data)), int(n.size))
	}
	for _, x := range names {
		if x == s {
			return x, true
		}
	}
	return "", false
}

// setName fills a C name with a Rust-allocated copy of s.
func setName(n *C.wasm_name_t, s string) {
	if len(s) == 0 {
		C.wasm_byte_vec_new_empty(n)
		return
	}
	C.wasm_byte_vec_new(n, C.size_t(len(s)), (*C.wasm_byte_t)(unsafe.Pointer(unsafe.StringData(s))))
}

func kindError(t *wit.Type, c *C.wasmtime_component_val_t) error {
	return fmt.Errorf("capi: value of kind %d does not match type %s", c.kind, t)
}

// lift converts a C value of type t into its canonical Go form. The C value stays owned by the
// caller; resources are cloned into the store's handle table.
func (s *Store) lift(t *wit.Type, c *C.wasmtime_component_val_t) (any, error) {
	if c.kind != cKind(t.Kind) {
		return nil, kindError(t, c)
	}
	p := unionOf(c)
	switch t.Kind {
	case wit.Bool:
		return bool(*(*C.bool)(p)), nil
	case wit.S8:
		return int8(*(*C.int8_t)(p)), nil
	case wit.U8:
		return uint8(*(*C.uint8_t)(p)), nil
	case wit.S16:
		return int16(*(*C.int16_t)(p)), nil
	case wit.U16:
		return uint16(*(*C.uint16_t)(p)), nil
	case wit.S32:
		return int32(*(*C.int32_t)(p)), nil
	case wit.U32:
		return uint32(*(*C.uint32_t)(p)), nil
	case wit.S64:
		return int64(*(*C.int64_t)(p)), nil
	case wit.U64:
		return uint64(*(*C.uint64_t)(p)), nil
	case wit.F32:
		return math.Float32frombits(*(*uint32)(p)), nil
	case wit.F64:
		return math.Float64frombits(*(*uint64)(p)), nil
	case wit.Char:
		return rune(*(*C.uint32_t)(p)), nil
	case wit.String:
		return goString((*C.wasm_name_t)(p)), nil
	case wit.List:
		lv := (*C.wasmtime_component_vallist_t)(p)
		elems := vals(lv.data, lv.size)
		if t.Elem.Kind == wit.U8 {
			out := make([]byte, len(elems))
			for i := range elems {
				if elems[i].kind != C.WASMTIME_COMPONENT_U8 {
					return nil, kindError(t.Elem, &elems[i])
				}
				out[i] = *(*byte)(unionOf(&elems[i]))
			}
			return out, nil
		}
		out := make([]any, len(elems))
		for i := range elems {
			x, err := s.lift(t.Elem, &elems[i])
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case wit.Record:
		rv := (*C.wasmtime_component_valrecord_t)(p)
		if int(rv.size) != len(t.Fields) {
			return nil, kindError(t, c)
		}
		entries := unsafe.Slice(rv.data, int(rv.size))
		out := make([]any, len(entries))
		for i := range entries {
			x, err := s.lift(t.Fields[i].Type, &entries[i].val)
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case wit.Tuple:
		tv := (*C.wasmtime_component_valtuple_t)(p)
		if int(tv.size) != len(t.Elems) {
			return nil, kindError(t, c)
		}
		elems := vals(tv.data, tv.size)
		out := make([]any, len(elems))
		for i := range elems {
			x, err := s.lift(t.Elems[i], &elems[i])
			if err != nil {
				return nil, err
			}
			out[i] = x
		}
		return out, nil
	case wit.Variant:
		vv := (*C.wasmtime_component_valvariant_t)(p)
		disc := ""
		if vv.discriminant.size > 0 {
			disc = unsafe.String((*byte)(unsafe.Pointer(vv.discriminant.data)), int(vv.discriminant.size))
		}
		for _, cs := range t.Cases {
			if name := cs.Name; name == disc {
				if cs.Type == nil || vv.val == nil {
					return wit.VariantValue{Case: name}, nil
				}
				x, err := s.lift(cs.Type, vv.val)
				if err != nil {
					return nil, err
				}
				return wit.VariantValue{Case: name, Val: x}, nil
			}
		}
		return nil, kindError(t, c)
	case wit.Enum:
		name, ok := intern((*C.wasm_name_t)(p), t.Names)
		if !ok {
			return nil, kindError(t, c)
		}
		return name, nil
	case wit.Option:
		inner := *(**C.wasmtime_component_val_t)(p)
		if inner == nil {
			return nil, nil
		}
		x, err := s.lift(t.Elem, inner)
		if err != nil {
			return nil, err
		}
		return wit.SomeValue{Val: x}, nil
	case wit.Result:
		rv := (*C.wasmtime_component_valresult_t)(p)
		side := t.Ok
		if !rv.is_ok {
			side = t.Err
		}
		out := wit.ResultValue{IsErr: !bool(rv.is_ok)}
		if side != nil && rv.val != nil {
			x, err := s.lift(side, rv.val)
			if err != nil {
				return nil, err
			}
			out.Val = x
		}
		return out, nil
	case wit.Flags:
		fv := (*C.wasmtime_component_valflags_t)(p)
		names := unsafe.Slice(fv.data, int(fv.size))
		out := make([]string, 0, len(names))
		for i := range names {
			name, ok := intern(&names[i], t.Names)
			if !ok {
				return nil, kindError(t, c)
			}
			out = append(out, name)
		}
		return out, nil
	case wit.Own, wit.Borrow:
		r := *(**C.wasmtime_component_resource_any_t)(p)
		return s.addResource(C.wasmtime_component_resource_any_clone(r)), nil
	}
	return nil, fmt.Errorf("capi: values of type %s are not supported", t)
}

// lower writes the canonical value v of type t into the zeroed C value c, allocating every part
// that c owns with Wasmtime's allocator (so that Wasmtime or wasmtime_component_val_delete can
// free it). On error c is left in a state that wasmtime_component_val_delete accepts.
func (s *Store) lower(t *wit.Type, v any, c *C.wasmtime_component_val_t) error {
	p := unionOf(c)
	mismatch := func() error { return fmt.Errorf("capi: canonical %T does not match type %s", v, t) }
	switch t.Kind {
	case wit.Bool:
		x, ok := v.(bool)
		if !ok {
			return mismatch()
		}
		*(*C.bool)(p) = C.bool(x)
	case wit.S8:
		x, ok := v.(int8)
		if !ok {
			return mismatch()
		}
		*(*int8)(p) = x
	case wit.U8:
		x, ok := v.(uint8)
		if !ok {
			return mismatch()
		}
		*(*uint8)(p) = x
	case wit.S16:
		x, ok := v.(int16)
		if !ok {
			return mismatch()
		}
		*(*int16)(p) = x
	case wit.U16:
		x, ok := v.(uint16)
		if !ok {
			return mismatch()
		}
		*(*uint16)(p) = x
	case wit.S32:
		x, ok := v.(int32)
		if !ok {
			return mismatch()
		}
		*(*int32)(p) = x
	case wit.U32:
		x, ok := v.(uint32)
		if !ok {
			return mismatch()
		}
		*(*uint32)(p) = x
	case wit.S64:
		x, ok := v.(int64)
		if !ok {
			return mismatch()
		}
		*(*int64)(p) = x
	case wit.U64:
		x, ok := v.(uint64)
		if !ok {
			return mismatch()
		}
		*(*uint64)(p) = x
	case wit.F32:
		x, ok := v.(float32)
		if !ok {
			return mismatch()
		}
		*(*uint32)(p) = math.Float32bits(x)
	case wit.F64:
		x, ok := v.(float64)
		if !ok {
			return mismatch()
		}
		*(*uint64)(p) = math.Float64bits(x)
	case wit.Char:
		x, ok := v.(rune)
		if !ok {
			return mismatch()
		}
		*(*uint32)(p) = uint32(x)
	case wit.String, wit.Enum:
		x, ok := v.(string)
		if !ok {
			return mismatch()
		}
		setName((*C.wasm_name_t)(p), x)
	case wit.List:
		return s.lowerList(t, v, c)
	case wit.Record, wit.Tuple:
		x, ok := v.([]any)
		if !ok || (t.Kind == wit.Record && len(x) != len(t.Fields)) || (t.Kind == wit.Tuple && len(x) != len(t.Elems)) {
			return mismatch()
		}
		if t.Kind == wit.Record {
			rv := (*C.wasmtime_component_valrecord_t)(p)
			C.wasmtime_component_valrecord_new_uninit(rv, C.size_t(len(x)))
			c.kind = cKind(t.Kind)
			entries := unsafe.Slice(rv.data, len(x))
			clear(unsafe.Slice((*byte)(unsafe.Pointer(rv.data)), len(x)*int(unsafe.Sizeof(entries[0]))))
			for i, f := range t.Fields {
				setName(&entries[i].name, f.Name)
				if err := s.lower(f.Type, x[i], &entries[i].val); err != nil {
					return err
				}
			}
			return nil
		}
		tv := (*C.wasmtime_component_valtuple_t)(p)
		C.wasmtime_component_valtuple_new_uninit(tv, C.size_t(len(x)))
		c.kind = cKind(t.Kind)
		elems := zeroed(tv.data, len(x))
		for i, et := range t.Elems {
			if err := s.lower(et, x[i], &elems[i]); err != nil {
				return err
			}
		}
		return nil
	case wit.Variant:
		x, ok := v.(wit.VariantValue)
		if !ok {
			return mismatch()
		}
		for _, cs := range t.Cases {
			if cs.Name != x.Case {
				continue
			}
			vv := (*C.wasmtime_component_valvariant_t)(p)
			var payload *C.wasmtime_component_val_t
			if cs.Type != nil {
				var err error
				if payload, err = s.lowerBoxed(cs.Type, x.Val); err != nil {
					return err
				}
			}
			setName(&vv.discriminant, cs.Name)
			vv.val = payload
			c.kind = cKind(t.Kind)
			return nil
		}
		return mismatch()
	case wit.Option:
		var inner *C.wasmtime_component_val_t
		if v != nil {
			x, ok := v.(wit.SomeValue)
			if !ok {
				return mismatch()
			}
			var err error
			if inner, err = s.lowerBoxed(t.Elem, x.Val); err != nil {
				return err
			}
		}
		*(**C.wasmtime_component_val_t)(p) = inner
	case wit.Result:
		x, ok := v.(wit.ResultValue)
		if !ok {
			return mismatch()
		}
		side := t.Ok
		if x.IsErr {
			side = t.Err
		}
		var inner *C.wasmtime_component_val_t
		if side != nil {
			var err error
			if inner, err = s.lowerBoxed(side, x.Val); err != nil {
				return err
			}
		}
		rv := (*C.wasmtime_component_valresult_t)(p)
		rv.is_ok = C.bool(!x.IsErr)
		rv.val = inner
	case wit.Flags:
		x, ok := v.([]string)
		if !ok {
			return mismatch()
		}
		fv := (*C.wasmtime_component_valflags_t)(p)
		C.wasmtime_component_valflags_new_uninit(fv, C.size_t(len(x)))
		c.kind = cKind(t.Kind)
		if len(x) > 0 {
			names := unsafe.Slice(fv.data, len(x))
			for i, n := range x {
				setName(&names[i], n)
			}
		}
		return nil
	case wit.Own, wit.Borrow:
		h, ok := v.(wit.Handle)
		if !ok {
			return mismatch()
		}
		r, err := s.resource(h)
		if err != nil {
			return err
		}
		*(**C.wasmtime_component_resource_any_t)(p) = C.wasmtime_component_resource_any_clone(r)
	default:
		return fmt.Errorf("capi: values of type %s are not supported", t)
	}
	c.kind = cKind(t.Kind)
	return nil
}

func (s *Store) lowerList(t *wit.Type, v any, c *C.wasmtime_component_val_t) error {
	lv := (*C.wasmtime_component_vallist_t)(unionOf(c))
	if t.Elem.Kind == wit.U8 {
		b, ok := v.([]byte)
		if !ok {
			return fmt.Errorf("capi: canonical %T does not match type %s", v, t)
		}
		C.wasmtime_component_vallist_new_uninit(lv, C.size_t(len(b)))
		c.kind = C.WASMTIME_COMPONENT_LIST
		elems := zeroed(lv.data, len(b))
		for i, x := range b {
			elems[i].kind = C.WASMTIME_COMPONENT_U8
			*(*byte)(unionOf(&elems[i])) = x
		}
		return nil
	}
	x, ok := v.([]any)
	if !ok {
		return fmt.Errorf("capi: canonical %T does not match type %s", v, t)
	}
	C.wasmtime_component_vallist_new_uninit(lv, C.size_t(len(x)))
	c.kind = C.WASMTIME_COMPONENT_LIST
	elems := zeroed(lv.data, len(x))
	for i := range x {
		if err := s.lower(t.Elem, x[i], &elems[i]); err != nil {
			return err
		}
	}
	return nil
}

// lowerBoxed lowers v into a value on Wasmtime's heap (for variant, option and result payloads).
func (s *Store) lowerBoxed(t *wit.Type, v any) (*C.wasmtime_component_val_t, error) {
	var tmp C.wasmtime_component_val_t
	if err := s.lower(t, v, &tmp); err != nil {
		C.wasmtime_component_val_delete(&tmp)
		return nil, err
	}
	return C.wasmtime_component_val_new(&tmp), nil
}

// zeroed views n freshly allocated C values and sets them to the zero value (kind bool), which
// Wasmtime can always delete.
func zeroed(p *C.wasmtime_component_val_t, n int) []C.wasmtime_component_val_t {
	if n == 0 {
		return nil
	}
	s := unsafe.Slice(p, n)
	clear(s)
	return s
}
