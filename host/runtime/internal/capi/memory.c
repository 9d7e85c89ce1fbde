// Atelier's linear memories: an engine-wide Wasmtime memory creator that charges every memory
// of a store (its committed bytes, at creation and at each growth) against the store's one
// memory budget and enforces it itself, so that a refused growth is recorded where the host can read it (the C
// API's store limiter refuses silently), and that recycles freed memories, scrubbed to zero, so
// that an instantiation does not pay for a fresh mapping and its page faults, and that maps
// the data image of a component's memories copy-on-write from sealed memfds (atl_plan_t). host/
// runtime/RATIONALE.md ("Memory cap") explains the design; store.go (MemoryRefused), images.go
// and the wrappers' callers are the Go side.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
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

typedef struct atl_memory atl_memory_t;

// The instantiation running on this thread (NULL: outside an instantiation, or inside a call
// made during one): the memories it is expected to create, in order (its component's plan, or
// NULL for no plan), how many of them were created so far, and the memories it created (most
// recent first, linked by atl_memory.made_next), which atl_trim looks at once it has finished.
// Set and restored by the wrappers.
typedef struct atl_queue {
  const atl_plan_t *plan;
  size_t next;
  atl_memory_t *made;
} atl_queue_t;
static _Thread_local atl_queue_t *atl_queue;

// atl_entry is what the wrappers below save of this thread's atl_current and atl_queue while
// they enter Wasmtime for a store.
typedef struct atl_entry {
  atl_memcap_t *mem;
  atl_queue_t *queue;
} atl_entry_t;

// atl_enter makes mem and queue this thread's, returning what they replace for atl_leave.
static atl_entry_t atl_enter(atl_memcap_t *mem, atl_queue_t *queue) {
  atl_entry_t prev = {atl_current, atl_queue};
  atl_current = mem;
  atl_queue = queue;
  return prev;
}

// atl_leave restores what atl_enter replaced.
static void atl_leave(atl_entry_t prev) {
  atl_current = prev.mem;
  atl_queue = prev.queue;
}

// The largest reservation made when Wasmtime does not ask for one (every 32-bit memory fits).
#define ATL_MAX_FREE_RESERVATION ((size_t)1 << 32)

// A pooled memory keeps at most this many bytes of its pages populated (zeroed, so the next
// user does not fault them in again); its other pages go back to the kernel.
#define ATL_KEEP_RESIDENT ((size_t)4 << 20)

// Bits for the pages of the first ATL_KEEP_RESIDENT bytes of a memory, at the smallest page size.
#define ATL_KEEP_BITS (ATL_KEEP_RESIDENT / 4096)

// Memories in use by stores, freed memories kept in pools, and memories mapped from an image,
// in the whole process.
static int64_t atl_live, atl_pooled, atl_imaged;

// Pages of zeros that atl_trim gave back to the kernel, in the whole process.
static int64_t atl_trimmed;

typedef struct atl_pool atl_pool_t;

// One linear memory: a PROT_NONE reservation [guard | capacity | guard] of which the first
// `committed` bytes after the first guard are read-write.
struct atl_memory {
  atl_pool_t *pool;  // where the memory goes when freed (NULL: unmapped)
  atl_memcap_t *cap; // of the store using it; NULL while pooled
  uint8_t *mapping;
  size_t mapping_len;
  uint8_t *base;
  size_t guard;     // bytes reserved before base and after the capacity
  size_t size;      // bytes the guest may access
  size_t committed; // read-write bytes from base (size rounded up to host pages)
  size_t capacity;  // growth up to here never moves base
  size_t image_len; // bytes from base mapped privately from an image's memfd (0: none)
  atl_memory_t *made_next; // the memory created before it by the same instantiation
  atl_memory_t *store_next, *store_prev; // its neighbours in cap->mems while in use
  // The pages in the first ATL_KEEP_RESIDENT bytes that atl_store_trim dropped (resident,
  // all zero) since the memory was last scrubbed, one bit each; atl_scrub populates them
  // again, so that the next user's start-up, which likely touches the same pages, does not
  // fault them in. `dropped` says whether any bit is set.
  uint8_t dropped_bits[ATL_KEEP_BITS / 8];
  int dropped;
};

