// Atelier's linear memories: an engine-wide Wasmtime memory creator that enforces each store's
// memory cap itself, so that a refused growth is recorded where the host can read it (the C
// API's store limiter refuses silently). host/runtime/RATIONALE.md ("Memory cap") explains the
// design; store.go (MemoryRefused) and the wrappers' callers are the Go side.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "shim.h"

// The cap of the store whose instantiation or call runs on this thread (NULL: none). Set and
// restored by the atl_* wrappers below around every entry into Wasmtime that may create
// memories; Wasmtime creates memories synchronously on the calling thread.
static _Thread_local atl_memcap_t *atl_current;

// The largest reservation made when Wasmtime does not ask for one (every 32-bit memory fits).
#define ATL_MAX_FREE_RESERVATION ((size_t)1 << 32)

// Memories alive in the process, for leak checks.
static int64_t atl_live;

// One linear memory: a PROT_NONE reservation [pre-guard | capacity | guard] of which the first
// `committed` bytes after the pre-guard are read-write.
typedef struct atl_memory {
  atl_memcap_t *cap;
  uint8_t *mapping;
  size_t mapping_len;
  uint8_t *base;
  size_t size;      // bytes the guest may access
  size_t committed; // read-write bytes from base (size rounded up to host pages)
  size_t capacity;  // growth up to here never moves base
} atl_memory_t;

// Rounds n up to a multiple of the host page size; 0 when that overflows.
static size_t atl_round_page(size_t n) {
  size_t p = (size_t)sysconf(_SC_PAGESIZE);
  if (n > SIZE_MAX - (p - 1))
    return 0;
  return (n + p - 1) & ~(p - 1);
}

static wasmtime_error_t *atl_errorf(const char *fmt, size_t a, size_t b) {
  char msg[160];
  snprintf(msg, sizeof msg, fmt, a, b);
  return wasmtime_error_new(msg);
}

static atl_memcap_t *atl_memcap_new(uint64_t cap) {
  atl_memcap_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->cap = cap;
  c->refs = 1;
  return c;
}

static void atl_memcap_release(atl_memcap_t *c) {
  if (c != NULL && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
    free(c);
}

int64_t atl_live_memories(void) { return __atomic_load_n(&atl_live, __ATOMIC_RELAXED); }

static uint8_t *atl_get_memory(void *env, size_t *byte_size, size_t *byte_capacity) {
  atl_memory_t *m = env;
  *byte_size = m->size;
  *byte_capacity = m->capacity;
  return m->base;
}

// Makes [base, base+bytes) read-write, bytes rounded up to host pages.
static wasmtime_error_t *atl_commit(atl_memory_t *m, size_t bytes) {
  size_t want = atl_round_page(bytes);
  if (want == 0 && bytes != 0)
    return wasmtime_error_new("linear memory size overflows");
  if (want <= m->committed)
    return NULL;
  if (mprotect(m->base + m->committed, want - m->committed, PROT_READ | PROT_WRITE) != 0)
    return atl_errorf("make %zu bytes of linear memory accessible: errno %zu", want - m->committed,
                      (size_t)errno);
  m->committed = want;
  return NULL;
}

static wasmtime_error_t *atl_grow_memory(void *env, size_t new_size) {
  atl_memory_t *m = env;
  if (new_size <= m->size)
    return NULL;
  if (new_size > m->cap->cap) {
    __atomic_store_n(&m->cap->refused, 1, __ATOMIC_RELAXED);
    return atl_errorf("growing linear memory to %zu bytes exceeds the memory cap of %zu bytes",
                      new_size, (size_t)m->cap->cap);
  }
  if (new_size > m->capacity)
    return atl_errorf("growing linear memory to %zu bytes exceeds its reservation of %zu bytes",
                      new_size, m->capacity);
  wasmtime_error_t *err = atl_commit(m, new_size);
  if (err == NULL)
    m->size = new_size;
  return err;
}

static void atl_free_memory(void *env) {
  atl_memory_t *m = env;
  munmap(m->mapping, m->mapping_len);
  atl_memcap_release(m->cap);
  free(m);
  __atomic_sub_fetch(&atl_live, 1, __ATOMIC_RELAXED);
}

// Wasmtime's contract (config.h, MemoryCreator::new_memory): `reserved` bytes (when non-zero)
// plus `guard` bytes after them must be reserved so that compiled code can elide bounds checks,
// the base never moves, and the memory starts zeroed. A guard of the same size also precedes
// the memory, as Wasmtime's own memories have.
static wasmtime_error_t *atl_new_memory(void *env, const wasm_memorytype_t *ty, size_t minimum,
                                        size_t maximum, size_t reserved, size_t guard,
                                        wasmtime_linear_memory_t *ret) {
  (void)env;
  (void)ty;
  atl_memcap_t *cap = atl_current;
  if (cap == NULL)
    return wasmtime_error_new("linear memory requested outside an Atelier store call");
  if (minimum > cap->cap) {
    __atomic_store_n(&cap->refused, 1, __ATOMIC_RELAXED);
    return atl_errorf("linear memory minimum of %zu bytes exceeds the memory cap of %zu bytes",
                      minimum, (size_t)cap->cap);
  }
  size_t capacity = reserved;
  if (capacity == 0) { // Wasmtime leaves the size to us: what may ever be used, up to 4 GiB
    capacity = maximum < cap->cap ? maximum : (size_t)cap->cap;
    if (capacity > ATL_MAX_FREE_RESERVATION)
      capacity = ATL_MAX_FREE_RESERVATION;
  }
  capacity = atl_round_page(capacity);
  if (capacity < minimum)
    return atl_errorf("linear memory minimum of %zu bytes exceeds its reservation of %zu bytes",
                      minimum, capacity);
  size_t len = guard + capacity;
  if (len < capacity || len + guard < len)
    return wasmtime_error_new("linear memory reservation overflows");
  len += guard;

  atl_memory_t *m = calloc(1, sizeof *m);
  if (m == NULL)
    return wasmtime_error_new("out of host memory for a linear memory");
  void *p = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    free(m);
    return atl_errorf("reserve %zu bytes for a linear memory: errno %zu", len, (size_t)errno);
  }
  m->mapping = p;
  m->mapping_len = len;
  m->base = (uint8_t *)p + guard;
  m->capacity = capacity;
  m->cap = cap;
  wasmtime_error_t *err = atl_commit(m, minimum);
  if (err != NULL) {
    munmap(p, len);
    free(m);
    return err;
  }
  m->size = minimum;
  __atomic_add_fetch(&cap->refs, 1, __ATOMIC_ACQ_REL);
  __atomic_add_fetch(&atl_live, 1, __ATOMIC_RELAXED);
  ret->env = m;
  ret->get_memory = atl_get_memory;
  ret->grow_memory = atl_grow_memory;
  ret->finalizer = atl_free_memory;
  return NULL;
}

