package capi

// #include "shim.h"
import "C"

import (
	"fmt"

	"atelier/host/runtime/wit"
)

// Instance is a component instance inside a store.
type Instance struct {
	s    *Store
	inst C.wasmtime_component_instance_t
}

// Func is an exported function of an instance.
type Func struct {
	s *Store
	f C.wasmtime_component_func_t
}

// Func returns the exported function at x.
func (in *Instance) Func(x *ExportIndex) (Func, bool) {
	f := Func{s: in.s}
	ok := C.wasmtime_component_instance_get_func(&in.inst, in.s.ctx, x.ptr, &f.f)
	return f, bool(ok)
}

// Call calls f with canonical arguments of the types in ft, runs post-return, and returns the
// canonical result (nil when ft has none). Errors from the guest are *Error values.
func (f Func) Call(ft *wit.FuncType, args []any) (any, error) {
	if len(args) != len(ft.Params) {
		return nil, fmt.Errorf("capi: %d arguments for %d parameters", len(args), len(ft.Params))
	}
	nres := 0
	if ft.Result != nil {
		nres = 1
	}
	s := f.s
	buf := s.args(len(args) + nres)
	cargs, cres := buf[:len(args)], buf[len(args):]
	defer func() {
		for i := range buf {
			C.wasmtime_component_val_delete(&buf[i])
		}
	}()
	for i, a := range args {
		if err := s.lower(ft.Params[i].Type, a, &cargs[i]); err != nil {
			return nil, err
		}
	}
	var pa, pr *C.wasmtime_component_val_t
	if len(cargs) > 0 {
		pa = &cargs[0]
	}
	if nres > 0 {
		pr = &cres[0]
	}
	if err := C.wasmtime_component_func_call(&f.f, s.ctx, pa, C.size_t(len(cargs)), pr, C.size_t(nres)); err != nil {
		return nil, takeError(err)
	}
	var out any
	var lerr error
	if nres > 0 {
		out, lerr = s.lift(ft.Result, &cres[0])
	}
	if err := takeError(C.wasmtime_component_func_post_return(&f.f, s.ctx)); err != nil {
		return nil, err
	}
	return out, lerr
}