// The memory creator's state (its env): freed memories kept for reuse, most recent last. Every
// byte of a pooled memory's reservation is zero (atl_scrub), so a reused memory is
// indistinguishable from a fresh mapping once atl_set_committed has sized it.
struct atl_pool {
  pthread_mutex_t mu;
  size_t max; // memories kept at most
  size_t n;
  atl_memory_t **kept;
};

// Rounds n up to a multiple of the host page size; 0 when that overflows.
static size_t atl_round_page(size_t n) {
  size_t p = (size_t)sysconf(_SC_PAGESIZE);
  if (n > SIZE_MAX - (p - 1))
    return 0;
  return (n + p - 1) & ~(p - 1);
}

// A Wasmtime error from a format whose arguments are all size_t.
static wasmtime_error_t *atl_errorf(const char *fmt, ...) {
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return wasmtime_error_new(msg);
}

static atl_memcap_t *atl_memcap_new(uint64_t cap, uint64_t reserve) {
  atl_memcap_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->cap = cap;
  c->used = reserve;
  c->refs = 1;
  return c;
}

// Renders n bytes for a refusal: "256 MiB", "1.5 MiB", "64 KiB", "100 bytes".
static void atl_format_bytes(char *buf, size_t len, uint64_t n) {
  const uint64_t kib = 1024, mib = kib * 1024;
  if (n >= mib && n % mib == 0)
    snprintf(buf, len, "%llu MiB", (unsigned long long)(n / mib));
  else if (n >= mib)
    snprintf(buf, len, "%.1f MiB", (double)n / (double)mib);
  else if (n >= kib && n % kib == 0)
    snprintf(buf, len, "%llu KiB", (unsigned long long)(n / kib));
  else
    snprintf(buf, len, "%llu bytes", (unsigned long long)n);
}

// Charges `more` bytes to the store's budget, or refuses them (recording the refusal) with an
// error that names the budget, what the store holds and what was asked; `what` is "one asked
// for" (a growth) or "a new one asked for" (a new memory). A store's memories are created and
// grown by one thread at a time; the counter is atomic for readers on other threads.
static wasmtime_error_t *atl_charge(atl_memcap_t *c, uint64_t more, const char *what) {
  uint64_t used = __atomic_load_n(&c->used, __ATOMIC_RELAXED);
  if (more > c->cap || used > c->cap - more) {
    char cap[32], held[32], asked[32];
    atl_format_bytes(cap, sizeof cap, c->cap);
    atl_format_bytes(held, sizeof held, used);
    atl_format_bytes(asked, sizeof asked, more);
    snprintf(c->refusal, sizeof c->refusal,
             "instance memory budget of %s exhausted: its memories and tables hold %s and %s %s "
             "more",
             cap, held, what, asked);
    __atomic_store_n(&c->refused, 1, __ATOMIC_RELAXED);
    return wasmtime_error_new(c->refusal);
  }
  __atomic_add_fetch(&c->used, more, __ATOMIC_RELAXED);
  return NULL;
}

// Gives back bytes charged with atl_charge.
static void atl_uncharge(atl_memcap_t *c, uint64_t n) {
  __atomic_sub_fetch(&c->used, n, __ATOMIC_RELAXED);
}

static void atl_memcap_release(atl_memcap_t *c) {
  if (c != NULL && __atomic_sub_fetch(&c->refs, 1, __ATOMIC_ACQ_REL) == 0)
    free(c);
}

int64_t atl_live_memories(void) { return __atomic_load_n(&atl_live, __ATOMIC_RELAXED); }

int64_t atl_pooled_memories(void) { return __atomic_load_n(&atl_pooled, __ATOMIC_RELAXED); }

int64_t atl_imaged_memories(void) { return __atomic_load_n(&atl_imaged, __ATOMIC_RELAXED); }

int64_t atl_trimmed_pages(void) { return __atomic_load_n(&atl_trimmed, __ATOMIC_RELAXED); }

// Forgets a memory's image mapping (the mapping itself is replaced or unmapped by the caller).
static void atl_forget_image(atl_memory_t *m) {
  if (m->image_len > 0)
    __atomic_sub_fetch(&atl_imaged, 1, __ATOMIC_RELAXED);
  m->image_len = 0;
}

