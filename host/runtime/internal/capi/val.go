package capi

// #include "shim.h"
import "C"

import (
	"fmt"
	"math/bits"
	"strings"
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
//
// Each part is charged to b at its estimated encoded size (wit.Budget's ChargeNode,
// ChargeString, ChargeList) before it is copied out of C memory, so a value too large for b
// stops with its *wit.SizeError having allocated about b.Limit at most.
func (s *Store) lift(t *wit.Type, c *C.wasmtime_component_val_t, f *wit.Flat, host bool, b *wit.Budget) error {
	if c.kind != cKind(t.Kind) {
		return kindError(t, c)
	}
	p := unionOf(c)
	var w uint64 // the canonical word, for the kinds that have one
	switch t.Kind {
	case wit.Bool:
		w = b2w(bool(*(*C.bool)(p)))
	case wit.S8:
		w = uint64(*(*int8)(p))
	case wit.U8:
		w = uint64(*(*uint8)(p))
	case wit.S16:
		w = uint64(*(*int16)(p))
	case wit.U16:
		w = uint64(*(*uint16)(p))
	case wit.S32:
		w = uint64(*(*int32)(p))
	case wit.U32, wit.F32, wit.Char:
		w = uint64(*(*uint32)(p))
	case wit.S64, wit.U64, wit.F64:
		w = *(*uint64)(p)
	case wit.String:
		n := (*C.wasm_name_t)(p)
		var view string
		if n.size > 0 {
			view = unsafe.String((*byte)(unsafe.Pointer(n.data)), int(n.size))
		}
		if err := b.ChargeString(view); err != nil {
			return err
		}
		f.PutStr(strings.Clone(view))
		return nil
	case wit.List:
		return s.liftList(t, (*C.wasmtime_component_vallist_t)(p), f, host, b)
	case wit.Record:
		rv := (*C.wasmtime_component_valrecord_t)(p)
		if int(rv.size) != len(t.Fields) {
			return kindError(t, c)
		}
		if err := b.ChargeNode(t, 0); err != nil {
			return err
		}
		entries := unsafe.Slice(rv.data, int(rv.size))
		for i := range entries {
			if err := s.lift(t.Fields[i].Type, &entries[i].val, f, host, b); err != nil {
				return err
			}
		}
		return nil
	case wit.Tuple:
		tv := (*C.wasmtime_component_valtuple_t)(p)
		if int(tv.size) != len(t.Elems) {
			return kindError(t, c)
		}
		if err := b.ChargeNode(t, 0); err != nil {
			return err
		}
		elems := vals(tv.data, tv.size)
		for i := range elems {
			if err := s.lift(t.Elems[i], &elems[i], f, host, b); err != nil {
				return err
			}
		}
		return nil
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
		return s.liftPayload(t, uint64(i), t.Cases[i].Type, vv.val, f, host, b)
	case wit.Enum:
		i := nameIndex((*C.wasm_name_t)(p), t.Names)
		if i < 0 {
			return kindError(t, c)
		}
		w = uint64(i)
	case wit.Option:
		inner := *(**C.wasmtime_component_val_t)(p)
		if inner == nil {
			return s.liftPayload(t, 0, nil, nil, f, host, b)
		}
		return s.liftPayload(t, 1, t.Elem, inner, f, host, b)
	case wit.Result:
		rv := (*C.wasmtime_component_valresult_t)(p)
		side := t.Ok
		if !rv.is_ok {
			side = t.Err
		}
		if (side != nil) != (rv.val != nil) {
			return kindError(t, c)
		}
		return s.liftPayload(t, b2w(!bool(rv.is_ok)), side, rv.val, f, host, b)
	case wit.Flags:
		fv := (*C.wasmtime_component_valflags_t)(p)
		names := unsafe.Slice(fv.data, int(fv.size))
		for i := range names {
			j := nameIndex(&names[i], t.Names)
			if j < 0 || j >= wit.MaxFlags {
				return kindError(t, c)
			}
			w |= 1 << j
		}
	case wit.Own, wit.Borrow:
		if err := b.ChargeNode(t, 0); err != nil {
			return err
		}
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
		return nil
	default:
		return fmt.Errorf("capi: values of type %s are not supported", t)
	}
	if err := b.ChargeNode(t, w); err != nil {
		return err
	}
	f.PutWord(w)
	return nil
}

// liftPayload appends the word w of a variant, option or result and then its payload c of type
// pt, if it has one (pt nil: it has none).
func (s *Store) liftPayload(t *wit.Type, w uint64, pt *wit.Type, c *C.wasmtime_component_val_t, f *wit.Flat, host bool, b *wit.Budget) error {
	if err := b.ChargeNode(t, w); err != nil {
		return err
	}
	f.PutWord(w)
	if pt == nil {
		return nil
	}
	return s.lift(pt, c, f, host, b)
}

// liftList lifts a list: a list of scalars is copied into one typed slice by one cgo call,
// after its least possible encoding was checked against b; any other list is a length and its
// elements.
func (s *Store) liftList(t *wit.Type, lv *C.wasmtime_component_vallist_t, f *wit.Flat, host bool, b *wit.Budget) error {
	elems := vals(lv.data, lv.size)
	k := t.Elem.Kind
	if !k.Scalar() {
		if err := b.ChargeNode(t, uint64(len(elems))); err != nil {
			return err
		}
		f.PutWord(uint64(len(elems)))
		for i := range elems {
			if err := s.lift(t.Elem, &elems[i], f, host, b); err != nil {
				return err
			}
		}
		return nil
	}
	if err := b.CheckList(k, len(elems)); err != nil {
		return err
	}
	out := wit.MakeList(k, len(elems)) // the one copy of the elements
	if len(elems) > 0 {
		if i := int(C.atl_vals_to_scalars(lv.data, lv.size, cKind(k), out.UnsafePointer())); i < len(elems) {
			return kindError(t.Elem, &elems[i])
		}
	}
	x := out.Interface()
	if err := b.ChargeList(k, x); err != nil {
		return err
	}
	f.PutList(x)
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
	if k := t.Elem.Kind; k.Scalar() {
		x, ok := f.List()
		rv, isList := wit.ListOf(k, x)
		if !ok || !isList {
			return shortError(t)
		}
		c.kind = C.WASMTIME_COMPONENT_LIST
		n := rv.Len()
		if n == 0 {
			return nil // the zero list is empty
		}
		// Every value of out is written. Owned lists are staged there for Wasmtime to copy.
		m := s.arena.mark()
		out := (*C.wasmtime_component_val_t)(s.arena.raw(uintptr(n) * uintptr(valSize)))
		if host {
			C.atl_vallist_from_scalars(lv, cKind(k), rv.UnsafePointer(), C.size_t(n), out)
			s.arena.release(m)
			return nil
		}
		C.atl_vals_from_scalars(out, cKind(k), rv.UnsafePointer(), C.size_t(n))
		*(*cvec)(unsafe.Pointer(lv)) = cvec{size: C.size_t(n), data: unsafe.Pointer(out)}
		return nil
	}
	n, ok := f.Word()
	if !ok || n > uint64(f.Left()) { // each element takes one at least
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
