package capi

// #include "shim.h"
import "C"

import (
	"fmt"
	"math/bits"
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

// nameIndex returns the index of the entry of names equal to the C name, or -1.
func nameIndex(n *C.wasm_name_t, names []string) int {
	var s string
	if n.size > 0 {
		s = unsafe.String((*byte)(unsafe.Pointer(n.data)), int(n.size))
	}
	for i, x := range names {
		if x == s {
			return i
		}
	}
	return -1
}

// cvec is the layout that every vector of the C API shares (DECLARE_VEC): wasm_name_t and the
// component value lists, records, tuples and flags. An empty vector has a nil data pointer.
type cvec struct {
	size C.size_t
	data unsafe.Pointer
}

// setName fills a C name with a copy of x: Rust-allocated for owned values, in the arena for
// lent ones (see lower).
func (s *Store) setName(n *C.wasm_name_t, x string, owned bool) {
	switch {
	case owned && len(x) == 0:
		C.wasm_byte_vec_new_empty(n)
	case owned:
		C.wasm_byte_vec_new(n, C.size_t(len(x)), (*C.wasm_byte_t)(unsafe.Pointer(unsafe.StringData(x))))
	default:
		p := s.arena.raw(uintptr(len(x)))
		copy(unsafe.Slice((*byte)(p), len(x)), x)
		*(*cvec)(unsafe.Pointer(n)) = cvec{size: C.size_t(len(x)), data: p}
	}
}

// lendVec sets the C vector v to n zeroed elements of elemSize bytes in the arena and returns
// the first (nil when n is 0).
func (s *Store) lendVec(v unsafe.Pointer, n int, elemSize uintptr) unsafe.Pointer {
	p := s.arena.alloc(uintptr(n) * elemSize)
	*(*cvec)(v) = cvec{size: C.size_t(n), data: p}
	return p
}

func kindError(t *wit.Type, c *C.wasmtime_component_val_t) error {
	return fmt.Errorf("capi: value of kind %d does not match type %s", c.kind, t)
}

func shortError(t *wit.Type) error {
	return fmt.Errorf("capi: %w (%s)", wit.ErrFlatShort, t)
}

// lift appends the C value c of type t to f in canonical form (see wit.Flat). The C value
// stays owned by the caller. Resources are cloned into the store's handle table, except with
// host set (the arguments of a host function), where they are host-defined: their word is
// HostResourceWord(type, rep), and an own<R> passes to the host (the guest no longer has it).
func (s *Store) lift(t *wit.Type, c *C.wasmtime_component_val_t, f *wit.Flat, host bool) error {
	if c.kind != cKind(t.Kind) {
		return kindError(t, c)
	}
	p := unionOf(c)
	switch t.Kind {
	case wit.Bool:
		f.PutWord(b2w(bool(*(*C.bool)(p))))
	case wit.S8:
		f.PutWord(uint64(*(*int8)(p)))
	case wit.U8:
		f.PutWord(uint64(*(*uint8)(p)))
	case wit.S16:
		f.PutWord(uint64(*(*int16)(p)))
	case wit.U16:
		f.PutWord(uint64(*(*uint16)(p)))
	case wit.S32:
		f.PutWord(uint64(*(*int32)(p)))
	case wit.U32, wit.F32, wit.Char:
		f.PutWord(uint64(*(*uint32)(p)))
	case wit.S64, wit.U64, wit.F64:
		f.PutWord(*(*uint64)(p))
	case wit.String:
		f.PutStr(goString((*C.wasm_name_t)(p)))
	case wit.List:
		lv := (*C.wasmtime_component_vallist_t)(p)
		elems := vals(lv.data, lv.size)
		if t.Elem.Kind == wit.U8 {
			out := make([]byte, len(elems)) // the one copy of the bytes
			if len(elems) > 0 {
				if i := int(C.atl_vals_to_bytes(lv.data, lv.size, (*C.uint8_t)(&out[0]))); i < len(elems) {
					return kindError(t.Elem, &elems[i])
				}
			}
			f.PutBytes(out)
			return nil
		}
		f.PutWord(uint64(len(elems)))
		for i := range elems {
			if err := s.lift(t.Elem, &elems[i], f, host); err != nil {
				return err
			}
		}
	case wit.Record:
		rv := (*C.wasmtime_component_valrecord_t)(p)
		if int(rv.size) != len(t.Fields) {
			return kindError(t, c)
		}
		entries := unsafe.Slice(rv.data, int(rv.size))
		for i := range entries {
			if err := s.lift(t.Fields[i].Type, &entries[i].val, f, host); err != nil {
				return err
			}
		}
	case wit.Tuple:
		tv := (*C.wasmtime_component_valtuple_t)(p)
		if int(tv.size) != len(t.Elems) {
			return kindError(t, c)
		}
		elems := vals(tv.data, tv.size)
		for i := range elems {
			if err := s.lift(t.Elems[i], &elems[i], f, host); err != nil {
				return err
			}
		}
	case wit.Variant:
		vv := (*C.wasmtime_component_valvariant_t)(p)
		i := -1
		for j := range t.Cases {
			if nameEquals(&vv.discriminant, t.Cases[j].Name) {
				i = j
				break
			}
		}
		if i < 0 || (t.Cases[i].Type != nil) != (vv.val != nil) {
			return kindError(t, c)
		}
		f.PutWord(uint64(i))
		if vv.val != nil {
			return s.lift(t.Cases[i].Type, vv.val, f, host)
		}
	case wit.Enum:
		i := nameIndex((*C.wasm_name_t)(p), t.Names)
		if i < 0 {
			return kindError(t, c)
		}
		f.PutWord(uint64(i))
	case wit.Option:
		inner := *(**C.wasmtime_component_val_t)(p)
		if inner == nil {
			f.PutWord(0)
			return nil
		}
		f.PutWord(1)
		return s.lift(t.Elem, inner, f, host)
	case wit.Result:
		rv := (*C.wasmtime_component_valresult_t)(p)
		side := t.Ok
		if !rv.is_ok {
			side = t.Err
		}
		if (side != nil) != (rv.val != nil) {
			return kindError(t, c)
		}
		f.PutWord(b2w(!bool(rv.is_ok)))
		if side != nil {
			return s.lift(side, rv.val, f, host)
		}
	case wit.Flags:
		fv := (*C.wasmtime_component_valflags_t)(p)
		var set uint64
		names := unsafe.Slice(fv.data, int(fv.size))
		for i := range names {
			j := nameIndex(&names[i], t.Names)
			if j < 0 || j >= wit.MaxFlags {
				return kindError(t, c)
			}
			set |= 1 << j
		}
		f.PutWord(set)
	case wit.Own, wit.Borrow:
		r := *(**C.wasmtime_component_resource_any_t)(p)
		if !host {
			f.PutWord(uint64(s.addResource(C.wasmtime_component_resource_any_clone(r))))
			return nil
		}
		var ty, rep C.uint32_t
		if err := takeError(C.atl_resource_host_parts(s.ctx, r, &ty, &rep)); err != nil {
			return fmt.Errorf("capi: %s is not a host resource: %w", t, err)
		}
		f.PutWord(HostResourceWord(uint32(ty), uint32(rep)))
	default:
		return fmt.Errorf("capi: values of type %s are not supported", t)
	}
	return nil
}

func nameEquals(n *C.wasm_name_t, s string) bool {
	return int(n.size) == len(s) && (len(s) == 0 || unsafe.String((*byte)(unsafe.Pointer(n.data)), len(s)) == s)
}

func b2w(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// lower consumes one canonical value of type t from f and writes it into the zeroed C value c.
//
// With host set, c is the result of a host function: Wasmtime takes it and frees it, so every
// part of c is allocated with Wasmtime's allocator, on error c is left in a state that
// wasmtime_component_val_delete accepts, and resources are host-defined (their words are
// HostResourceWords). Otherwise c is an argument of an exported function, which Wasmtime
// only reads: c is lent, its parts live in the store's arena until the call's release, and
// the resources it holds are recorded in s.lent for the call to delete (c must never reach
// wasmtime_component_val_delete).
func (s *Store) lower(t *wit.Type, f *wit.Flat, c *C.wasmtime_component_val_t, host bool) error {
	p := unionOf(c)
	switch t.Kind {
	case wit.String:
		x, ok := f.Str()
		if !ok {
			return shortError(t)
		}
		s.setName((*C.wasm_name_t)(p), x, host)
	case wit.List:
		return s.lowerList(t, f, c, host)
	case wit.Record:
		return s.lowerRecord(t, f, c, host)
	case wit.Tuple:
		tv := (*C.wasmtime_component_valtuple_t)(p)
		var elems []C.wasmtime_component_val_t
		if host {
			C.wasmtime_component_valtuple_new_uninit(tv, C.size_t(len(t.Elems)))
			elems = zeroed(tv.data, len(t.Elems))
		} else {
			elems = vals((*C.wasmtime_component_val_t)(s.lendVec(unsafe.Pointer(tv), len(t.Elems), uintptr(valSize))), C.size_t(len(t.Elems)))
		}
		c.kind = cKind(t.Kind)
		for i, et := range t.Elems {
			if err := s.lower(et, f, &elems[i], host); err != nil {
				return err
			}
		}
		return nil
	case wit.Variant:
		i, ok := f.Index(len(t.Cases))
		if !ok {
			return shortError(t)
		}
		cs := t.Cases[i]
		vv := (*C.wasmtime_component_valvariant_t)(p)
		if cs.Type != nil {
			var err error
			if vv.val, err = s.lowerBoxed(cs.Type, f, host); err != nil {
				return err
			}
		}
		s.setName(&vv.discriminant, cs.Name, host)
	case wit.Enum:
		i, ok := f.Index(len(t.Names))
		if !ok {
			return shortError(t)
		}
		s.setName((*C.wasm_name_t)(p), t.Names[i], host)
	case wit.Option:
		some, ok := f.Index(2)
		if !ok {
			return shortError(t)
		}
		if some == 1 {
			inner, err := s.lowerBoxed(t.Elem, f, host)
			if err != nil {
				return err
			}
			*(**C.wasmtime_component_val_t)(p) = inner
		}
	case wit.Result:
		isErr, ok := f.Index(2)
		if !ok {
			return shortError(t)
		}
		side := t.Ok
		if isErr == 1 {
			side = t.Err
		}
		rv := (*C.wasmtime_component_valresult_t)(p)
		if side != nil {
			var err error
			if rv.val, err = s.lowerBoxed(side, f, host); err != nil {
				return err
			}
		}
		rv.is_ok = C.bool(isErr == 0)
	case wit.Flags:
		set, ok := f.Word()
		if !ok {
			return shortError(t)
		}
		fv := (*C.wasmtime_component_valflags_t)(p)
		n := bits.OnesCount64(set)
		var names []C.wasm_name_t
		if host {
			C.wasmtime_component_valflags_new_uninit(fv, C.size_t(n))
			names = unsafe.Slice(fv.data, n)
		} else {
			names = unsafe.Slice((*C.wasm_name_t)(s.lendVec(unsafe.Pointer(fv), n, unsafe.Sizeof(C.wasm_name_t{}))), n)
		}
		c.kind = cKind(t.Kind)
		for i, k := 0, 0; k < n; i++ {
			if set&(1<<i) != 0 {
				if i >= len(t.Names) {
					clear(names[k:]) // so that deleting c is safe
					return shortError(t)
				}
				s.setName(&names[k], t.Names[i], host)
				k++
			}
		}
		return nil
	case wit.Own, wit.Borrow:
		h, ok := f.Word()
		if !ok {
			return shortError(t)
		}
		if host {
			r, err := s.hostResource(t, h)
			if err != nil {
				return err
			}
			*(**C.wasmtime_component_resource_any_t)(p) = r
			break
		}
		r, err := s.resource(wit.Handle(h))
		if err != nil {
			return err
		}
		if t.Kind == wit.Own { // the resource moves out of the table: the call owns it now
			delete(s.resources, wit.Handle(h))
		} else {
			r = C.wasmtime_component_resource_any_clone(r)
		}
		s.lent = append(s.lent, r)
		*(**C.wasmtime_component_resource_any_t)(p) = r
	default:
		w, ok := f.Word()
		if !ok {
			return shortError(t)
		}
		if err := lowerWord(t, w, p); err != nil {
			return err
		}
	}
	c.kind = cKind(t.Kind)
	return nil
}

// lowerWord writes the one-word canonical forms.
func lowerWord(t *wit.Type, w uint64, p unsafe.Pointer) error {
	switch t.Kind {
	case wit.Bool:
		*(*C.bool)(p) = w != 0
	case wit.S8, wit.U8:
		*(*uint8)(p) = uint8(w)
	case wit.S16, wit.U16:
		*(*uint16)(p) = uint16(w)
	case wit.S32, wit.U32, wit.F32, wit.Char:
		*(*uint32)(p) = uint32(w)
	case wit.S64, wit.U64, wit.F64:
		*(*uint64)(p) = w
	default:
		return fmt.Errorf("capi: values of type %s are not supported", t)
	}
	return nil
}

func (s *Store) lowerList(t *wit.Type, f *wit.Flat, c *C.wasmtime_component_val_t, host bool) error {
	lv := (*C.wasmtime_component_vallist_t)(unionOf(c))
	if t.Elem.Kind == wit.U8 {
		b, ok := f.ByteList()
		if !ok {
			return shortError(t)
		}
		c.kind = C.WASMTIME_COMPONENT_LIST
		if len(b) == 0 {
			return nil // the zero list is empty
		}
		// Every value of out is written. Owned lists are staged there for Wasmtime to copy.
		m := s.arena.mark()
		out := (*C.wasmtime_component_val_t)(s.arena.raw(uintptr(len(b)) * uintptr(valSize)))
		if host {
			C.atl_vallist_from_bytes(lv, (*C.uint8_t)(&b[0]), C.size_t(len(b)), out)
			s.arena.release(m)
			return nil
		}
		C.atl_vals_from_bytes(out, (*C.uint8_t)(&b[0]), C.size_t(len(b)))
		*(*cvec)(unsafe.Pointer(lv)) = cvec{size: C.size_t(len(b)), data: unsafe.Pointer(out)}
		return nil
	}
	n, ok := f.Word()
	if !ok || n > uint64(len(f.Words)+len(f.Strs)+len(f.Bytes)) { // each element takes one at least
		return shortError(t)
	}
	var elems []C.wasmtime_component_val_t
	if host {
		C.wasmtime_component_vallist_new_uninit(lv, C.size_t(n))
		elems = zeroed(lv.data, int(n))
	} else {
		elems = vals((*C.wasmtime_component_val_t)(s.lendVec(unsafe.Pointer(lv), int(n), uintptr(valSize))), C.size_t(n))
	}
	c.kind = C.WASMTIME_COMPONENT_LIST
	for i := range elems {
		if err := s.lower(t.Elem, f, &elems[i], host); err != nil {
			return err
		}
	}
	return nil
}

// lowerRecord lowers a record. An owned record gets its entries and their names from Wasmtime
// in one cgo call (the names staged in the arena); a lent one has them all in the arena.
func (s *Store) lowerRecord(t *wit.Type, f *wit.Flat, c *C.wasmtime_component_val_t, host bool) error {
	rv := (*C.wasmtime_component_valrecord_t)(unionOf(c))
	n := len(t.Fields)
	var entries []C.wasmtime_component_valrecord_entry_t
	if host {
		m := s.arena.mark()
		names := unsafe.Slice((*C.wasm_name_t)(s.arena.alloc(uintptr(n)*unsafe.Sizeof(C.wasm_name_t{}))), n)
		for i, fd := range t.Fields {
			s.setName(&names[i], fd.Name, false)
		}
		var first *C.wasm_name_t
		if n > 0 {
			first = &names[0]
		}
		C.atl_valrecord_new(rv, C.size_t(n), first)
		s.arena.release(m)
		entries = unsafe.Slice(rv.data, n)
	} else {
		entries = unsafe.Slice((*C.wasmtime_component_valrecord_entry_t)(s.lendVec(unsafe.Pointer(rv), n, unsafe.Sizeof(C.wasmtime_component_valrecord_entry_t{}))), n)
		for i, fd := range t.Fields {
			s.setName(&entries[i].name, fd.Name, false)
		}
	}
	c.kind = cKind(t.Kind)
	for i, fd := range t.Fields {
		if err := s.lower(fd.Type, f, &entries[i].val, host); err != nil {
			return err
		}
	}
	return nil
}

// lowerBoxed lowers the next value of f into a value of its own (for variant, option and
// result payloads): on Wasmtime's heap for owned values, in the arena for lent ones.
func (s *Store) lowerBoxed(t *wit.Type, f *wit.Flat, host bool) (*C.wasmtime_component_val_t, error) {
	if !host {
		c := (*C.wasmtime_component_val_t)(s.arena.alloc(uintptr(valSize)))
		return c, s.lower(t, f, c, false)
	}
	var tmp C.wasmtime_component_val_t
	if err := s.lower(t, f, &tmp, host); err != nil {
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

// HostResourceWord is the canonical word of the host-defined resource of host type ty whose
// representation is rep, in the values of host functions.
func HostResourceWord(ty, rep uint32) uint64 { return uint64(ty)<<32 | uint64(rep) }

// SplitHostResourceWord is the inverse of HostResourceWord.
func SplitHostResourceWord(w uint64) (ty, rep uint32) { return uint32(w >> 32), uint32(w) }

// hostResource makes the Wasmtime value of the host-defined resource whose word is w, as an
// own<R> or borrow<R> (by t) for the store.
func (s *Store) hostResource(t *wit.Type, w uint64) (*C.wasmtime_component_resource_any_t, error) {
	ty, rep := SplitHostResourceWord(w)
	var r *C.wasmtime_component_resource_any_t
	if err := takeError(C.atl_resource_host_new(s.ctx, C.bool(t.Kind == wit.Own), C.uint32_t(ty), C.uint32_t(rep), &r)); err != nil {
		return nil, fmt.Errorf("capi: %s: %w", t, err)
	}
	return r, nil
}
