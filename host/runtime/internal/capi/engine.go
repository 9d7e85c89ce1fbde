package capi

// #include <stdlib.h>
// #include "shim.h"
import "C"

import (
	"runtime"
	"sync/atomic"
	"unsafe"
)

// EngineConfig selects the engine-wide Wasmtime settings.
type EngineConfig struct {
	// MaxWasmStack is the guest stack limit in bytes (0 keeps Wasmtime's default).
	MaxWasmStack uint
	// Fuel turns on fuel metering (every store then needs fuel to run).
	Fuel bool
	// Epoch turns on epoch interruption (deadlines through IncrementEpoch).
	Epoch bool
	// ParallelCompilation lets Cranelift compile functions on several threads.
	ParallelCompilation bool
	// Pooling, when non-nil, selects the pooling instance allocator.
	Pooling *PoolingConfig
	// CapMemories installs Atelier's memory creator (memory.c), which enforces each store's
	// StoreConfig.MemoryLimit itself so that Store.MemoryRefused can tell when the budget refused
	// memory. It turns Wasmtime's copy-on-write memory initialisation off: data segments are
	// copied in, except the images of a component's memory plan (Component.SetMemoryPlan),
	// which the creator maps copy-on-write itself.
	// Ignored with Pooling: the pooling allocator takes memories from its pool, never from a
	// memory creator.
	CapMemories bool
	// KeepMemories is how many freed linear memories the memory creator keeps for reuse (0:
	// none), engine-wide. A kept memory is scrubbed to zero when it is freed and keeps up to
	// 4 MiB of its pages populated, so that the next instantiation does not fault them in
	// again; kept memories are unmapped when the engine is closed. Only with CapMemories.
	KeepMemories int
}

// PoolingConfig sizes the pooling instance allocator: slots are reserved up front and reused,
// which makes instantiation cheaper at the cost of reserved address space.
type PoolingConfig struct {
	// TotalComponentInstances is the number of component instances alive at once.
	TotalComponentInstances uint32
	// TotalCoreInstances, TotalMemories and TotalTables bound the core parts of all of them.
	TotalCoreInstances, TotalMemories, TotalTables uint32
	// MaxMemorySize is the largest linear memory in bytes any instance may reach.
	MaxMemorySize uint
}

// Engine is a Wasmtime engine: compiled code and configuration shared by every store.
// It is safe for concurrent use.
type Engine struct {
	ptr         *C.wasm_engine_t
	capMemories bool // the memory creator is installed
	closed      atomic.Bool
}

// NewEngine creates an engine with the component model enabled.
func NewEngine(cfg EngineConfig) *Engine {
	c := C.wasm_config_new()
	C.wasmtime_config_wasm_component_model_set(c, true)
	C.wasmtime_config_consume_fuel_set(c, C.bool(cfg.Fuel))
	C.wasmtime_config_epoch_interruption_set(c, C.bool(cfg.Epoch))
	C.wasmtime_config_parallel_compilation_set(c, C.bool(cfg.ParallelCompilation))
	if cfg.MaxWasmStack > 0 {
		C.wasmtime_config_max_wasm_stack_set(c, C.size_t(cfg.MaxWasmStack))
	}
	if p := cfg.Pooling; p != nil {
		pc := C.wasmtime_pooling_allocation_config_new()
		C.wasmtime_pooling_allocation_config_total_component_instances_set(pc, C.uint32_t(p.TotalComponentInstances))
		C.wasmtime_pooling_allocation_config_total_core_instances_set(pc, C.uint32_t(p.TotalCoreInstances))
		C.wasmtime_pooling_allocation_config_total_memories_set(pc, C.uint32_t(p.TotalMemories))
		C.wasmtime_pooling_allocation_config_total_tables_set(pc, C.uint32_t(p.TotalTables))
		C.wasmtime_pooling_allocation_config_total_stacks_set(pc, C.uint32_t(p.TotalComponentInstances))
		C.wasmtime_pooling_allocation_config_max_memory_size_set(pc, C.size_t(p.MaxMemorySize))
		C.wasmtime_pooling_allocation_strategy_set(c, pc)
		C.wasmtime_pooling_allocation_config_delete(pc)
	}
	capMemories := cfg.CapMemories && cfg.Pooling == nil
	if capMemories {
		C.atl_config_memory_creator(c, C.size_t(max(cfg.KeepMemories, 0)))
	}
	return &Engine{ptr: C.wasm_engine_new_with_config(c), capMemories: capMemories} // takes ownership of c
}

// IncrementEpoch advances the engine's epoch by one tick. Safe from any goroutine.
func (e *Engine) IncrementEpoch() { C.wasmtime_engine_increment_epoch(e.ptr) }

// Close deletes the engine. Every object created from it must be closed first.
func (e *Engine) Close() {
	if e.closed.CompareAndSwap(false, true) {
		C.wasm_engine_delete(e.ptr)
	}
}

// Compile compiles a component from its binary or WAT text.
func (e *Engine) Compile(src []byte) (*Component, error) {
	var out *C.wasmtime_component_t
	err := C.wasmtime_component_new(e.ptr, bytesPtr(src), C.size_t(len(src)), &out)
	runtime.KeepAlive(src)
	if err != nil {
		return nil, takeError(err)
	}
	return newComponent(e, out), nil
}

// Deserialize loads a component from an artifact made by Component.Serialize with a compatible
// engine. The bytes must be trusted: Wasmtime checks its header, not the code.
func (e *Engine) Deserialize(artifact []byte) (*Component, error) {
	var out *C.wasmtime_component_t
	err := C.wasmtime_component_deserialize(e.ptr, bytesPtr(artifact), C.size_t(len(artifact)), &out)
	runtime.KeepAlive(artifact)
	if err != nil {
		return nil, takeError(err)
	}
	return newComponent(e, out), nil
}

// DeserializeFile loads a component from an artifact file made by Component.Serialize with a
// compatible engine. Wasmtime maps the file instead of copying it, so the file must not be
// changed in place while the component lives (replacing it by rename is safe). The file must
// be trusted, as for Deserialize.
func (e *Engine) DeserializeFile(path string) (*Component, error) {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var out *C.wasmtime_component_t
	if err := C.wasmtime_component_deserialize_file(e.ptr, cpath, &out); err != nil {
		return nil, takeError(err)
	}
	return newComponent(e, out), nil
}

func bytesPtr(b []byte) *C.uint8_t {
	if len(b) == 0 {
		return nil
	}
	return (*C.uint8_t)(unsafe.Pointer(&b[0]))
}
