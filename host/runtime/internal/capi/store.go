package capi

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/cgo"
	"sync/atomic"

	"atelier/host/runtime/wit"
)

// StoreConfig configures a new store.
type StoreConfig struct {
	// MemoryLimit caps the bytes of every linear memory in the store (0 = no cap): the guest's
	// memory.grow returns -1 and instantiation fails when a memory's minimum is above the cap.
	// On engines with EngineConfig.CapMemories the memory creator enforces it and records
	// each refusal (MemoryRefused); otherwise Wasmtime's store limiter does, silently.
	MemoryLimit int64
	// Stdout and Stderr receive the guest's wasi:cli output (nil discards it).
	Stdout, Stderr io.Writer
	// OnDeadline runs on the store's goroutine each time the epoch deadline passes while the
	// guest runs; returning true lets it run for one more epoch tick, false interrupts it.
	// Nil interrupts at the first deadline.
	OnDeadline func() bool
	// Owner is reachable from host function calls through Store.Owner.
	Owner any
}

// Store holds instances and their state. It is not safe for concurrent use: one goroutine at a
// time, including host functions that run inside its calls.
type Store struct {
	eng    *Engine
	ptr    *C.wasmtime_store_t
	ctx    *C.wasmtime_context_t
	mem    *C.atl_memcap_t // the memory cap, on engines with EngineConfig.CapMemories
	self   cgo.Handle
	owner  any
	closed bool

	onDeadline func() bool
	writers    []cgo.Handle
	resources  map[wit.Handle]*C.wasmtime_component_resource_any_t

	// arena holds the values lent to Wasmtime during calls; lent lists the resources in them,
	// which the calls delete (see lower).
	arena arena
	lent  []*C.wasmtime_component_resource_any_t

	// hostArgs and hostRes carry the values of host function calls (one at a time per store).
	hostArgs, hostRes wit.Flat
	// budget counts the value being lifted (a host function's arguments or a call's result).
	budget wit.Budget
}

// NewStore creates a store with a WASI context that has no arguments, no environment, no stdin,
// no preopened directories and no network, and whose stdout/stderr go to the configured writers.
func NewStore(e *Engine, cfg StoreConfig) (*Store, error) {
	s := &Store{eng: e, owner: cfg.Owner, onDeadline: cfg.OnDeadline}
	s.self = cgo.NewHandle(s)
	capped, limit := C.int(0), C.uint64_t(math.MaxUint64)
	if e.capMemories {
		capped = 1
	}
	if cfg.MemoryLimit > 0 {
		limit = C.uint64_t(cfg.MemoryLimit)
	}
	var mem *C.atl_memcap_t
	s.ptr = C.atl_store_new(e.ptr, C.uintptr_t(s.self), capped, limit, &mem)
	if s.ptr == nil {
		s.self.Delete()
		return nil, errors.New("create store: out of host memory")
	}
	s.mem = mem
	s.ctx = C.wasmtime_store_context(s.ptr)
	wasi := C.wasi_config_new()
	if cfg.Stdout != nil {
		h := cgo.NewHandle(cfg.Stdout)
		s.writers = append(s.writers, h)
		C.atl_wasi_stdout(wasi, C.uintptr_t(h))
	}
	if cfg.Stderr != nil {
		h := cgo.NewHandle(cfg.Stderr)
		s.writers = append(s.writers, h)
		C.atl_wasi_stderr(wasi, C.uintptr_t(h))
	}
	if err := takeError(C.wasmtime_context_set_wasi(s.ctx, wasi)); err != nil { // takes wasi
		s.Close()
		return nil, fmt.Errorf("configure WASI: %w", err)
	}
	switch {
	case e.capMemories:
		// The memory creator enforces the cap; the limiter keeps Wasmtime's default bounds on
		// the number of instances, tables and memories in the store.
		C.wasmtime_store_limiter(s.ptr, -1, -1, -1, -1, -1)
	case cfg.MemoryLimit > 0:
		C.wasmtime_store_limiter(s.ptr, C.int64_t(cfg.MemoryLimit), -1, -1, -1, -1)
	}
	C.atl_store_epoch_callback(s.ptr, C.uintptr_t(s.self))
	C.wasmtime_context_set_epoch_deadline(s.ctx, 1)
	return s, nil
}