static uint8_t *atl_get_memory(void *env, size_t *byte_size, size_t *byte_capacity) {
  atl_memory_t *m = env;
  *byte_size = m->size;
  *byte_capacity = m->capacity;
  return m->base;
}

// Makes exactly [base, base+bytes) read-write, bytes rounded up to host pages, and the rest of
// the capacity PROT_NONE (the rest is PROT_NONE already from `committed` on).
static wasmtime_error_t *atl_set_committed(atl_memory_t *m, size_t bytes) {
  size_t want = atl_round_page(bytes);
  if (want == 0 && bytes != 0)
    return wasmtime_error_new("linear memory size overflows");
  if (want > m->committed &&
      mprotect(m->base + m->committed, want - m->committed, PROT_READ | PROT_WRITE) != 0)
    return atl_errorf("make %zu bytes of linear memory accessible: errno %zu", want - m->committed,
                      (size_t)errno);
  if (want < m->committed && mprotect(m->base + want, m->committed - want, PROT_NONE) != 0)
    return atl_errorf("make %zu bytes of linear memory inaccessible: errno %zu",
                      m->committed - want, (size_t)errno);
  m->committed = want;
  return NULL;
}

static wasmtime_error_t *atl_grow_memory(void *env, size_t new_size) {
  atl_memory_t *m = env;
  if (new_size <= m->size)
    return NULL;
  if (new_size > m->capacity)
    return atl_errorf("growing linear memory to %zu bytes exceeds its reservation of %zu bytes",
                      new_size, m->capacity);
  size_t want = atl_round_page(new_size);
  if (want == 0)
    return wasmtime_error_new("linear memory size overflows");
  size_t more = want > m->committed ? want - m->committed : 0;
  wasmtime_error_t *err = atl_charge(m->cap, more, "one asked for");
  if (err != NULL)
    return err;
  err = atl_set_committed(m, new_size);
  if (err != NULL) {
    atl_uncharge(m->cap, more);
    return err;
  }
  m->size = new_size;
  return NULL;
}

static void atl_unmap(atl_memory_t *m) {
  atl_forget_image(m);
  munmap(m->mapping, m->mapping_len);
  free(m);
}

// Returns every byte of a freed memory to zero; only [base, base+committed) was ever
// accessible since the memory was last zero. An image's private file mapping is replaced by
// fresh anonymous memory (MADV_DONTNEED would bring back the file's content, not zeros).
// Populated pages in the first ATL_KEEP_RESIDENT bytes are cleared in place (they stay
// populated for the next user); every other page (never touched, swapped out, or above the
// limit) is dropped with MADV_DONTNEED, after which it reads as zero; of those in the first
// ATL_KEEP_RESIDENT bytes, the ones an idle trim dropped (dropped_bits) are populated again
// with zeros, as if never trimmed. 0 on success.
static int atl_scrub(atl_memory_t *m) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  size_t pages = m->committed / page;
  size_t keep = (m->committed < ATL_KEEP_RESIDENT ? m->committed : ATL_KEEP_RESIDENT) / page;
  size_t from = 0;
  if (m->image_len > 0) {
    if (mmap(m->base, m->image_len, PROT_READ | PROT_WRITE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) == MAP_FAILED)
      return -1;
    from = m->image_len / page;
    atl_forget_image(m);
  }
  if (keep < from)
    keep = from;
  unsigned char vec[4096];
  for (size_t at = from; at < keep;) {
    size_t n = keep - at < sizeof vec ? keep - at : sizeof vec;
    if (mincore(m->base + at * page, n * page, vec) != 0)
      return -1;
    for (size_t i = 0; i < n;) {
      size_t j = i + 1;
      while (j < n && (vec[j] & 1) == (vec[i] & 1))
        j++;
      uint8_t *p = m->base + (at + i) * page;
      size_t len = (j - i) * page;
      if (vec[i] & 1)
        memset(p, 0, len);
      else if (madvise(p, len, MADV_DONTNEED) != 0)
        return -1;
      else if (m->dropped)
        for (size_t k = at + i; k < at + j; k++)
          if (m->dropped_bits[k / 8] & (1u << (k % 8)))
            *(volatile uint8_t *)(m->base + k * page) = 0; // populated, zero
      i = j;
    }
    at += n;
  }
  if (m->dropped) {
    memset(m->dropped_bits, 0, sizeof m->dropped_bits);
    m->dropped = 0;
  }
  if (pages > keep && madvise(m->base + keep * page, (pages - keep) * page, MADV_DONTNEED) != 0)
    return -1;
  return 0;
}

