#include <stdlib.h>
#include <string.h>
#include "shim.h"
#include "_cgo_export.h"

static wasmtime_error_t *atl_resource_dtor(void *env, wasmtime_context_t *ctx, uint32_t rep) {
  return atlResourceDrop((uintptr_t)env, ctx, rep);
}

wasmtime_error_t *atl_linker_define_instance(wasmtime_component_linker_t *linker,
                                             const char *inst, size_t inst_len, size_t nres,
                                             char **res_names, size_t *res_name_lens,
                                             uint32_t *res_types, uintptr_t *res_envs, size_t n,
                                             char **names, size_t *name_lens,
                                             uintptr_t *envs) {
  wasmtime_component_linker_instance_t *root = wasmtime_component_linker_root(linker);
  wasmtime_component_linker_instance_t *li = NULL;
  wasmtime_error_t *err =
      wasmtime_component_linker_instance_add_instance(root, inst, inst_len, &li);
  for (size_t i = 0; i < nres && err == NULL; i++) {
    wasmtime_component_resource_type_t *ty = wasmtime_component_resource_type_new_host(res_types[i]);
    err = wasmtime_component_linker_instance_add_resource(
        li, res_names[i], res_name_lens[i], ty, atl_resource_dtor, (void *)res_envs[i], NULL);
    wasmtime_component_resource_type_delete(ty);
  }
  for (size_t i = 0; i < n && err == NULL; i++) {
    err = wasmtime_component_linker_instance_add_func(
        li, names[i], name_lens[i], (wasmtime_component_func_callback_t)atlHostCall,
        (void *)envs[i], NULL);
  }
  if (li != NULL)
    wasmtime_component_linker_instance_delete(li);
  wasmtime_component_linker_instance_delete(root);
  return err;
}

static ptrdiff_t atl_write(void *env, const unsigned char *buf, size_t len) {
  return (ptrdiff_t)atlWrite((uintptr_t)env, (unsigned char *)buf, len);
}

void atl_wasi_stdout(wasi_config_t *cfg, uintptr_t handle) {
  wasi_config_set_stdout_custom(cfg, atl_write, (void *)handle, NULL);
}

void atl_wasi_stderr(wasi_config_t *cfg, uintptr_t handle) {
  wasi_config_set_stderr_custom(cfg, atl_write, (void *)handle, NULL);
}

uintptr_t atl_context_handle(wasmtime_context_t *ctx) {
  return (uintptr_t)wasmtime_context_get_data(ctx);
}

static wasmtime_error_t *atl_epoch(wasmtime_context_t *ctx, void *data, uint64_t *delta,
                                   wasmtime_update_deadline_kind_t *kind) {
  *kind = WASMTIME_UPDATE_DEADLINE_CONTINUE;
  return atlEpochDeadline((uintptr_t)data, delta);
}

void atl_store_epoch_callback(wasmtime_store_t *store, uintptr_t handle) {
  wasmtime_store_epoch_deadline_callback(store, atl_epoch, (void *)handle, NULL);
}

char *atl_error_message(const wasmtime_error_t *err, size_t *len) {
  wasm_name_t msg;
  wasmtime_error_message(err, &msg);
  char *out = malloc(msg.size + 1);
  memcpy(out, msg.data, msg.size);
  out[msg.size] = 0;
  *len = msg.size;
  wasm_byte_vec_delete(&msg);
  return out;
}

void atl_frame(const wasm_frame_vec_t *trace, size_t i, const wasm_name_t **func,
               const wasm_name_t **module, uint32_t *func_index, size_t *module_offset) {
  const wasm_frame_t *f = trace->data[i];
  *func = wasmtime_frame_func_name(f);
  *module = wasmtime_frame_module_name(f);
  *func_index = wasm_frame_func_index(f);
  *module_offset = wasm_frame_module_offset(f);
}

