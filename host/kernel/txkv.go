package kernel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"atelier/host/capability/kv"
	"atelier/host/quota"
	"atelier/host/store"
)

// txKV is a gadget's kv.Store. The writes of the running call are buffered (reads see them)
// and become one commit when the call ends. Behind the output gate, the next call may start
// before that commit is durable: the writes of submitted commits stay in an overlay, which
// reads see before the store, until their commit lands. It also enforces the gadget's storage
// quota on the bytes of keys plus values, and through charge the owner's (stored_bytes): a
// call's growth is charged to the workspace's owner as its writes are accepted and given back
// if it traps; what it freed is given back when it returns.
//
// The actor is the only writer of its gadget's state, so txKV also caches the values it read
// from the store or submitted (bounded by kvCacheBytes): only a miss opens a store read
// transaction. A submitted value enters the cache before it is durable, like the overlay; if
// its commit fails, the actor and with it this txKV are dropped (actor.reset), so no call
// reads it after the failure is known.
//
// Everything but the overlay is used only under the actor's turn.
type txKV struct {
	ws    store.WorkspaceStore
	g     store.GadgetID
	quota int64
	// charge and free change the bytes the workspace's owner stores (Kernel.addStored and
	// Kernel.freeStored).
	charge func(ctx context.Context, n int64) error
	free   func(n int64)

	pending map[string][]byte // this call's writes: key -> value; nil value: deleted
	sizes   map[string]int    // key -> size of its value before this call (-1: absent), for keys this call looked at
	used    int64             // storage use including every accepted write
	before  int64             // used when this call began
	grown   int64             // bytes this call's batches added, charged to the owner
	shrunk  int64             // bytes this call's batches freed, given back when it returns

	cache      map[string]cached // the latest submitted or stored value of keys read or written
	cacheBytes int               // what cache holds, by cachedSize

	mu      sync.Mutex // guards overlay
	overlay map[string]overlaid
}

// kvCacheBytes bounds one gadget's read cache (keys, values and per-entry overhead).
const kvCacheBytes = 2 << 20

// cached is a key's latest value as the cache knows it.
type cached struct {
	val []byte
	ok  bool // false: the key is absent
}

// cachedSize is what an entry counts against kvCacheBytes: its bytes plus the map's overhead.
func cachedSize(key string, val []byte) int { return len(key) + len(val) + 64 }

// remember caches key's latest value (ok false: absent), evicting other entries while the
// cache is full; a value too large for the cache only drops the key's old entry.
func (t *txKV) remember(key string, val []byte, ok bool) {
	if old, had := t.cache[key]; had {
		t.cacheBytes -= cachedSize(key, old.val)
		delete(t.cache, key)
	}
	n := cachedSize(key, val)
	if n > kvCacheBytes/4 {
		return
	}
	for k, c := range t.cache { // map order: an arbitrary victim
		if t.cacheBytes+n <= kvCacheBytes {
			break
		}
		t.cacheBytes -= cachedSize(k, c.val)
		delete(t.cache, k)
	}
	t.cache[key] = cached{val: val, ok: ok}
	t.cacheBytes += n
}

// overlaid is a write whose commit (seq) is not known to be durable yet.
type overlaid struct {
	val []byte // nil: deleted
	seq uint64
}

var _ kv.Store = (*txKV)(nil)

func newTxKV(ws store.WorkspaceStore, g store.GadgetID, quota, used int64, charge func(context.Context, int64) error, free func(int64)) *txKV {
	return &txKV{ws: ws, g: g, quota: quota, used: used, before: used, charge: charge, free: free,
		pending: map[string][]byte{}, sizes: map[string]int{}, cache: map[string]cached{}, overlay: map[string]overlaid{}}
}

// visible returns the value key has before this call's writes: the cache's, else the
// overlay's, else the store's. The cache is never older than the overlay (take fills both).
func (t *txKV) visible(key string) ([]byte, bool, error) {
	if c, ok := t.cache[key]; ok {
		return c.val, c.ok, nil
	}
	t.mu.Lock()
	o, ok := t.overlay[key]
	t.mu.Unlock()
	if ok {
		return o.val, o.val != nil, nil
	}
	// A key missing from the overlay has no write in flight: the store has its latest value.
	v, ok, err := t.ws.Get(t.g, []byte(key))
	if err == nil {
		t.sizes[key] = valueSize(v, ok)
		t.remember(key, v, ok)
	}
	return v, ok, err
}

func valueSize(v []byte, ok bool) int {
	if !ok {
		return -1
	}
	return len(v)
}

// Get implements kv.Store.
func (t *txKV) Get(_ context.Context, key string) ([]byte, bool, error) {
	if v, ok := t.pending[key]; ok {
		return slices.Clone(v), v != nil, nil
	}
	v, ok, err := t.visible(key)
	return slices.Clone(v), ok, err
}

