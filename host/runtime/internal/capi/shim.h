// C glue for package capi. Declarations only: the Go files that use //export may not define C
// functions in their preambles, so definitions live in shim.c.
#ifndef ATELIER_CAPI_SHIM_H
#define ATELIER_CAPI_SHIM_H

#include <stddef.h>
#include <stdint.h>
#include <wasmtime.h>

// Defines instance `inst` holding `nres` host resource types named res_names[i], of host type
// res_types[i], whose destructor calls atlResourceDrop with res_envs[i], and `n` host functions
// named names[i]; each calls atlHostCall with envs[i] (the envs are cgo.Handles owned by the Go
// side). All items of one instance must be defined in one call: the linker refuses to define
// an instance name twice.
wasmtime_error_t *atl_linker_define_instance(wasmtime_component_linker_t *linker,
                                             const char *inst, size_t inst_len, size_t nres,
                                             char **res_names, size_t *res_name_lens,
                                             uint32_t *res_types, uintptr_t *res_envs, size_t n,
                                             char **names, size_t *name_lens,
                                             uintptr_t *envs);

// Routes the guest's stdout/stderr to atlWrite(handle, ...).
void atl_wasi_stdout(wasi_config_t *cfg, uintptr_t handle);
void atl_wasi_stderr(wasi_config_t *cfg, uintptr_t handle);

// Reads a store's data (the cgo.Handle given to atl_store_new) back from a context.
uintptr_t atl_context_handle(wasmtime_context_t *ctx);

// Lists of scalars (bool, integers, floats, char): the C API has one value per element, so
// these loops stand in for typed lists. `in` and `out` are arrays of the kind's C type (bool,
// int8_t ... uint64_t, float, double, uint32_t for char). Sets out[0..n) to the values of in.
void atl_vals_from_scalars(wasmtime_component_val_t *out, wasmtime_component_valkind_t kind,
                           const void *in, size_t n);
// Sets list to a new Wasmtime-owned list of the values of in, staged in scratch (n values).
void atl_vallist_from_scalars(wasmtime_component_vallist_t *list,
                              wasmtime_component_valkind_t kind, const void *in, size_t n,
                              wasmtime_component_val_t *scratch);
// Copies the values in[0..n) of the scalar kind to out. Returns n, or the index of the first
// value of another kind (out is then partly written).
size_t atl_vals_to_scalars(const wasmtime_component_val_t *in, size_t n,
                           wasmtime_component_valkind_t kind, void *out);

// Sets rec to a new Wasmtime-owned record of n entries, entry i named with a copy of names[i],
// each value the zero value (bool false, which Wasmtime can always delete).
void atl_valrecord_new(wasmtime_component_valrecord_t *rec, size_t n, const wasm_name_t *names);

// Host-defined resources, one crossing each way. Reads the host type and representation of r,
// which must be a host resource.
wasmtime_error_t *atl_resource_host_parts(wasmtime_context_t *ctx,
                                          const wasmtime_component_resource_any_t *r,
                                          uint32_t *type, uint32_t *rep);
// Sets *out to a new resource value (own or borrow by `owned`) of the host resource rep of
// host type `type`, for the store of ctx.
wasmtime_error_t *atl_resource_host_new(wasmtime_context_t *ctx, bool owned, uint32_t type,
                                        uint32_t rep, wasmtime_component_resource_any_t **out);

// memory.c: Atelier's memory creator.

struct atl_memory;

// The memory budget of one store, shared by the store and each of its memories (refs counts
// them): all its linear memories and its tables' reserve together stay within `cap`.
typedef struct atl_memcap {
  uint64_t cap;     // bytes the store's memories and tables may hold together; set by Go
  uint64_t used;    // bytes charged: the tables' reserve plus every memory's committed bytes
  uint32_t refused; // set when the budget refused a memory or a growth; cleared by the Go side
  uint32_t refs;
  char refusal[192]; // the latest refusal's message (NUL-terminated; valid while refused)
  struct atl_memory *mems; // the store's memories in use (memory.c); set by the creator only
} atl_memcap_t;

// A memory an instantiation is expected to create (dataseg.Memory): its limits as Wasmtime
// passes them to the memory creator, and its image (an index in atl_plan_t.images, or -1).
typedef struct atl_planned_memory {
  size_t min, max; // bytes
  int image;
} atl_planned_memory_t;

// A sealed memfd of `len` bytes (a multiple of the host page size) holding a memory's initial
// content.
typedef struct atl_image {
  int fd; // -1 until created
  size_t len;
} atl_image_t;

