/* engine.c - the Atelier JS engine: QuickJS behind the canonical ABI of wit/js/js.wit.
 *
 * Built twice by ../build.sh: with -DENGINE_SNIPPET for the world atelier:js/snippet (export
 * `run`) and with -DENGINE_GADGET for atelier:js/gadget (exports `load` and `call`). The
 * canonical ABI is written by hand: every string and list the host passes in was allocated by
 * cabi_realloc (malloc) and is freed here; every string the host returns from an import is
 * freed here too; the export results are freed by the cabi_post_* exports.
 *
 * The module imports no WASI: the few WASI functions that wasi-libc's code pulls in are defined
 * below (a clock that shows the `now` of the current call, and output that goes nowhere, since
 * nothing here prints). JavaScript logic lives in glue.js, embedded as glue_js[].
 *
 * The build runs `wizer.initialize` once and snapshots the memory (Wizer): every instance starts
 * with the runtime, the context and glue.js ready. What must differ per instance or per call
 * is set by the exports: the limits, the stack top, the clock and Math.random's seed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wasi/api.h>

#include "quickjs.h"
#include "glue.h"

#if defined(ENGINE_SNIPPET) == defined(ENGINE_GADGET)
#error "define exactly one of ENGINE_SNIPPET and ENGINE_GADGET"
#endif
#ifndef ENGINE_STACK
#error "ENGINE_STACK must be the linked wasm stack size in bytes"
#endif

#define IMPORT(m, n) __attribute__((import_module(m), import_name(n)))
#define EXPORT(n) __attribute__((export_name(n)))

/* ---- canonical ABI layouts (wasm32: pointers and size_t are 4 bytes) ---- */

typedef struct { char *ptr; size_t len; } str_t;
typedef struct { str_t *ptr; size_t len; } strs_t;
/* result<string, string> and result<list<string>, string> */
typedef struct {
    uint8_t is_err;
    union { str_t s; strs_t list; } u;
} ret_t;

IMPORT("atelier:host/log@0.1.0", "write")
void imp_log(int32_t level, const char *msg, size_t len);
IMPORT("atelier:host/bindings@0.1.0", "call")
void imp_call(const char *name, size_t name_len, const char *method, size_t method_len,
              const char *args, size_t args_len, ret_t *ret);

#ifdef ENGINE_GADGET
typedef struct { uint8_t *ptr; size_t len; } bytes_t;
typedef struct { str_t key; bytes_t value; } entry_t;
typedef struct {
    uint8_t tag; /* 0 set, 1 delete */
    union { entry_t set; str_t del; } u;
} op_t;
/* result<option<list<u8>>, error>, result<_, error>, result<list<entry>, error> */
typedef struct {
    uint8_t is_err;
    union {
        struct { uint8_t some; bytes_t value; } opt;
        struct { entry_t *ptr; size_t len; } list;
        struct { uint8_t kind; str_t msg; } err;
    } u;
} kv_ret_t;

IMPORT("atelier:host/kv@0.1.0", "get")
void imp_kv_get(const char *key, size_t key_len, kv_ret_t *ret);
IMPORT("atelier:host/kv@0.1.0", "set")
void imp_kv_set(const char *key, size_t key_len, const uint8_t *val, size_t val_len, kv_ret_t *ret);
IMPORT("atelier:host/kv@0.1.0", "delete")
void imp_kv_delete(const char *key, size_t key_len, kv_ret_t *ret);
IMPORT("atelier:host/kv@0.1.0", "list")
void imp_kv_list(const char *prefix, size_t prefix_len, uint32_t limit, kv_ret_t *ret);
IMPORT("atelier:host/kv@0.1.0", "batch")
void imp_kv_batch(const op_t *ops, size_t n, kv_ret_t *ret);
IMPORT("atelier:host/events@0.1.0", "publish")
void imp_publish(const char *topic, size_t topic_len, const char *payload, size_t payload_len, ret_t *ret);
#endif

EXPORT("cabi_realloc")
void *cabi_realloc(void *old, size_t old_size, size_t align, size_t new_size) {
    (void)old_size;
    (void)align; /* malloc aligns to 16, more than any type here needs */
    void *p = realloc(old, new_size ? new_size : 1);
    if (!p) __builtin_trap();
    return p;
}

/* ---- the WASI functions wasi-libc refers to ---- */

static uint64_t now_ns; /* the clock during the current call */