// MemoryRefused reports whether the memory cap refused a memory or a growth since the last
// ClearMemoryRefused. It is always false on engines without EngineConfig.CapMemories.
func (s *Store) MemoryRefused() bool { return s.mem != nil && s.mem.refused != 0 }

// ClearMemoryRefused forgets earlier refusals (see MemoryRefused).
func (s *Store) ClearMemoryRefused() {
	if s.mem != nil {
		s.mem.refused = 0
	}
}

// Owner returns StoreConfig.Owner.
func (s *Store) Owner() any { return s.owner }

// SetEpochDeadline arms the deadline `ticks` epoch ticks from now.
func (s *Store) SetEpochDeadline(ticks uint64) {
	C.wasmtime_context_set_epoch_deadline(s.ctx, C.uint64_t(ticks))
}

// SetFuel sets the fuel left (engines with EngineConfig.Fuel only).
func (s *Store) SetFuel(fuel uint64) error {
	return takeError(C.wasmtime_context_set_fuel(s.ctx, C.uint64_t(fuel)))
}

// Fuel returns the fuel left.
func (s *Store) Fuel() (uint64, error) {
	var f C.uint64_t
	err := takeError(C.wasmtime_context_get_fuel(s.ctx, &f))
	return uint64(f), err
}

// nextHandle numbers resource handles across every store of the process, so that a handle
// from one store is unknown to all others (2^64 handles never wrap).
var nextHandle atomic.Uint64

// DropResource drops the resource behind h (running the guest's destructor for guest
// resources) and forgets the handle. An unknown handle is an error before anything runs;
// an error from the drop itself (a destructor that traps) is an *Error.
func (s *Store) DropResource(h wit.Handle) error {
	r, err := s.resource(h)
	if err != nil {
		return err
	}
	delete(s.resources, h)
	err = takeError(C.atl_resource_drop(s.mem, s.ctx, r))
	C.wasmtime_component_resource_any_delete(r)
	return err
}

func (s *Store) addResource(r *C.wasmtime_component_resource_any_t) wit.Handle {
	h := wit.Handle(nextHandle.Add(1))
	if s.resources == nil {
		s.resources = make(map[wit.Handle]*C.wasmtime_component_resource_any_t)
	}
	s.resources[h] = r
	return h
}

// resource returns the resource behind h.
func (s *Store) resource(h wit.Handle) (*C.wasmtime_component_resource_any_t, error) {
	r, ok := s.resources[h]
	if !ok {
		return nil, unknownHandle(h)
	}
	return r, nil
}

func unknownHandle(h wit.Handle) error {
	return fmt.Errorf("%w %d (never returned by this instance, dropped, or moved into the guest)", ErrUnknownHandle, h)
}

// ErrUnknownHandle: a resource handle is not in the store's table.
var ErrUnknownHandle = errors.New("unknown resource handle")

// Close deletes the store with every instance in it. Idempotent.
func (s *Store) Close() {
	if s.closed {
		return
	}
	s.closed = true
	for _, r := range s.resources {
		C.wasmtime_component_resource_any_delete(r)
	}
	s.resources = nil
	C.atl_store_delete(s.ptr, s.mem) // frees the memories, then the cap
	s.mem = nil
	s.arena.free()
	for _, h := range s.writers {
		h.Delete()
	}
	s.self.Delete()
}

// storeOf finds the Go store of a C context (host function calls).
func storeOf(ctx *C.wasmtime_context_t) *Store {
	return cgo.Handle(uintptr(C.atl_context_handle(ctx))).Value().(*Store)
}
