package capi

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
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
	ptr *C.wasmtime_component_linker_t
	// funcs and resources are the handles of the Go values of its functions and resource
	// types (hostFuncHandles, resourceHandles), which C carries as their environments.
	funcs, resources []uintptr
	closed           atomic.Bool
}

// NewLinker creates an empty linker.
func NewLinker(e *Engine) *Linker { return &Linker{ptr: C.wasmtime_component_linker_new(e.ptr)} }

// AddWASIP2 defines every wasi:* 0.2 interface Wasmtime implements. What they can reach is set
// per store (see NewStore): no files, no network, no environment.
func (l *Linker) AddWASIP2() error {
	return takeError(C.wasmtime_component_linker_add_wasip2(l.ptr))
}

// HostResource is a resource type offered to guests under a linker instance.
type HostResource struct {
	// Name is the resource's name in the instance ("file").
	Name string
	// Type is the host type number that tells this resource type apart from the engine's other
	// host resource types: guests cannot pass a resource of one type where another is expected.
	Type uint32
	// Drop runs when an owned handle of the resource whose representation is rep is dropped
	// (by the guest, or through Store.DropResource). An error traps the guest with its message.
	Drop func(s *Store, rep uint32) error
}

// DefineInstance defines the instance `name` (for example "atelier:host/kv@0.1.0") with all
// of its resource types and functions. A name can be defined only once per linker.
func (l *Linker) DefineInstance(name string, resources []HostResource, funcs []HostFunc) error {
	rnames, rlens, renvs := l.items(len(resources), func(i int) (string, uintptr) {
		h := resourceHandles.add(&resources[i])
		l.resources = append(l.resources, h)
		return resources[i].Name, h
	})
	types := make([]C.uint32_t, len(resources))
	for i, r := range resources {
		types[i] = C.uint32_t(r.Type)
	}
	names, lens, envs := l.items(len(funcs), func(i int) (string, uintptr) {
		h := hostFuncHandles.add(&funcs[i])
		l.funcs = append(l.funcs, h)
		return funcs[i].Name, h
	})
	cname := C.CString(name)
	defer func() {
		C.free(unsafe.Pointer(cname))
		for _, p := range append(names, rnames...) {
			C.free(unsafe.Pointer(p))
		}
	}()
	// The C arrays are Go memory holding only C pointers and integers: allowed by cgo.
	return takeError(C.atl_linker_define_instance(l.ptr, cname, C.size_t(len(name)),
		C.size_t(len(resources)), first(rnames), first(rlens), first(types), first(renvs),
		C.size_t(len(funcs)), first(names), first(lens), first(envs)))
}

// items returns C copies of the names of n items and their environments: item(i) returns the
// name of item i and the handle it made of its Go value (the linker keeps it until Close).
func (l *Linker) items(n int, item func(i int) (string, uintptr)) ([]*C.char, []C.size_t, []C.uintptr_t) {
	names := make([]*C.char, n)
	lens := make([]C.size_t, n)
	envs := make([]C.uintptr_t, n)
	for i := range n {
		name, h := item(i)
		names[i] = C.CString(name)
		lens[i] = C.size_t(len(name))
		envs[i] = C.uintptr_t(h)
	}
	return names, lens, envs
}

// first returns a pointer to the first element of s, or nil when s is empty.
func first[T any](s []T) *T {
	if len(s) == 0 {
		return nil
	}
	return &s[0]
}

// Instantiate instantiates c in s.
func (l *Linker) Instantiate(s *Store, c *Component) (*Instance, error) {
	in := &Instance{s: s}
	if err := C.atl_instantiate(s.mem, s.takeArm(), c.plan, l.ptr, s.ctx, c.ptr, &in.inst); err != nil {
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
	for _, h := range l.funcs {
		hostFuncHandles.delete(h)
	}
	for _, h := range l.resources {
		resourceHandles.delete(h)
	}
}