__wasi_errno_t __wasi_clock_time_get(__wasi_clockid_t id, __wasi_timestamp_t precision, __wasi_timestamp_t *out) {
    (void)id;
    (void)precision;
    *out = now_ns;
    return __WASI_ERRNO_SUCCESS;
}
__wasi_errno_t __wasi_fd_write(__wasi_fd_t fd, const __wasi_ciovec_t *iovs, size_t n, __wasi_size_t *written) {
    (void)fd;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) total += iovs[i].buf_len;
    *written = (__wasi_size_t)total;
    return __WASI_ERRNO_SUCCESS;
}
__wasi_errno_t __wasi_fd_close(__wasi_fd_t fd) {
    (void)fd;
    return __WASI_ERRNO_SUCCESS;
}
__wasi_errno_t __wasi_fd_seek(__wasi_fd_t fd, __wasi_filedelta_t off, __wasi_whence_t whence, __wasi_filesize_t *pos) {
    (void)fd;
    (void)off;
    (void)whence;
    (void)pos;
    return __WASI_ERRNO_SPIPE;
}
__wasi_errno_t __wasi_fd_fdstat_get(__wasi_fd_t fd, __wasi_fdstat_t *st) {
    (void)fd;
    memset(st, 0, sizeof *st);
    st->fs_filetype = __WASI_FILETYPE_CHARACTER_DEVICE;
    return __WASI_ERRNO_SUCCESS;
}

/* ---- engine state ---- */

static JSRuntime *rt;
static JSContext *ctx;
static JSValue glue; /* the object glue.js returns */
static ret_t ret_area;

/* cstr converts a JS value to UTF-8 (freed with JS_FreeCString). QuickJS keeps lone
 * surrogates as 3-byte sequences (ED A0..BF xx), which are not UTF-8 and would make the host
 * refuse the string: they become U+FFFD (EF BF BD), which has the same length. */
static const char *cstr(JSValueConst v, size_t *len) {
    const char *s = JS_ToCStringLen(ctx, len, v);
    if (!s) return NULL;
    for (size_t i = 0; i + 2 < *len; i++) {
        if ((uint8_t)s[i] == 0xED && (uint8_t)s[i + 1] >= 0xA0) {
            char *w = (char *)s; /* a fresh copy: only ASCII strings are returned in place */
            w[i] = (char)0xEF, w[i + 1] = (char)0xBF, w[i + 2] = (char)0xBD;
            i += 2;
        }
    }
    return s;
}

static char *dup_bytes(const char *s, size_t n) {
    char *p = malloc(n ? n : 1);
    if (!p) __builtin_trap();
    memcpy(p, s, n);
    return p;
}

static ret_t *ret_ok(const char *s, size_t n) {
    ret_area.is_err = 0;
    ret_area.u.s = (str_t){dup_bytes(s, n), n};
    return &ret_area;
}

static ret_t *ret_err(const char *s, size_t n) {
    ret_area.is_err = 1;
    ret_area.u.s = (str_t){dup_bytes(s, n), n};
    return &ret_area;
}

#define RET_ERR_LIT(s) ret_err(s, sizeof(s) - 1)

/* call_glue calls glue[name](args...). */
static JSValue call_glue(const char *name, int argc, JSValueConst *argv) {
    JSValue f = JS_GetPropertyStr(ctx, glue, name);
    JSValue r = JS_Call(ctx, f, JS_UNDEFINED, argc, argv);
    JS_FreeValue(ctx, f);
    return r;
}

/* ret_exception reports the pending exception as the JSON of {name, message, stack}. */
static ret_t *ret_exception(JSValue e) {
    JSValue j = call_glue("error", 1, (JSValueConst *)&e);
    JS_FreeValue(ctx, e);
    if (JS_IsException(j)) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return RET_ERR_LIT("{\"name\":\"InternalError\",\"message\":\"out of memory while reporting an error\",\"stack\":\"\"}");
    }
    size_t n;
    const char *s = cstr(j, &n);
    JS_FreeValue(ctx, j);
    if (!s) {
        JS_FreeValue(ctx, JS_GetException(ctx));
        return RET_ERR_LIT("{\"name\":\"InternalError\",\"message\":\"out of memory while reporting an error\",\"stack\":\"\"}");
    }
    ret_t *r = ret_err(s, n);
    JS_FreeCString(ctx, s);
    return r;
}