// sizeOf returns the size of key's current value (-1: absent).
func (t *txKV) sizeOf(key string) (int, error) {
	if v, ok := t.pending[key]; ok {
		return valueSize(v, v != nil), nil
	}
	if n, ok := t.sizes[key]; ok {
		return n, nil
	}
	v, ok, err := t.visible(key)
	n := valueSize(v, ok)
	t.sizes[key] = n
	return n, err
}

// entrySize is what an entry counts against the quota.
func entrySize(key string, size int) int64 {
	if size < 0 {
		return 0
	}
	return int64(len(key) + size)
}

// Set implements kv.Store.
func (t *txKV) Set(ctx context.Context, key string, value []byte) error {
	return t.Batch(ctx, []kv.Op{{Key: key, Value: value}})
}

// Delete implements kv.Store.
func (t *txKV) Delete(ctx context.Context, key string) error {
	return t.Batch(ctx, []kv.Op{{Delete: true, Key: key}})
}

// Batch implements kv.Store; the buffer makes it atomic with the rest of the call. The quota
// is checked against the state after all ops: a batch that would exceed it changes nothing.
func (t *txKV) Batch(ctx context.Context, ops []kv.Op) error {
	delta := int64(0)
	after := make(map[string]int, len(ops)) // key -> size after the ops so far
	for _, op := range ops {
		cur, seen := after[op.Key]
		if !seen {
			var err error
			if cur, err = t.sizeOf(op.Key); err != nil {
				return err
			}
		}
		next := len(op.Value)
		if op.Delete {
			next = -1
		}
		delta += entrySize(op.Key, next) - entrySize(op.Key, cur)
		after[op.Key] = next
	}
	if delta > 0 {
		if t.used+delta > t.quota {
			return kv.ErrQuota
		}
		var over *quota.ExceededError
		if err := t.charge(ctx, delta); errors.As(err, &over) {
			return fmt.Errorf("%w: %w", kv.ErrQuota, err)
		} else if err != nil {
			return err
		}
		t.grown += delta
	} else {
		t.shrunk -= delta
	}
	for _, op := range ops {
		if op.Delete {
			t.pending[op.Key] = nil
		} else {
			t.pending[op.Key] = append([]byte{}, op.Value...) // never nil: nil marks a deletion
		}
	}
	t.used += delta
	return nil
}

// List implements kv.Store: the committed entries with the overlay and this call's writes laid
// over them.
func (t *txKV) List(_ context.Context, prefix string, limit int) ([]kv.Entry, error) {
	t.mu.Lock()
	layers := []map[string][]byte{make(map[string][]byte), t.pending}
	for k, o := range t.overlay {
		if strings.HasPrefix(k, prefix) {
			layers[0][k] = o.val
		}
	}
	t.mu.Unlock()
	merged := map[string][]byte{}
	want := limit + len(layers[0]) + len(t.pending) // enough committed keys to survive deletions
	err := t.ws.List(t.g, []byte(prefix), func(k, v []byte) bool {
		merged[string(k)] = slices.Clone(v)
		return len(merged) < want
	})
	if err != nil {
		return nil, err
	}
	for _, layer := range layers {
		for k, v := range layer {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if v == nil {
				delete(merged, k)
			} else {
				merged[k] = slices.Clone(v)
			}
		}
	}
	keys := slices.Sorted(maps.Keys(merged))
	if len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]kv.Entry, len(keys))
	for i, k := range keys {
		out[i] = kv.Entry{Key: k, Value: merged[k]}
	}
	return out, nil
}

// take ends a call that returned: it returns its writes as mutations (in key order) and moves
// them into the overlay under seq, the commit they become.
func (t *txKV) take(seq uint64) []store.Mutation {
	clear(t.sizes)
	t.before = t.used
	t.settle(t.shrunk)
	if len(t.pending) == 0 {
		return nil
	}
	keys := make([]string, 0, len(t.pending))
	for k := range t.pending {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	muts := make([]store.Mutation, 0, len(keys))
	t.mu.Lock()
	for _, k := range keys {
		v := t.pending[k]
		if v == nil {
			muts = append(muts, store.DeleteKV(t.g, []byte(k)))
		} else {
			muts = append(muts, store.SetKV(t.g, []byte(k), v))
		}
		t.overlay[k] = overlaid{val: v, seq: seq}
	}
	t.mu.Unlock()
	for _, k := range keys {
		v := t.pending[k]
		t.remember(k, v, v != nil)
	}
	clear(t.pending)
	return muts
}

// discard ends a call that trapped: its writes are dropped.
func (t *txKV) discard() {
	clear(t.pending)
	clear(t.sizes)
	t.used = t.before
	t.settle(t.grown)
}

// settle ends a call's charges to the owner, giving back n bytes.
func (t *txKV) settle(n int64) {
	t.free(n)
	t.grown, t.shrunk = 0, 0
}

// landed drops the overlay entries that commit seq (and so every earlier one) made durable.
func (t *txKV) landed(seq uint64) {
	t.mu.Lock()
	for k, o := range t.overlay {
		if o.seq <= seq {
			delete(t.overlay, k)
		}
	}
	t.mu.Unlock()
}
