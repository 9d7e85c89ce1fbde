// C glue for package capi. Declarations only: the Go files that use //export may not define C
// functions in their preambles, so definitions live in shim.c.
#ifndef ATELIER_CAPI_SHIM_H
#define ATELIER_CAPI_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <wasmtime.h>

// Defines instance `inst` holding `n` host functions named names[i]; each calls atlHostCall
// with envs[i] (a cgo.Handle owned by the Go side). All functions of one instance must be
// defined in one call: the linker refuses to define an instance name twice.
wasmtime_error_t *atl_linker_define_instance(wasmtime_component_linker_t *linker,
                                             const char *inst, size_t inst_len, size_t n,
                                             char **names, size_t *name_lens,
                                             uintptr_t *envs);

// Routes the guest's stdout/stderr to atlWrite(handle, ...).
void atl_wasi_stdout(wasi_config_t *cfg, uintptr_t handle);
void atl_wasi_stderr(wasi_config_t *cfg, uintptr_t handle);

// Creates a store whose data is `handle` (a cgo.Handle), and reads it back from a context.
wasmtime_store_t *atl_store_new(wasm_engine_t *engine, uintptr_t handle);
uintptr_t atl_context_handle(wasmtime_context_t *ctx);

// Makes every epoch deadline of the store call atlEpochDeadline(handle).
void atl_store_epoch_callback(wasmtime_store_t *store, uintptr_t handle);

// Copies the error's message into a malloc'd buffer (caller frees); the error is not deleted.
char *atl_error_message(const wasmtime_error_t *err, size_t *len);

// Fills func/module name (may be NULL) and offsets of frame i of a frame vector.
void atl_frame(const wasm_frame_vec_t *trace, size_t i, const wasm_name_t **func,
               const wasm_name_t **module, uint32_t *func_index, size_t *module_offset);

#endif