void atl_config_memory_creator(wasm_config_t *c) {
  wasmtime_memory_creator_t creator = {NULL, atl_new_memory, NULL};
  wasmtime_config_host_memory_creator_set(c, &creator);
  // Copy-on-write initialisation maps a module's data image over Wasmtime's own mmap memories
  // and cannot work on a custom memory: data segments are copied in instead.
  wasmtime_config_memory_init_cow_set(c, false);
}

wasmtime_store_t *atl_store_new(wasm_engine_t *engine, uintptr_t handle, int capped, uint64_t cap,
                                atl_memcap_t **mem) {
  *mem = NULL;
  if (capped) {
    *mem = atl_memcap_new(cap);
    if (*mem == NULL)
      return NULL;
  }
  return wasmtime_store_new(engine, (void *)handle, NULL);
}

void atl_store_delete(wasmtime_store_t *store, atl_memcap_t *mem) {
  wasmtime_store_delete(store); // finalizes every memory of the store
  atl_memcap_release(mem);
}

wasmtime_error_t *atl_instantiate(atl_memcap_t *mem, const wasmtime_component_linker_t *linker,
                                  wasmtime_context_t *ctx, const wasmtime_component_t *comp,
                                  wasmtime_component_instance_t *out) {
  atl_memcap_t *prev = atl_current;
  atl_current = mem;
  wasmtime_error_t *err = wasmtime_component_linker_instantiate(linker, ctx, comp, out);
  atl_current = prev;
  return err;
}

wasmtime_error_t *atl_func_call(atl_memcap_t *mem, const wasmtime_component_func_t *f,
                                wasmtime_context_t *ctx, const wasmtime_component_val_t *args,
                                size_t nargs, wasmtime_component_val_t *res, size_t nres) {
  atl_memcap_t *prev = atl_current;
  atl_current = mem;
  wasmtime_error_t *err = wasmtime_component_func_call(f, ctx, args, nargs, res, nres);
  atl_current = prev;
  return err;
}

wasmtime_error_t *atl_func_post_return(atl_memcap_t *mem, const wasmtime_component_func_t *f,
                                       wasmtime_context_t *ctx) {
  atl_memcap_t *prev = atl_current;
  atl_current = mem;
  wasmtime_error_t *err = wasmtime_component_func_post_return(f, ctx);
  atl_current = prev;
  return err;
}

wasmtime_error_t *atl_resource_drop(atl_memcap_t *mem, wasmtime_context_t *ctx,
                                    const wasmtime_component_resource_any_t *r) {
  atl_memcap_t *prev = atl_current;
  atl_current = mem;
  wasmtime_error_t *err = wasmtime_component_resource_any_drop(ctx, r);
  atl_current = prev;
  return err;
}
