package capi

// #include "shim.h"
import "C"

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync/atomic"
	"unsafe"

	"atelier/host/runtime/wit"
)

// StoreConfig configures a new store.
type StoreConfig struct {
	// MemoryLimit is the store's memory budget in bytes (0 = none): its tables get
	// TableReserve(MemoryLimit) of it (the store limiter bounds their number and elements to
	// fit), and on engines with EngineConfig.CapMemories all its linear memories together get
	// the rest: the memory creator charges each memory's committed bytes at creation and
	// growth, refuses what would pass the budget (the guest's memory.grow returns -1,
	// instantiation fails) and records each refusal (MemoryRefused). Otherwise Wasmtime's store
	// limiter bounds each linear memory alone by MemoryLimit, silently.
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
	mem    *C.atl_memcap_t // the memory budget, on engines with EngineConfig.CapMemories
	self   uintptr         // its handle in storeHandles, the C store's data
	owner  any
	closed bool

	onDeadline func() bool
	// arm is the epoch deadline, in ticks, that the next entry into the guest sets (0: none).
	arm       uint64
	writers   []uintptr // handles in writerHandles
	resources map[wit.Handle]*C.wasmtime_component_resource_any_t

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
	s.self = storeHandles.add(s)
	capped, limit := C.int(0), C.uint64_t(math.MaxUint64)
	if e.capMemories {
		capped = 1
	}
	if cfg.MemoryLimit > 0 {
		limit = C.uint64_t(cfg.MemoryLimit)
	}
	elems, tables := C.int64_t(-1), C.int64_t(-1)
	reserve := TableReserve(cfg.MemoryLimit)
	if cfg.MemoryLimit > 0 {
		elems, tables = C.int64_t(reserve/(MaxTables*tableElementBytes)), MaxTables
	}
	var mem *C.atl_memcap_t
	s.ptr = C.atl_store_new(e.ptr, C.uintptr_t(s.self), capped, limit, C.uint64_t(reserve), &mem)
	if s.ptr == nil {
		storeHandles.delete(s.self)
		return nil, errors.New("create store: out of host memory")
	}
	s.mem = mem
	s.ctx = C.wasmtime_store_context(s.ptr)
	wasi := C.wasi_config_new()
	if cfg.Stdout != nil {
		h := writerHandles.add(&writer{cfg.Stdout})
		s.writers = append(s.writers, h)
		C.atl_wasi_stdout(wasi, C.uintptr_t(h))
	}
	if cfg.Stderr != nil {
		h := writerHandles.add(&writer{cfg.Stderr})
		s.writers = append(s.writers, h)
		C.atl_wasi_stderr(wasi, C.uintptr_t(h))
	}
	if err := takeError(C.wasmtime_context_set_wasi(s.ctx, wasi)); err != nil { // takes wasi
		s.Close()
		return nil, fmt.Errorf("configure WASI: %w", err)
	}
	// The limiter bounds the tables (and keeps Wasmtime's default bounds on the number of
	// instances and memories); without the memory creator it also bounds each memory.
	memLimit := C.int64_t(-1)
	if !e.capMemories && cfg.MemoryLimit > 0 {
		memLimit = C.int64_t(cfg.MemoryLimit)
	}
	C.wasmtime_store_limiter(s.ptr, memLimit, elems, -1, tables, -1)
	C.atl_store_epoch_callback(s.ptr, C.uintptr_t(s.self))
	C.wasmtime_context_set_epoch_deadline(s.ctx, 1)
	return s, nil
}

// Tables' share of a store's memory budget (StoreConfig.MemoryLimit): a store may create at
// most MaxTables tables of at most TableReserve/(MaxTables*8) elements each, so that its tables
// never hold more host memory than TableReserve. Wasmtime keeps a table element in 8 bytes
// (a function reference or an externref's GC reference, both at most a pointer).
const (
	// MaxTables is the number of tables a store with a budget may create.
	MaxTables = 16
	// tableShare: the tables get 1/tableShare of the budget.
	tableShare        = 16
	tableElementBytes = 8
)

// TableReserve returns the bytes of a memory budget reserved for the store's tables (and
// charged to it from the start): a sixteenth, rounded down to whole elements of MaxTables
// tables; 0 for no budget. The linear memories get the rest.
func TableReserve(budget int64) int64 {
	if budget <= 0 {
		return 0
	}
	perTable := budget / tableShare / (MaxTables * tableElementBytes)
	return perTable * MaxTables * tableElementBytes
}

// MemoryUsed returns the bytes charged to the store's memory budget: its tables' reserve plus
// the committed bytes of its linear memories (0 on engines without EngineConfig.CapMemories,
// whose memories Wasmtime makes). Not concurrently with Close.
func (s *Store) MemoryUsed() int64 {
	if s.mem == nil {
		return 0
	}
	return int64(atomic.LoadUint64((*uint64)(unsafe.Pointer(&s.mem.used))))
}

// SetMemoryBudget changes the store's memory budget for the memories and growths to come (a
// budget below what the store holds refuses every growth); nothing is taken back. It has no
// effect on engines without EngineConfig.CapMemories. Not during a call.
func (s *Store) SetMemoryBudget(n int64) {
	if s.mem != nil && n > 0 {
		s.mem.cap = C.uint64_t(n)
	}
}

// MemoryRefused reports whether the memory budget refused a memory or a growth since the last
// ClearMemoryRefused. It is always false on engines without EngineConfig.CapMemories.
func (s *Store) MemoryRefused() bool { return s.mem != nil && s.mem.refused != 0 }

// MemoryRefusal returns the message of the latest refusal by the memory budget ("instance
// memory budget of 256 MiB exhausted: its memories and tables hold 250 MiB and one asked for
// 16 MiB more"), or "" when MemoryRefused is false.
func (s *Store) MemoryRefusal() string {
	if !s.MemoryRefused() {
		return ""
	}
	return C.GoString(&s.mem.refusal[0])
}

// ClearMemoryRefused forgets earlier refusals (see MemoryRefused).
func (s *Store) ClearMemoryRefused() {
	if s.mem != nil {
		s.mem.refused = 0
	}
}

// Trim gives the kernel back the pages of the store's linear memories that the guest would
// read the same from fresh memory (zero pages, image pages it only read; see atl_store_trim in
// memory.c) and returns how many bytes of them were resident. The guest cannot tell, but its
// next touch of such a page faults it in again. 0 on engines without EngineConfig.CapMemories.
// Not during a call.
func (s *Store) Trim() int64 {
	if s.mem == nil {
		return 0
	}
	return int64(C.atl_store_trim(s.mem)) * int64(os.Getpagesize())
}

// Owner returns StoreConfig.Owner.
func (s *Store) Owner() any { return s.owner }

// SetEpochDeadline arms the deadline `ticks` (at least 1) epoch ticks from the store's next
// entry into the guest (a call, an instantiation or a resource drop), which sets it in the
// same cgo crossing instead of one of its own.
func (s *Store) SetEpochDeadline(ticks uint64) { s.arm = ticks }

// takeArm returns the deadline SetEpochDeadline asked for (0: none) and forgets it.
func (s *Store) takeArm() C.uint64_t {
	arm := s.arm
	s.arm = 0
	return C.uint64_t(arm)
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
	err = takeError(C.atl_resource_drop(s.mem, s.takeArm(), s.ctx, r))
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
		writerHandles.delete(h)
	}
	storeHandles.delete(s.self)
}

// storeOf finds the Go store of a C context (host function calls).
func storeOf(ctx *C.wasmtime_context_t) *Store {
	return storeHandles.value(uintptr(C.atl_context_handle(ctx)))
}
