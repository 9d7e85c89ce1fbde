package capi

// All Go functions called from C live here. None of them lets a panic unwind into C.

// #include "shim.h"
import "C"

import (
	"fmt"
	"unsafe"

	"atelier/host/runtime/wit"
)

//export atlHostCall
func atlHostCall(env unsafe.Pointer, ctx *C.wasmtime_context_t, _ *C.wasmtime_component_func_type_t,
	args *C.wasmtime_component_val_t, nargs C.size_t,
	results *C.wasmtime_component_val_t, nresults C.size_t) (cerr *C.wasmtime_error_t) {
	defer func() {
		if r := recover(); r != nil {
			cerr = newCError(fmt.Sprintf("host function panicked: %v", r))
		}
	}()
	hf := hostFuncHandles.value(uintptr(env))
	s := storeOf(ctx)
	ft, err := hf.Signature(s)
	if err != nil {
		return newCError(err.Error())
	}
	cargs := vals(args, nargs)
	if len(cargs) != len(ft.Params) || int(nresults) != btoi(ft.Result != nil) {
		return newCError(fmt.Sprintf("host function %s: signature mismatch", hf.Name))
	}
	in, out := &s.hostArgs, &s.hostRes
	defer func() { in.Reset(); out.Reset() }() // drop references to Go values
	s.budget = wit.Budget{}                    // a host function's arguments are not sent on
	for i := range cargs {
		if err := s.lift(ft.Params[i].Type, &cargs[i], in, true, &s.budget); err != nil {
			return newCError(fmt.Sprintf("host function %s: %v", hf.Name, err))
		}
	}
	if err := hf.Call(s, ft, in, out); err != nil {
		return newCError(err.Error())
	}
	if ft.Result != nil {
		res := vals(results, nresults)
		clear(res)
		if err := s.lower(ft.Result, out, &res[0], true); err != nil {
			C.wasmtime_component_val_delete(&res[0])
			clear(res)
			return newCError(fmt.Sprintf("host function %s result: %v", hf.Name, err))
		}
	}
	return nil
}

//export atlResourceDrop
func atlResourceDrop(env C.uintptr_t, ctx *C.wasmtime_context_t, rep C.uint32_t) (cerr *C.wasmtime_error_t) {
	defer func() {
		if r := recover(); r != nil {
			cerr = newCError(fmt.Sprintf("resource destructor panicked: %v", r))
		}
	}()
	hr := resourceHandles.value(uintptr(env))
	if err := hr.Drop(storeOf(ctx), uint32(rep)); err != nil {
		return newCError(err.Error())
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

//export atlWrite
func atlWrite(h C.uintptr_t, buf *C.uchar, n C.size_t) (written C.ptrdiff_t) {
	defer func() {
		if recover() != nil {
			written = -5 // EIO
		}
	}()
	w := writerHandles.value(uintptr(h))
	k, err := w.Write(unsafe.Slice((*byte)(unsafe.Pointer(buf)), int(n)))
	if err != nil {
		return -5 // EIO
	}
	return C.ptrdiff_t(k)
}

//export atlEpochDeadline
func atlEpochDeadline(h C.uintptr_t, delta *C.uint64_t) (cerr *C.wasmtime_error_t) {
	defer func() {
		if r := recover(); r != nil {
			cerr = newCError(fmt.Sprintf("deadline check panicked: %v", r))
		}
	}()
	s := storeHandles.value(uintptr(h))
	if s.onDeadline != nil && s.onDeadline() {
		*delta = 1
		return nil
	}
	return newCError(DeadlineMessage)
}

// DeadlineMessage is the message of the error that interrupts a guest at its deadline.
const DeadlineMessage = "atelier: guest interrupted at its deadline"
