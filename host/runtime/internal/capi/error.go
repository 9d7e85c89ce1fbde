package capi

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"strconv"
	"strings"
	"unsafe"
)

// Error is an error reported by Wasmtime: its full message and, for traps, the guest's wasm
// backtrace (innermost frame first).
type Error struct {
	Message string
	Frames  []Frame
	// ExitCode is set (and Exited true) when the guest called wasi:cli/exit.
	ExitCode int
	Exited   bool
}

// Frame is one frame of a guest backtrace.
type Frame struct {
	Module       string
	Func         string
	FuncIndex    uint32
	ModuleOffset uint
}

// Error returns Wasmtime's message.
func (e *Error) Error() string { return e.Message }

// String renders the frame like Wasmtime does: `module!func` (or `wasm-function[N]`) at an offset.
func (f Frame) String() string {
	var b strings.Builder
	if f.Module != "" {
		b.WriteString(f.Module)
		b.WriteByte('!')
	}
	if f.Func != "" {
		b.WriteString(f.Func)
	} else {
		b.WriteString("wasm-function[")
		b.WriteString(strconv.FormatUint(uint64(f.FuncIndex), 10))
		b.WriteByte(']')
	}
	if f.ModuleOffset != ^uint(0) { // unknown offset
		b.WriteString(" @ 0x")
		b.WriteString(strconv.FormatUint(uint64(f.ModuleOffset), 16))
	}
	return b.String()
}

// takeError converts and frees a Wasmtime error; nil stays nil.
func takeError(err *C.wasmtime_error_t) error {
	if err == nil {
		return nil
	}
	defer C.wasmtime_error_delete(err)
	var n C.size_t
	msg := C.atl_error_message(err, &n)
	e := &Error{Message: C.GoStringN(msg, C.int(n))}
	C.free(unsafe.Pointer(msg))
	var status C.int
	if C.wasmtime_error_exit_status(err, &status) {
		e.Exited, e.ExitCode = true, int(status)
	}
	var trace C.wasm_frame_vec_t
	C.wasmtime_error_wasm_trace(err, &trace)
	if trace.size > 0 {
		e.Frames = make([]Frame, int(trace.size))
		for i := range e.Frames {
			var fn, mod *C.wasm_name_t
			var idx C.uint32_t
			var off C.size_t
			C.atl_frame(&trace, C.size_t(i), &fn, &mod, &idx, &off)
			e.Frames[i] = Frame{Func: nameString(fn), Module: nameString(mod), FuncIndex: uint32(idx), ModuleOffset: uint(off)}
		}
	}
	C.wasm_frame_vec_delete(&trace)
	return e
}

func nameString(n *C.wasm_name_t) string {
	if n == nil || n.size == 0 {
		return ""
	}
	return C.GoStringN((*C.char)(unsafe.Pointer(n.data)), C.int(n.size))
}

// newCError builds a Wasmtime error (owned by the caller, usually handed back to Wasmtime).
func newCError(msg string) *C.wasmtime_error_t {
	cs := C.CString(msg)
	defer C.free(unsafe.Pointer(cs))
	return C.wasmtime_error_new(cs)
}