// Reports whether the page at p (page bytes, a multiple of 8) holds only zeros.
static int atl_page_is_zero(const uint8_t *p, size_t page) {
  const uint64_t *w = (const uint64_t *)p;
  for (size_t i = 0; i < page / 8; i++)
    if (w[i] != 0)
      return 0;
  return 1;
}

// Gives len bytes of zero anonymous pages at p back to the kernel lazily (MADV_FREE): they
// stop counting as the instance's dirty memory and the kernel takes them whenever it needs
// memory, without writing them anywhere; until then a write keeps the page (no page fault),
// and a read returns zeros either way. Kernels without MADV_FREE drop them (MADV_DONTNEED).
// 0 on success.
static int atl_give_back(uint8_t *p, size_t len) {
  if (madvise(p, len, MADV_FREE) == 0)
    return 0;
  return errno == EINVAL ? madvise(p, len, MADV_DONTNEED) : -1;
}

// Hands each run of resident pages in [from, to) (page numbers from m->base, inside the
// read-write range) that hold only zeros to `drop`, and returns how many pages it took; with
// `mark`, the pages taken in the first ATL_KEEP_RESIDENT bytes are marked in m->dropped_bits.
// A failed mincore stops the scan (the pages left are kept, which is correct too, only larger).
static int64_t atl_drop_zeros(atl_memory_t *m, size_t from, size_t to,
                              int (*drop)(uint8_t *, size_t), int mark) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  int64_t dropped = 0;
  unsigned char vec[4096];
  for (size_t at = from; at < to;) {
    size_t n = to - at < sizeof vec ? to - at : sizeof vec;
    if (mincore(m->base + at * page, n * page, vec) != 0)
      return dropped;
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j < n && (vec[j] & 1) && atl_page_is_zero(m->base + (at + j) * page, page))
        j++;
      if (j > i && drop(m->base + (at + i) * page, (j - i) * page) == 0) {
        dropped += (int64_t)(j - i);
        for (size_t k = at + i; mark && k < at + j && k < ATL_KEEP_RESIDENT / page; k++) {
          m->dropped_bits[k / 8] |= (uint8_t)(1u << (k % 8));
          m->dropped = 1;
        }
      }
      i = j + 1;
    }
    at += n;
  }
  return dropped;
}

// Gives the kernel back the pages of a memory that read as zero once its instance has started,
// so that a live instance's dirty memory is only the pages it wrote something into. A guest's
// start-up often writes zeros over fresh memory (the Go runtime's page allocator clears every
// block it frees, about 400 KiB of a Go guest's start), and a recycled memory comes with the
// pages its previous user touched populated (atl_scrub). In [image_len, committed) (read-write
// anonymous memory) each populated page is read and runs of all-zero ones are given back
// (atl_give_back: the guest reads zeros from them whatever the kernel does); above `committed`
// every page is zero (PROT_NONE since the scrub) and populated ones are given back unread. The
// image's range is left alone (a private file page given back would read as the image's
// content, not as what the guest wrote). Runs right after the instantiation, on its thread,
// before any call can run on the store. A failed mincore or madvise leaves pages as they are,
// which is correct too, only larger.
static void atl_trim(atl_memory_t *m) {
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  int64_t n = atl_drop_zeros(m, m->image_len / page, m->committed / page, atl_give_back, 0);
  __atomic_add_fetch(&atl_trimmed, n, __ATOMIC_RELAXED);
  size_t kept = m->capacity < ATL_KEEP_RESIDENT ? m->capacity : ATL_KEEP_RESIDENT;
  if (kept > m->committed)
    atl_give_back(m->base + m->committed, kept - m->committed);
}

// Drops len bytes of pages at p for good (MADV_DONTNEED): an anonymous page reads as zero
// afterwards, a private file page as the file's content. 0 on success.
static int atl_drop(uint8_t *p, size_t len) { return madvise(p, len, MADV_DONTNEED); }