/* ret_json reports value v (consumed) as its JSON text. */
static ret_t *ret_json(JSValue v) {
    JSValue j = call_glue("json", 1, (JSValueConst *)&v);
    JS_FreeValue(ctx, v);
    if (JS_IsException(j)) return ret_exception(JS_GetException(ctx));
    size_t n;
    const char *s = cstr(j, &n);
    JS_FreeValue(ctx, j);
    if (!s) return ret_exception(JS_GetException(ctx));
    ret_t *r = ret_ok(s, n);
    JS_FreeCString(ctx, s);
    return r;
}

/* settle runs the job queue and resolves v (consumed): 0 with *out its value (a promise's
 * result), or 1 with *out the thrown value or the rejection reason. With early, it stops
 * running jobs as soon as v has settled, leaving the jobs of stray promises unrun. */
static int settle(JSValue v, JSValue *out, int early) {
    if (JS_IsException(v)) {
        *out = JS_GetException(ctx);
        return 1;
    }
    for (;;) {
        if (early && JS_PromiseState(ctx, v) != JS_PROMISE_PENDING) break; /* also: not a promise */
        JSContext *c;
        int r = JS_ExecutePendingJob(rt, &c);
        if (r == 0) break;
        if (r < 0) {
            JS_FreeValue(ctx, v);
            *out = JS_GetException(ctx);
            return 1;
        }
    }
    switch (JS_PromiseState(ctx, v)) {
    case JS_PROMISE_PENDING:
        JS_FreeValue(ctx, v);
        JS_ThrowInternalError(ctx, "the promise never settled: it waits for something that cannot happen in this sandbox");
        *out = JS_GetException(ctx);
        return 1;
    case JS_PROMISE_REJECTED:
        *out = JS_PromiseResult(ctx, v);
        JS_FreeValue(ctx, v);
        return 1;
    case JS_PROMISE_FULFILLED:
        *out = JS_PromiseResult(ctx, v);
        JS_FreeValue(ctx, v);
        return 0;
    default: /* not a promise */
        *out = v;
        return 0;
    }
}

/* throw_host throws an Error whose message is prefix + the host's message (freed here). */
static JSValue throw_host(const char *prefix, str_t msg) {
    JSValue e = JS_NewError(ctx);
    size_t pn = strlen(prefix);
    char *m = malloc(pn + msg.len + 1);
    if (!m) __builtin_trap();
    memcpy(m, prefix, pn);
    memcpy(m + pn, msg.ptr, msg.len);
    m[pn + msg.len] = 0;
    free(msg.ptr);
    JS_SetPropertyStr(ctx, e, "message", JS_NewStringLen(ctx, m, pn + msg.len));
    free(m);
    return JS_Throw(ctx, e);
}

/* ---- native functions handed to glue.js ---- */

static JSValue nat_log(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    int32_t level;
    if (JS_ToInt32(c, &level, argv[0])) return JS_EXCEPTION;
    size_t n;
    const char *s = cstr(argv[1], &n);
    if (!s) return JS_EXCEPTION;
    imp_log(level & 3, s, n);
    JS_FreeCString(c, s);
    return JS_UNDEFINED;
}

/* nat_call(name, method, argsJSON) -> resultJSON, or throws the host's error. */
static JSValue nat_call(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    size_t nn, mn, an;
    const char *name = cstr(argv[0], &nn);
    const char *method = name ? cstr(argv[1], &mn) : NULL;
    const char *args = method ? cstr(argv[2], &an) : NULL;
    if (args) {
        ret_t r;
        imp_call(name, nn, method, mn, args, an, &r);
        JS_FreeCString(c, args);
        JS_FreeCString(c, method);
        JS_FreeCString(c, name);
        if (r.is_err) return throw_host("", r.u.s);
        JSValue v = JS_NewStringLen(c, r.u.s.ptr, r.u.s.len);
        free(r.u.s.ptr);
        return v;
    }
    if (method) JS_FreeCString(c, method);
    if (name) JS_FreeCString(c, name);
    return JS_EXCEPTION;
}

#ifdef ENGINE_GADGET
static const char *const kv_kinds[] = {"invalid key: ", "quota exceeded: ", "storage failed: "};

static JSValue kv_throw(kv_ret_t *r) {
    return throw_host(kv_kinds[r->u.err.kind < 3 ? r->u.err.kind : 2], r->u.err.msg);
}