// A component's memory plan (dataseg.Layout): the memories each instantiation creates, in
// creation order, and their images. Immutable once filled; shared by concurrent
// instantiations and by the components compiled from the same source (refs counts its
// owners).
typedef struct atl_plan {
  uint32_t refs;
  size_t n;
  atl_planned_memory_t *mems;
  size_t nimages;
  atl_image_t *images;
} atl_plan_t;

// Allocates a plan for n memories and nimages images (to be filled by the caller), with one
// reference; NULL when out of memory.
atl_plan_t *atl_plan_new(size_t n, size_t nimages);
// Creates image i as a memfd of `size` bytes rounded up to host pages and maps it shared at
// *out for the caller to fill; 0 or an errno value.
int atl_image_begin(atl_plan_t *p, size_t i, size_t size, uint8_t **out);
// Unmaps image i's filled mapping and seals the memfd against any change; 0 or an errno value.
int atl_image_seal(atl_plan_t *p, size_t i, uint8_t *map);
// Adds a reference to the plan.
void atl_plan_retain(atl_plan_t *p);
// Drops a reference (p may be NULL); the last one closes the plan's memfds (memories mapped
// from them keep their mapping) and frees it.
void atl_plan_release(atl_plan_t *p);

// Installs the memory creator on an engine config and turns copy-on-write initialisation off.
// The creator keeps up to `keep` freed memories (scrubbed to zero) for reuse until the engine is
// deleted.
void atl_config_memory_creator(wasm_config_t *c, size_t keep);
// Memories in use by stores in the process.
int64_t atl_live_memories(void);
// Freed memories kept for reuse by the memory creators of the process's engines.
int64_t atl_pooled_memories(void);
// Memories (in use) whose start is mapped from an image of a memory plan.
int64_t atl_imaged_memories(void);
// Host pages of zeros given back to the kernel after instantiations (read-write pages that
// read as zero once the instance had started), in the whole process.
int64_t atl_trimmed_pages(void);

// Creates a store whose data is `handle` (a cgo.Handle). With `capped` (engines with the memory
// creator) it also creates the store's budget in *mem, with `reserve` bytes (its tables')
// charged already, else *mem is NULL. NULL when out of memory.
wasmtime_store_t *atl_store_new(wasm_engine_t *engine, uintptr_t handle, int capped, uint64_t cap,
                                uint64_t reserve, atl_memcap_t **mem);
// Gives the kernel back, for good (MADV_DONTNEED), the pages of the store's memories (mem, which
// may be NULL) that the guest would read the same from a fresh mapping: resident pages of
// anonymous memory that hold only zeros, pages of an image the guest only read (when
// /proc/self/pagemap says which), and pooled zero pages above the committed size. Returns the
// host pages given back. Not while the store runs, creates or frees memories.
int64_t atl_store_trim(atl_memcap_t *mem);
// Deletes the store, then drops its reference to mem (may be NULL).
void atl_store_delete(wasmtime_store_t *store, atl_memcap_t *mem);

// The Wasmtime entry points that may create memories, with `mem` (may be NULL) as the budget of
// the memories they create. Each first sets the store's epoch deadline `arm` ticks from now,
// unless arm is 0 (Store.SetEpochDeadline: no cgo crossing of its own). atl_instantiate follows
// `plan` (may be NULL): each memory created must be the plan's next one, gets its image, and
// every memory of the plan must be created, else the instantiation fails. atl_func_call also
// runs post-return when the call succeeded (the results are copies, so they outlive it): one
// crossing per call instead of two.
wasmtime_error_t *atl_instantiate(atl_memcap_t *mem, uint64_t arm, const atl_plan_t *plan,
                                  const wasmtime_component_linker_t *linker,
                                  wasmtime_context_t *ctx, const wasmtime_component_t *comp,
                                  wasmtime_component_instance_t *out);
wasmtime_error_t *atl_func_call(atl_memcap_t *mem, uint64_t arm,
                                const wasmtime_component_func_t *f, wasmtime_context_t *ctx,
                                const wasmtime_component_val_t *args, size_t nargs,
                                wasmtime_component_val_t *res, size_t nres);
wasmtime_error_t *atl_resource_drop(atl_memcap_t *mem, uint64_t arm, wasmtime_context_t *ctx,
                                    const wasmtime_component_resource_any_t *r);

// Makes every epoch deadline of the store call atlEpochDeadline(handle).
void atl_store_epoch_callback(wasmtime_store_t *store, uintptr_t handle);

// Copies the error's message into a malloc'd buffer (caller frees); the error is not deleted.
char *atl_error_message(const wasmtime_error_t *err, size_t *len);

// Fills func/module name (may be NULL) and offsets of frame i of a frame vector.
void atl_frame(const wasm_frame_vec_t *trace, size_t i, const wasm_name_t **func,
               const wasm_name_t **module, uint32_t *func_index, size_t *module_offset);

#endif