// /proc/self/pagemap, opened on first use by atl_pagemap_open (-1: unavailable).
static int atl_pagemap = -1;
static pthread_once_t atl_pagemap_once = PTHREAD_ONCE_INIT;

static void atl_pagemap_open(void) {
  atl_pagemap = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
}

// Bits of a pagemap entry (Documentation/admin-guide/mm/pagemap.rst): the page is present, and
// it is a page of the file (or shared memory) rather than anonymous memory of this process;
// both set in a private file mapping: the file's page, mapped in by a read and never written.
#define ATL_PM_PRESENT ((uint64_t)1 << 63)
#define ATL_PM_FILE ((uint64_t)1 << 61)
#define ATL_PM_READ_ONLY (ATL_PM_PRESENT | ATL_PM_FILE)

// Drops the resident pages of a memory's image range that the guest only read: they are the
// memfd's own pages mapped in, which a later read maps again, whereas a page the guest wrote
// is its private anonymous copy (no ATL_PM_FILE) and is kept. Without pagemap nothing is
// dropped. Returns the pages dropped.
static int64_t atl_drop_image_reads(atl_memory_t *m) {
  pthread_once(&atl_pagemap_once, atl_pagemap_open);
  if (atl_pagemap < 0)
    return 0;
  size_t page = (size_t)sysconf(_SC_PAGESIZE), pages = m->image_len / page;
  uint64_t first = (uint64_t)(uintptr_t)m->base / page;
  int64_t dropped = 0;
  uint64_t ent[512];
  for (size_t at = 0; at < pages;) {
    size_t n = pages - at < 512 ? pages - at : 512;
    size_t len = n * sizeof ent[0];
    if (pread(atl_pagemap, ent, len, (off_t)((first + at) * sizeof ent[0])) != (ssize_t)len)
      return dropped;
    for (size_t i = 0; i < n;) {
      size_t j = i;
      while (j < n && (ent[j] & ATL_PM_READ_ONLY) == ATL_PM_READ_ONLY)
        j++;
      if (j > i && atl_drop(m->base + (at + i) * page, (j - i) * page) == 0)
        dropped += (int64_t)(j - i);
      i = j + 1;
    }
    at += n;
  }
  return dropped;
}

int64_t atl_store_trim(atl_memcap_t *c) {
  if (c == NULL)
    return 0;
  size_t page = (size_t)sysconf(_SC_PAGESIZE);
  int64_t dropped = 0;
  for (atl_memory_t *m = c->mems; m != NULL; m = m->store_next) {
    dropped += atl_drop_image_reads(m);
    dropped += atl_drop_zeros(m, m->image_len / page, m->committed / page, atl_drop, 1);
    size_t kept = m->capacity < ATL_KEEP_RESIDENT ? m->capacity : ATL_KEEP_RESIDENT;
    if (kept > m->committed)
      atl_drop(m->base + m->committed, kept - m->committed);
  }
  return dropped;
}

// Keeps a freed memory in its pool (scrubbed) if there is room; 0 when it was not kept.
static int atl_pool_put(atl_memory_t *m) {
  atl_pool_t *p = m->pool;
  if (p == NULL)
    return 0;
  pthread_mutex_lock(&p->mu);
  int room = p->n < p->max;
  pthread_mutex_unlock(&p->mu);
  if (!room || atl_scrub(m) != 0)
    return 0;
  pthread_mutex_lock(&p->mu);
  room = p->n < p->max;
  if (room)
    p->kept[p->n++] = m;
  pthread_mutex_unlock(&p->mu);
  if (room)
    __atomic_add_fetch(&atl_pooled, 1, __ATOMIC_RELAXED);
  return room;
}

// Takes the most recently pooled memory with this layout, or NULL.
static atl_memory_t *atl_pool_take(atl_pool_t *p, size_t guard, size_t capacity) {
  if (p == NULL)
    return NULL;
  atl_memory_t *m = NULL;
  pthread_mutex_lock(&p->mu);
  for (size_t i = p->n; i-- > 0;) {
    if (p->kept[i]->guard == guard && p->kept[i]->capacity == capacity) {
      m = p->kept[i];
      p->kept[i] = p->kept[--p->n];
      break;
    }
  }
  pthread_mutex_unlock(&p->mu);
  if (m != NULL)
    __atomic_sub_fetch(&atl_pooled, 1, __ATOMIC_RELAXED);
  return m;
}