static JSValue nat_kv_get(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    size_t n;
    const char *k = cstr(argv[0], &n);
    if (!k) return JS_EXCEPTION;
    kv_ret_t r;
    imp_kv_get(k, n, &r);
    JS_FreeCString(c, k);
    if (r.is_err) return kv_throw(&r);
    if (!r.u.opt.some) return JS_UNDEFINED;
    JSValue v = JS_NewStringLen(c, (const char *)r.u.opt.value.ptr, r.u.opt.value.len);
    free(r.u.opt.value.ptr);
    return v;
}

static JSValue nat_kv_set(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    size_t kn, vn;
    const char *k = cstr(argv[0], &kn);
    if (!k) return JS_EXCEPTION;
    const char *v = cstr(argv[1], &vn);
    if (!v) {
        JS_FreeCString(c, k);
        return JS_EXCEPTION;
    }
    kv_ret_t r;
    imp_kv_set(k, kn, (const uint8_t *)v, vn, &r);
    JS_FreeCString(c, v);
    JS_FreeCString(c, k);
    return r.is_err ? kv_throw(&r) : JS_UNDEFINED;
}

static JSValue nat_kv_delete(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    size_t n;
    const char *k = cstr(argv[0], &n);
    if (!k) return JS_EXCEPTION;
    kv_ret_t r;
    imp_kv_delete(k, n, &r);
    JS_FreeCString(c, k);
    return r.is_err ? kv_throw(&r) : JS_UNDEFINED;
}

/* nat_kv_list(prefix, limit) -> [[key, valueText]...] */
static JSValue nat_kv_list(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    uint32_t limit;
    if (JS_ToUint32(c, &limit, argv[1])) return JS_EXCEPTION;
    size_t n;
    const char *p = cstr(argv[0], &n);
    if (!p) return JS_EXCEPTION;
    kv_ret_t r;
    imp_kv_list(p, n, limit, &r);
    JS_FreeCString(c, p);
    if (r.is_err) return kv_throw(&r);
    JSValue out = JS_NewArray(c);
    for (size_t i = 0; i < r.u.list.len; i++) {
        entry_t *e = &r.u.list.ptr[i];
        JSValue pair = JS_NewArray(c);
        JS_SetPropertyUint32(c, pair, 0, JS_NewStringLen(c, e->key.ptr, e->key.len));
        JS_SetPropertyUint32(c, pair, 1, JS_NewStringLen(c, (const char *)e->value.ptr, e->value.len));
        JS_SetPropertyUint32(c, out, (uint32_t)i, pair);
        free(e->key.ptr);
        free(e->value.ptr);
    }
    free(r.u.list.ptr);
    return out;
}

/* nat_kv_batch([["set", key, valueText] | ["delete", key]...]) applies all or none. */
static JSValue nat_kv_batch(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    int64_t n64;
    if (JS_ToInt64(c, &n64, JS_GetPropertyStr(c, argv[0], "length"))) return JS_EXCEPTION;
    size_t n = (size_t)n64;
    op_t *ops = calloc(n ? n : 1, sizeof *ops);
    const char **held = calloc(2 * n + 1, sizeof *held); /* C strings to free afterwards */
    if (!ops || !held) __builtin_trap();
    size_t nheld = 0;
    JSValue result = JS_UNDEFINED;
    for (size_t i = 0; i < n; i++) {
        JSValue op = JS_GetPropertyUint32(c, argv[0], (uint32_t)i);
        JSValue tag = JS_GetPropertyUint32(c, op, 0), key = JS_GetPropertyUint32(c, op, 1);
        JSValue val = JS_GetPropertyUint32(c, op, 2);
        JS_FreeValue(c, op);
        size_t kn = 0, vn = 0;
        const char *t = cstr(tag, &kn);
        int is_set = t && strcmp(t, "set") == 0;
        if (t) JS_FreeCString(c, t);
        const char *k = t ? cstr(key, &kn) : NULL;
        const char *v = k && is_set ? cstr(val, &vn) : NULL;
        JS_FreeValue(c, tag);
        JS_FreeValue(c, key);
        JS_FreeValue(c, val);
        if (k) held[nheld++] = k;
        if (v) held[nheld++] = v;
        if (!k || (is_set && !v)) {
            result = JS_EXCEPTION;
            break;
        }
        if (is_set) {
            ops[i].tag = 0;
            ops[i].u.set = (entry_t){{(char *)k, kn}, {(uint8_t *)v, vn}};
        } else {
            ops[i].tag = 1;
            ops[i].u.del = (str_t){(char *)k, kn};
        }
    }
    if (!JS_IsException(result)) {
        kv_ret_t r;
        imp_kv_batch(ops, n, &r);
        if (r.is_err) result = kv_throw(&r);
    }
    for (size_t i = 0; i < nheld; i++) JS_FreeCString(c, held[i]);
    free(held);
    free(ops);
    return result;
}