// ATL_SCALARS expands X(kind, union field, C element type) once per scalar kind.
#define ATL_SCALARS(X)                          \
  X(WASMTIME_COMPONENT_BOOL, boolean, bool)     \
  X(WASMTIME_COMPONENT_S8, s8, int8_t)          \
  X(WASMTIME_COMPONENT_U8, u8, uint8_t)         \
  X(WASMTIME_COMPONENT_S16, s16, int16_t)       \
  X(WASMTIME_COMPONENT_U16, u16, uint16_t)      \
  X(WASMTIME_COMPONENT_S32, s32, int32_t)       \
  X(WASMTIME_COMPONENT_U32, u32, uint32_t)      \
  X(WASMTIME_COMPONENT_S64, s64, int64_t)       \
  X(WASMTIME_COMPONENT_U64, u64, uint64_t)      \
  X(WASMTIME_COMPONENT_F32, f32, float)         \
  X(WASMTIME_COMPONENT_F64, f64, double)        \
  X(WASMTIME_COMPONENT_CHAR, character, uint32_t)

void atl_vals_from_scalars(wasmtime_component_val_t *out, wasmtime_component_valkind_t kind,
                           const void *in, size_t n) {
  switch (kind) {
#define FROM(K, F, T)                  \
  case K:                              \
    for (size_t i = 0; i < n; i++) {   \
      out[i].kind = K;                 \
      out[i].of.F = ((const T *)in)[i]; \
    }                                  \
    break;
    ATL_SCALARS(FROM)
#undef FROM
  }
}

void atl_vallist_from_scalars(wasmtime_component_vallist_t *list,
                              wasmtime_component_valkind_t kind, const void *in, size_t n,
                              wasmtime_component_val_t *scratch) {
  atl_vals_from_scalars(scratch, kind, in, n);
  wasmtime_component_vallist_new(list, n, scratch);
}

size_t atl_vals_to_scalars(const wasmtime_component_val_t *in, size_t n,
                           wasmtime_component_valkind_t kind, void *out) {
  switch (kind) {
#define TO(K, F, T)                    \
  case K:                              \
    for (size_t i = 0; i < n; i++) {   \
      if (in[i].kind != K)             \
        return i;                      \
      ((T *)out)[i] = in[i].of.F;      \
    }                                  \
    return n;
    ATL_SCALARS(TO)
#undef TO
  }
  return 0;
}

void atl_valrecord_new(wasmtime_component_valrecord_t *rec, size_t n, const wasm_name_t *names) {
  wasmtime_component_valrecord_new_uninit(rec, n);
  for (size_t i = 0; i < n; i++) {
    wasmtime_component_valrecord_entry_t *e = &rec->data[i];
    memset(&e->val, 0, sizeof e->val);
    wasm_byte_vec_new(&e->name, names[i].size, names[i].data);
  }
}

wasmtime_error_t *atl_resource_host_parts(wasmtime_context_t *ctx,
                                          const wasmtime_component_resource_any_t *r,
                                          uint32_t *type, uint32_t *rep) {
  wasmtime_component_resource_host_t *hr = NULL;
  wasmtime_error_t *err = wasmtime_component_resource_any_to_host(ctx, r, &hr);
  if (err != NULL)
    return err;
  *type = wasmtime_component_resource_host_type(hr);
  *rep = wasmtime_component_resource_host_rep(hr);
  wasmtime_component_resource_host_delete(hr);
  return NULL;
}

wasmtime_error_t *atl_resource_host_new(wasmtime_context_t *ctx, bool owned, uint32_t type,
                                        uint32_t rep, wasmtime_component_resource_any_t **out) {
  wasmtime_component_resource_host_t *hr = wasmtime_component_resource_host_new(owned, rep, type);
  wasmtime_error_t *err = wasmtime_component_resource_host_to_any(ctx, hr, out);
  wasmtime_component_resource_host_delete(hr);
  return err;
}