static void atl_free_memory(void *env) {
  atl_memory_t *m = env;
  if (m->store_prev != NULL)
    m->store_prev->store_next = m->store_next;
  else
    m->cap->mems = m->store_next;
  if (m->store_next != NULL)
    m->store_next->store_prev = m->store_prev;
  m->store_next = m->store_prev = NULL;
  atl_uncharge(m->cap, m->committed);
  atl_memcap_release(m->cap);
  m->cap = NULL;
  __atomic_sub_fetch(&atl_live, 1, __ATOMIC_RELAXED);
  if (!atl_pool_put(m))
    atl_unmap(m);
}

// Reserves a fresh memory: guard + capacity + guard bytes, all PROT_NONE.
static wasmtime_error_t *atl_map(atl_pool_t *p, size_t guard, size_t capacity,
                                 atl_memory_t **out) {
  size_t len = guard + capacity;
  if (len < capacity || len + guard < len)
    return wasmtime_error_new("linear memory reservation overflows");
  len += guard;
  atl_memory_t *m = calloc(1, sizeof *m);
  if (m == NULL)
    return wasmtime_error_new("out of host memory for a linear memory");
  void *mapping = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (mapping == MAP_FAILED) {
    free(m);
    return atl_errorf("reserve %zu bytes for a linear memory: errno %zu", len, (size_t)errno);
  }
  m->pool = p;
  m->mapping = mapping;
  m->mapping_len = len;
  m->base = (uint8_t *)mapping + guard;
  m->guard = guard;
  m->capacity = capacity;
  *out = m;
  return NULL;
}

// Maps an image over the start of a memory whose first `committed` bytes are read-write:
// privately, so the instance's writes stay its own.
static wasmtime_error_t *atl_map_image(atl_memory_t *m, const atl_image_t *img) {
  if (img->len > m->committed)
    return atl_errorf("memory image of %zu bytes exceeds the memory's %zu bytes", img->len,
                      m->committed);
  if (mmap(m->base, img->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, img->fd, 0) ==
      MAP_FAILED)
    return atl_errorf("map a memory image of %zu bytes: errno %zu", img->len, (size_t)errno);
  m->image_len = img->len;
  __atomic_add_fetch(&atl_imaged, 1, __ATOMIC_RELAXED);
  return NULL;
}

// Takes the next memory of the instantiation's plan, which must have the limits Wasmtime asks
// for; *img is its image or NULL. Without a plan there is nothing to check.
static wasmtime_error_t *atl_plan_next(size_t minimum, size_t maximum, const atl_image_t **img) {
  *img = NULL;
  atl_queue_t *q = atl_queue;
  if (q == NULL || q->plan == NULL)
    return NULL;
  if (q->next >= q->plan->n)
    return atl_errorf("instantiation creates more linear memories than the %zu its component's "
                      "memory plan lists",
                      q->plan->n);
  const atl_planned_memory_t *pm = &q->plan->mems[q->next++];
  if (pm->min != minimum || pm->max != maximum)
    return atl_errorf("linear memory %zu of the instantiation has limits %zu..%zu bytes, its "
                      "component's memory plan says %zu..%zu",
                      q->next - 1, minimum, maximum, pm->min, pm->max);
  if (pm->image >= 0)
    *img = &q->plan->images[pm->image];
  return NULL;
}