static JSValue nat_publish(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    size_t tn, pn;
    const char *t = cstr(argv[0], &tn);
    if (!t) return JS_EXCEPTION;
    const char *p = cstr(argv[1], &pn);
    if (!p) {
        JS_FreeCString(c, t);
        return JS_EXCEPTION;
    }
    ret_t r;
    imp_publish(t, tn, p, pn, &r);
    JS_FreeCString(c, p);
    JS_FreeCString(c, t);
    return r.is_err ? throw_host("publish: ", r.u.s) : JS_UNDEFINED;
}

/* The gadget's files, kept for the module loader. Sources are NUL-terminated. */
typedef struct { str_t name; str_t source; } file_t;
static file_t *files;
static size_t nfiles;
#endif

/* ---- modules ---- */

static JSModuleDef *load_module(JSContext *c, const char *name, void *opaque) {
    (void)opaque;
#ifdef ENGINE_GADGET
    for (size_t i = 0; i < nfiles; i++) {
        if (strlen(name) != files[i].name.len || memcmp(name, files[i].name.ptr, files[i].name.len) != 0) continue;
        JSValue m = JS_Eval(c, files[i].source.ptr, files[i].source.len, name, JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY);
        if (JS_IsException(m)) return NULL;
        JSModuleDef *d = JS_VALUE_GET_PTR(m);
        JS_FreeValue(c, m);
        return d;
    }
    JS_ThrowReferenceError(c, "cannot import '%s': the gadget has no such file", name);
#else
    JS_ThrowReferenceError(c, "cannot import '%s': a snippet can import nothing", name);
#endif
    return NULL;
}

/* Math.random: QuickJS's xorshift64*, but seeded per instance (the snapshot would otherwise
 * give every instance the same sequence). Not for cryptography, like everywhere else. */
static uint64_t random_state;
static int seeded;

static JSValue nat_random(JSContext *c, JSValueConst this_val, int argc, JSValueConst *argv) {
    uint64_t x = random_state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    random_state = x;
    x *= 0x2545F4914F6CDD1DULL;
    union { uint64_t u; double d; } u = {.u = ((uint64_t)0x3ff << 52) | (x >> 12)};
    return JS_NewFloat64(c, u.d - 1.0);
}

/* begin sets what differs per call: the clock, the limits and the stack top (the snapshot's
 * stack pointer is not this call's). The first call also seeds Math.random. */
static void begin(uint64_t now, uint32_t memory_limit, uint32_t stack_limit) {
    now_ns = now;
    if (!seeded) random_state = (now ^ 0x9E3779B97F4A7C15ULL) | 1, seeded = 1;
    JS_SetMemoryLimit(rt, memory_limit); /* 0: none */
    /* The stack check compares against the wasm shadow stack (linked first, so an overflow
     * traps instead of overwriting data); keep a quarter of it for C frames. */
    if (stack_limit == 0 || stack_limit > ENGINE_STACK / 4 * 3) stack_limit = ENGINE_STACK / 2;
    JS_UpdateStackTop(rt);
    JS_SetMaxStackSize(rt, stack_limit);
}

