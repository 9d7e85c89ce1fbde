package capi

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"runtime/cgo"
	"sync/atomic"
	"unsafe"

	"atelier/host/runtime/wit"
)

// HostFunc is one Go function offered to guests under a linker instance.
type HostFunc struct {
	Name string
	// Signature returns the function's type as the calling store's component imports it.
	Signature func(s *Store) (*wit.FuncType, error)
	// Call runs the function, whose type Signature returned: it consumes the canonical arguments from args and appends the
	// canonical result, if the function has one, to res (see wit.Flat). An error traps the
	// guest.
	Call func(s *Store, ft *wit.FuncType, args, res *wit.Flat) error
}

// Linker resolves component imports. Once defined it is safe for concurrent instantiation, and
// it must outlive every instance created with it (host functions are called through it).
type Linker struct {
	ptr     *C.wasmtime_component_linker_t
	handles []cgo.Handle
	closed  atomic.Bool
}

// NewLinker creates an empty linker.
func NewLinker(e *Engine) *Linker { return &Linker{ptr: C.wasmtime_component_linker_new(e.ptr)} }

// AddWASIP2 defines every wasi:* 0.2 interface Wasmtime implements. What they can reach is set
// per store (see NewStore): no files, no network, no environment.
func (l *Linker) AddWASIP2() error {
	return takeError(C.wasmtime_component_linker_add_wasip2(l.ptr))
}

// DefineInstance defines the instance `name` (for example "atelier:host/kv@0.1.0") with all
// of its functions. A name can be defined only once per linker.
func (l *Linker) DefineInstance(name string, funcs []HostFunc) error {
	n := len(funcs)
	names := make([]*C.char, n)
	lens := make([]C.size_t, n)
	envs := make([]C.uintptr_t, n)
	for i, f := range funcs {
		names[i] = C.CString(f.Name)
		lens[i] = C.size_t(len(f.Name))
		h := cgo.NewHandle(&funcs[i])
		l.handles = append(l.handles, h)
		envs[i] = C.uintptr_t(h)
	}
	cname := C.CString(name)
	defer func() {
		C.free(unsafe.Pointer(cname))
		for _, p := range names {
			C.free(unsafe.Pointer(p))
		}
	}()
	// The C arrays below are Go memory holding only C pointers and integers: allowed by cgo.
	var pnames **C.char
	var plens *C.size_t
	var penvs *C.uintptr_t
	if n > 0 {
		pnames, plens, penvs = &names[0], &lens[0], &envs[0]
	}
	return takeError(C.atl_linker_define_instance(l.ptr, cname, C.size_t(len(name)), C.size_t(n), pnames, plens, penvs))
}

// Instantiate instantiates c in s.
func (l *Linker) Instantiate(s *Store, c *Component) (*Instance, error) {
	in := &Instance{s: s}
	if err := C.atl_instantiate(s.mem, l.ptr, s.ctx, c.ptr, &in.inst); err != nil {
		return nil, takeError(err)
	}
	return in, nil
}

// Close deletes the linker. Every instance created with it must be gone.
func (l *Linker) Close() {
	if !l.closed.CompareAndSwap(false, true) {
		return
	}
	C.wasmtime_component_linker_delete(l.ptr)
	for _, h := range l.handles {
		h.Delete()
	}
}
