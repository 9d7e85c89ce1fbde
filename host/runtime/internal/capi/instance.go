package capi

// #include "shim.h"
import "C"

import "atelier/host/runtime/wit"

// Instance is a component instance inside a store.
type Instance struct {
	s    *Store
	inst C.wasmtime_component_instance_t
}

// Func is an exported function of an instance.
type Func struct {
	s *Store
	// f is allocated once, by Instance.Func: a Func value that held the C struct itself would
	// be copied to the heap at each call that passes its address to C.
	f *C.wasmtime_component_func_t
}

// Func returns the exported function at x.
func (in *Instance) Func(x *ExportIndex) (Func, bool) {
	f := Func{s: in.s, f: new(C.wasmtime_component_func_t)}
	ok := C.wasmtime_component_instance_get_func(&in.inst, in.s.ctx, x.ptr, f.f)
	return f, bool(ok)
}

// Call calls f with the canonical arguments in args (see wit.Flat; read from its current
// position), runs post-return, and appends the canonical result to res (nothing when ft has
// none). Errors from the guest are *Error values. A result whose estimated encoding passes
// maxResult bytes (0: no limit) is refused with a *wit.SizeError as soon as the lifting finds
// out, before the rest is copied (res then holds part of it). Anything else is a bug in the
// caller.
func (f Func) Call(ft *wit.FuncType, args, res *wit.Flat, maxResult int64) error {
	nargs, nres := len(ft.Params), 0
	if ft.Result != nil {
		nres = 1
	}
	s := f.s
	m, lent := s.arena.mark(), len(s.lent)
	buf := vals((*C.wasmtime_component_val_t)(s.arena.alloc(uintptr(nargs+nres)*uintptr(valSize))), C.size_t(nargs+nres))
	err := f.call(ft, buf[:nargs], buf[nargs:], args, res, maxResult)
	if nres > 0 { // the result is Wasmtime's; the arguments were lent (see Store.lower)
		C.wasmtime_component_val_delete(&buf[nargs])
	}
	for _, r := range s.lent[lent:] {
		C.wasmtime_component_resource_any_delete(r)
	}
	clear(s.lent[lent:])
	s.lent = s.lent[:lent]
	s.arena.release(m)
	return err
}

func (f Func) call(ft *wit.FuncType, cargs, cres []C.wasmtime_component_val_t, args, res *wit.Flat, maxResult int64) error {
	s := f.s
	for i := range cargs {
		if err := s.lower(ft.Params[i].Type, args, &cargs[i], false); err != nil {
			return err
		}
	}
	var pa, pr *C.wasmtime_component_val_t
	if len(cargs) > 0 {
		pa = &cargs[0]
	}
	if len(cres) > 0 {
		pr = &cres[0]
	}
	if err := C.atl_func_call(s.mem, s.takeArm(), f.f, s.ctx, pa, C.size_t(len(cargs)), pr, C.size_t(len(cres))); err != nil {
		return takeError(err)
	}
	if len(cres) > 0 { // post-return has run: the result is the C API's copy
		s.budget = wit.Budget{Limit: maxResult}
		return s.lift(ft.Result, &cres[0], res, false, &s.budget)
	}
	return nil
}