/* start creates the runtime and the context and evaluates glue.js. */
static int start(void) {
    rt = JS_NewRuntime();
    if (!rt) return -1;
    JS_SetMaxStackSize(rt, ENGINE_STACK / 2); /* QuickJS's default is the whole wasm stack */
    JS_SetModuleLoaderFunc(rt, NULL, load_module, NULL);
    ctx = JS_NewContext(rt);
    if (!ctx) return -1;
    JSValue global = JS_GetGlobalObject(ctx);
    JSValue math = JS_GetPropertyStr(ctx, global, "Math");
    JS_SetPropertyStr(ctx, math, "random", JS_NewCFunction(ctx, nat_random, "random", 0));
    JS_FreeValue(ctx, math);
    JS_FreeValue(ctx, global);
    JSValue fn = JS_Eval(ctx, glue_js, sizeof glue_js - 1, "<engine>", JS_EVAL_TYPE_GLOBAL);
    if (JS_IsException(fn)) return -1;
    JSValue native = JS_NewObject(ctx);
    JS_SetPropertyStr(ctx, native, "log", JS_NewCFunction(ctx, nat_log, "log", 2));
    JS_SetPropertyStr(ctx, native, "call", JS_NewCFunction(ctx, nat_call, "call", 3));
#ifdef ENGINE_GADGET
    JS_SetPropertyStr(ctx, native, "kvGet", JS_NewCFunction(ctx, nat_kv_get, "kvGet", 1));
    JS_SetPropertyStr(ctx, native, "kvSet", JS_NewCFunction(ctx, nat_kv_set, "kvSet", 2));
    JS_SetPropertyStr(ctx, native, "kvDelete", JS_NewCFunction(ctx, nat_kv_delete, "kvDelete", 1));
    JS_SetPropertyStr(ctx, native, "kvList", JS_NewCFunction(ctx, nat_kv_list, "kvList", 2));
    JS_SetPropertyStr(ctx, native, "kvBatch", JS_NewCFunction(ctx, nat_kv_batch, "kvBatch", 1));
    JS_SetPropertyStr(ctx, native, "publish", JS_NewCFunction(ctx, nat_publish, "publish", 2));
#endif
    glue = JS_Call(ctx, fn, JS_UNDEFINED, 1, (JSValueConst *)&native);
    JS_FreeValue(ctx, fn);
    JS_FreeValue(ctx, native);
    return JS_IsException(glue) ? -1 : 0;
}

EXPORT("wizer.initialize")
void exp_initialize(void) {
    if (start() < 0) __builtin_trap();
}

#define START_FAILED "{\"name\":\"InternalError\",\"message\":\"the engine could not start (is the memory limit too small?)\",\"stack\":\"\"}"

/* nul_terminate makes a host-allocated string NUL-terminated, as QuickJS's parser wants. */
static char *nul_terminate(str_t s) {
    char *p = cabi_realloc(s.ptr, s.len, 1, s.len + 1);
    p[s.len] = 0;
    return p;
}

/* eval_module compiles and evaluates a module, then returns its namespace (or JS_EXCEPTION
 * with *err set). */
static JSValue eval_module(JSValue compiled, JSValue *err) {
    if (JS_IsException(compiled)) {
        *err = JS_GetException(ctx);
        return JS_EXCEPTION;
    }
    JSModuleDef *m = JS_VALUE_GET_PTR(compiled);
    JSValue done;
    if (settle(JS_EvalFunction(ctx, compiled), &done, 0)) {
        *err = done;
        return JS_EXCEPTION;
    }
    JS_FreeValue(ctx, done);
    return JS_GetModuleNamespace(ctx, m);
}

#ifdef ENGINE_SNIPPET
typedef struct { str_t name; strs_t methods; } binding_t;

EXPORT("run")
ret_t *exp_run(char *src, size_t src_len, binding_t *bindings, size_t nbindings, uint32_t memory_limit,
               uint32_t stack_limit, uint64_t now) {
    char *source = nul_terminate((str_t){src, src_len});
    int started = ctx || start() == 0;
    if (started) begin(now, memory_limit, stack_limit);
    JSValue desc = started ? JS_NewArray(ctx) : JS_UNDEFINED;
    for (size_t i = 0; i < nbindings; i++) {
        binding_t *b = &bindings[i];
        if (started) {
            JSValue methods = JS_NewArray(ctx);
            for (size_t j = 0; j < b->methods.len; j++) {
                str_t m = b->methods.ptr[j];
                JS_SetPropertyUint32(ctx, methods, (uint32_t)j, JS_NewStringLen(ctx, m.ptr, m.len));
            }
            JSValue pair = JS_NewArray(ctx);
            JS_SetPropertyUint32(ctx, pair, 0, JS_NewStringLen(ctx, b->name.ptr, b->name.len));
            JS_SetPropertyUint32(ctx, pair, 1, methods);
            JS_SetPropertyUint32(ctx, desc, (uint32_t)i, pair);
        }
        for (size_t j = 0; j < b->methods.len; j++) free(b->methods.ptr[j].ptr);
        free(b->methods.ptr);
        free(b->name.ptr);
    }
    free(bindings);
    if (!started) {
        free(source);
        return RET_ERR_LIT(START_FAILED);
    }
    JSValue err;
    JSValue ns = eval_module(JS_Eval(ctx, source, src_len, "snippet.js", JS_EVAL_TYPE_MODULE | JS_EVAL_FLAG_COMPILE_ONLY), &err);
    free(source);
    if (JS_IsException(ns)) {
        JS_FreeValue(ctx, desc);
        return ret_exception(err);
    }
    JSValue args[2] = {ns, desc};
    JSValue r = call_glue("run", 2, args);
    JS_FreeValue(ctx, ns);
    JS_FreeValue(ctx, desc);
    JSValue v;
    /* The snippet's value is its result even while stray promises still run: their jobs are
     * left unrun (the instance ends with this call), and the console says so. */
    if (settle(r, &v, 1)) return ret_exception(v);
    if (JS_IsJobPending(rt)) JS_FreeValue(ctx, call_glue("strays", 0, NULL));
    return ret_json(v);
}