// Wasmtime's contract (config.h, MemoryCreator::new_memory): `reserved` bytes (when non-zero)
// plus `guard` bytes after them must be reserved so that compiled code can elide bounds checks,
// the base never moves, and the memory starts zeroed (or, here, with the image of the plan,
// whose module was compiled without the segments that make it). A guard of the same size also
// precedes the memory, as Wasmtime's own memories have. A pooled memory of the same layout is
// reused.
static wasmtime_error_t *atl_new_memory(void *env, const wasm_memorytype_t *ty, size_t minimum,
                                        size_t maximum, size_t reserved, size_t guard,
                                        wasmtime_linear_memory_t *ret) {
  (void)ty;
  atl_pool_t *pool = env;
  atl_memcap_t *cap = atl_current;
  if (cap == NULL)
    return wasmtime_error_new("linear memory requested outside an Atelier store call");
  const atl_image_t *img;
  wasmtime_error_t *err = atl_plan_next(minimum, maximum, &img);
  if (err != NULL)
    return err;
  size_t charge = atl_round_page(minimum);
  if (charge == 0 && minimum != 0)
    return wasmtime_error_new("linear memory size overflows");
  if ((err = atl_charge(cap, charge, "a new one asked for")) != NULL)
    return err;
  size_t capacity = reserved;
  if (capacity == 0) { // Wasmtime leaves the size to us: what may ever be used, up to 4 GiB
    // (the budget can change between calls, so it does not bound the reservation)
    capacity = maximum;
    if (capacity > ATL_MAX_FREE_RESERVATION)
      capacity = ATL_MAX_FREE_RESERVATION;
  }
  capacity = atl_round_page(capacity);
  if (capacity < minimum) {
    atl_uncharge(cap, charge);
    return atl_errorf("linear memory minimum of %zu bytes exceeds its reservation of %zu bytes",
                      minimum, capacity);
  }

  atl_memory_t *m = atl_pool_take(pool, guard, capacity);
  if (m == NULL)
    err = atl_map(pool, guard, capacity, &m);
  if (err == NULL)
    err = atl_set_committed(m, minimum);
  if (err == NULL && img != NULL)
    err = atl_map_image(m, img);
  if (err != NULL) {
    if (m != NULL)
      atl_unmap(m);
    atl_uncharge(cap, charge);
    return err;
  }
  m->size = minimum;
  m->cap = cap;
  m->store_prev = NULL;
  m->store_next = cap->mems;
  if (cap->mems != NULL)
    cap->mems->store_prev = m;
  cap->mems = m;
  m->made_next = NULL;
  if (atl_queue != NULL) {
    m->made_next = atl_queue->made;
    atl_queue->made = m;
  }
  __atomic_add_fetch(&cap->refs, 1, __ATOMIC_ACQ_REL);
  __atomic_add_fetch(&atl_live, 1, __ATOMIC_RELAXED);
  ret->env = m;
  ret->get_memory = atl_get_memory;
  ret->grow_memory = atl_grow_memory;
  ret->finalizer = atl_free_memory;
  return NULL;
}

// Unmaps the pooled memories when the engine that owns the creator is deleted (after every
// store, so no memory is in use any more).
static void atl_pool_delete(void *env) {
  atl_pool_t *p = env;
  if (p == NULL)
    return;
  for (size_t i = 0; i < p->n; i++)
    atl_unmap(p->kept[i]);
  __atomic_sub_fetch(&atl_pooled, (int64_t)p->n, __ATOMIC_RELAXED);
  pthread_mutex_destroy(&p->mu);
  free(p->kept);
  free(p);
}

void atl_config_memory_creator(wasm_config_t *c, size_t keep) {
  atl_pool_t *p = calloc(1, sizeof *p);
  if (p != NULL && keep > 0)
    p->kept = calloc(keep, sizeof *p->kept);
  if (p != NULL && p->kept != NULL) // else no memory is kept (out of host memory, or keep 0)
    p->max = keep;
  if (p != NULL)
    pthread_mutex_init(&p->mu, NULL);
  wasmtime_memory_creator_t creator = {p, atl_new_memory, atl_pool_delete};
  wasmtime_config_host_memory_creator_set(c, &creator);
  // Copy-on-write initialisation maps a module's data image over Wasmtime's own mmap memories
  // and cannot work on a custom memory: data segments are copied in instead.
  wasmtime_config_memory_init_cow_set(c, false);
}

wasmtime_store_t *atl_store_new(wasm_engine_t *engine, uintptr_t handle, int capped, uint64_t cap,
                                uint64_t reserve, atl_memcap_t **mem) {
  *mem = NULL;
  if (capped) {
    *mem = atl_memcap_new(cap, reserve);
    if (*mem == NULL)
      return NULL;
  }
  return wasmtime_store_new(engine, (void *)handle, NULL);
}