EXPORT("cabi_post_run")
void exp_post_run(ret_t *r) { free(r->u.s.ptr); }
#endif

#ifdef ENGINE_GADGET
EXPORT("load")
ret_t *exp_load(file_t *fs, size_t n, uint32_t memory_limit, uint32_t stack_limit, uint64_t now) {
    for (size_t i = 0; i < n; i++) fs[i].source.ptr = nul_terminate(fs[i].source);
    if (files) {
        for (size_t i = 0; i < n; i++) free(fs[i].name.ptr), free(fs[i].source.ptr);
        free(fs);
        return RET_ERR_LIT("{\"name\":\"InternalError\",\"message\":\"the gadget is already loaded\",\"stack\":\"\"}");
    }
    files = fs, nfiles = n;
    if (!ctx && start() < 0) return RET_ERR_LIT(START_FAILED);
    begin(now, memory_limit, stack_limit);
    JSValue err;
    JSModuleDef *server = load_module(ctx, "server.js", NULL);
    if (!server) return ret_exception(JS_GetException(ctx));
    JSValue ns = eval_module(JS_DupValue(ctx, JS_MKPTR(JS_TAG_MODULE, server)), &err);
    if (JS_IsException(ns)) return ret_exception(err);
    JSValue names = call_glue("load", 1, (JSValueConst *)&ns);
    JS_FreeValue(ctx, ns);
    if (JS_IsException(names)) return ret_exception(JS_GetException(ctx));
    int64_t count;
    JS_ToInt64(ctx, &count, JS_GetPropertyStr(ctx, names, "length"));
    str_t *list = calloc(count ? (size_t)count : 1, sizeof *list);
    if (!list) __builtin_trap();
    for (int64_t i = 0; i < count; i++) {
        JSValue s = JS_GetPropertyUint32(ctx, names, (uint32_t)i);
        size_t len;
        const char *p = cstr(s, &len);
        JS_FreeValue(ctx, s);
        list[i] = (str_t){dup_bytes(p ? p : "", p ? len : 0), p ? len : 0};
        if (p) JS_FreeCString(ctx, p);
    }
    JS_FreeValue(ctx, names);
    ret_area.is_err = 0;
    ret_area.u.list = (strs_t){list, (size_t)count};
    return &ret_area;
}

EXPORT("cabi_post_load")
void exp_post_load(ret_t *r) {
    if (!r->is_err) {
        for (size_t i = 0; i < r->u.list.len; i++) free(r->u.list.ptr[i].ptr);
        free(r->u.list.ptr);
        return;
    }
    free(r->u.s.ptr);
}

EXPORT("call")
ret_t *exp_call(char *method, size_t method_len, char *args, size_t args_len, uint64_t now) {
    if (!files) {
        free(method), free(args);
        return RET_ERR_LIT("{\"name\":\"InternalError\",\"message\":\"the gadget is not loaded\",\"stack\":\"\"}");
    }
    now_ns = now;
    JS_UpdateStackTop(rt);
    JSValue argv[2] = {JS_NewStringLen(ctx, method, method_len), JS_NewStringLen(ctx, args, args_len)};
    free(method), free(args);
    JSValue r = call_glue("call", 2, argv);
    JS_FreeValue(ctx, argv[0]);
    JS_FreeValue(ctx, argv[1]);
    JSValue v;
    if (settle(r, &v, 0)) return ret_exception(v);
    return ret_json(v);
}

EXPORT("cabi_post_call")
void exp_post_call(ret_t *r) { free(r->u.s.ptr); }
#endif