void atl_store_delete(wasmtime_store_t *store, atl_memcap_t *mem) {
  wasmtime_store_delete(store); // finalizes every memory of the store
  atl_memcap_release(mem);
}

// atl_arm sets the epoch deadline `arm` ticks from now, unless arm is 0.
static void atl_arm(wasmtime_context_t *ctx, uint64_t arm) {
  if (arm != 0)
    wasmtime_context_set_epoch_deadline(ctx, arm);
}

wasmtime_error_t *atl_instantiate(atl_memcap_t *mem, uint64_t arm, const atl_plan_t *plan,
                                  const wasmtime_component_linker_t *linker,
                                  wasmtime_context_t *ctx, const wasmtime_component_t *comp,
                                  wasmtime_component_instance_t *out) {
  atl_arm(ctx, arm);
  atl_queue_t q = {plan, 0, NULL};
  atl_entry_t prev = atl_enter(mem, &q);
  wasmtime_error_t *err = wasmtime_component_linker_instantiate(linker, ctx, comp, out);
  atl_leave(prev);
  if (err == NULL && plan != NULL && q.next != plan->n)
    err = atl_errorf("instantiation created %zu linear memories, its component's memory plan "
                     "lists %zu",
                     q.next, plan->n);
  if (err == NULL)
    for (atl_memory_t *m = q.made; m != NULL; m = m->made_next)
      atl_trim(m);
  return err;
}

wasmtime_error_t *atl_func_call(atl_memcap_t *mem, uint64_t arm,
                                const wasmtime_component_func_t *f, wasmtime_context_t *ctx,
                                const wasmtime_component_val_t *args, size_t nargs,
                                wasmtime_component_val_t *res, size_t nres) {
  atl_arm(ctx, arm);
  atl_entry_t prev = atl_enter(mem, NULL);
  wasmtime_error_t *err = wasmtime_component_func_call(f, ctx, args, nargs, res, nres);
  if (err == NULL)
    err = wasmtime_component_func_post_return(f, ctx);
  atl_leave(prev);
  return err;
}

wasmtime_error_t *atl_resource_drop(atl_memcap_t *mem, uint64_t arm, wasmtime_context_t *ctx,
                                    const wasmtime_component_resource_any_t *r) {
  atl_arm(ctx, arm);
  atl_entry_t prev = atl_enter(mem, NULL);
  wasmtime_error_t *err = wasmtime_component_resource_any_drop(ctx, r);
  atl_leave(prev);
  return err;
}

atl_plan_t *atl_plan_new(size_t n, size_t nimages) {
  atl_plan_t *p = calloc(1, sizeof *p);
  if (p == NULL)
    return NULL;
  p->refs = 1;
  p->mems = calloc(n > 0 ? n : 1, sizeof *p->mems);
  p->images = calloc(nimages > 0 ? nimages : 1, sizeof *p->images);
  if (p->mems == NULL || p->images == NULL) {
    atl_plan_release(p);
    return NULL;
  }
  p->n = n;
  p->nimages = nimages;
  for (size_t i = 0; i < nimages; i++)
    p->images[i].fd = -1;
  return p;
}

int atl_image_begin(atl_plan_t *p, size_t i, size_t size, uint8_t **out) {
  *out = NULL;
  size_t len = atl_round_page(size);
  if (len == 0)
    return EINVAL;
  int fd = memfd_create("atelier-memory-image", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return errno;
  p->images[i].fd = fd;
  if (ftruncate(fd, (off_t)len) != 0)
    return errno;
  void *map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (map == MAP_FAILED)
    return errno;
  p->images[i].len = len;
  *out = map;
  return 0;
}

int atl_image_seal(atl_plan_t *p, size_t i, uint8_t *map) {
  atl_image_t *img = &p->images[i];
  if (munmap(map, img->len) != 0)
    return errno;
  if (fcntl(img->fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0)
    return errno;
  return 0;
}

void atl_plan_retain(atl_plan_t *p) { __atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED); }

void atl_plan_release(atl_plan_t *p) {
  if (p == NULL || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) != 0)
    return;
  for (size_t i = 0; p->images != NULL && i < p->nimages; i++)
    if (p->images[i].fd >= 0)
      close(p->images[i].fd);
  free(p->mems);
  free(p->images);
  free(p);
}
