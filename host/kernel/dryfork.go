package kernel

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"maps"
	"slices"
	"strings"

	"atelier/host/capability/kv"
	"atelier/host/store"
)

// forkKV is a kv.Store in a dry run: a copy-on-write fork of committed state (a gadget's, or
// a gatekeeper account's). Reads see the fork's writes over the committed state; writes stay
// in the fork. For every key it touched it records a digest of the committed value it first
// saw, and for every list a digest of what the committed state returned, so that a commit can
// tell whether the state moved since the fork; for every key it wrote it keeps the committed
// value, for the diff. Everything it holds is charged to the dry run's budget. Calls run one
// at a time (the shadow's turn): a call's writes are its own until it returns (take) or traps
// (discard).
type forkKV struct {
	base   kvBase
	budget *dryBudget

	writes  map[string][]byte // the fork's writes: key -> value (nil: deleted)
	pending map[string][]byte // the running call's writes
	cost    map[string]int64  // what the key's newest write (pending, else writes) is charged
	seen    map[string][32]byte
	olds    map[string]cached // the committed value of each written key
	lists   map[listRead][32]byte
}

// kvBase reads committed state.
type kvBase interface {
	get(ctx context.Context, key string) ([]byte, bool, error)
	list(ctx context.Context, prefix string, limit int) ([]kv.Entry, error)
}

// listRead is one List a fork passed to its base.
type listRead struct {
	prefix string
	limit  int
}

// forkEntry is what one recorded key or list costs beyond its bytes (maps, digest).
const forkEntry = 96

var _ kv.Store = (*forkKV)(nil)

func newForkKV(base kvBase, budget *dryBudget) *forkKV {
	return &forkKV{base: base, budget: budget, writes: map[string][]byte{}, pending: map[string][]byte{}, cost: map[string]int64{},
		seen: map[string][32]byte{}, olds: map[string]cached{}, lists: map[listRead][32]byte{}}
}

// valueDigest is the digest of a committed value (ok false: absent).
func valueDigest(v []byte, ok bool) [32]byte {
	if !ok {
		return sha256.Sum256(nil)
	}
	return sha256.Sum256(append([]byte{1}, v...))
}

// listDigest is the digest of a committed list.
func listDigest(es []kv.Entry) [32]byte {
	h := sha256.New()
	var n [8]byte
	for _, e := range es {
		for _, b := range [][]byte{[]byte(e.Key), e.Value} {
			binary.BigEndian.PutUint64(n[:], uint64(len(b)))
			h.Write(n[:])
			h.Write(b)
		}
	}
	var d [32]byte
	h.Sum(d[:0])
	return d
}

// committed reads key from the base, recording the digest of the first value seen.
func (f *forkKV) committed(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := f.base.get(ctx, key)
	if err != nil {
		return nil, false, err
	}
	if _, had := f.seen[key]; !had {
		if err := f.budget.charge(int64(len(key) + forkEntry)); err != nil {
			return nil, false, err
		}
		f.seen[key] = valueDigest(v, ok)
	}
	return v, ok, nil
}

// top returns the fork's newest write of key, if any.
func (f *forkKV) top(key string) ([]byte, bool) {
	if v, ok := f.pending[key]; ok {
		return v, true
	}
	v, ok := f.writes[key]
	return v, ok
}

// Get implements kv.Store.
func (f *forkKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	if v, ok := f.top(key); ok {
		return slices.Clone(v), v != nil, nil
	}
	return f.committed(ctx, key)
}

// Set implements kv.Store.
func (f *forkKV) Set(ctx context.Context, key string, value []byte) error {
	return f.Batch(ctx, []kv.Op{{Key: key, Value: value}})
}

// Delete implements kv.Store.
func (f *forkKV) Delete(ctx context.Context, key string) error {
	return f.Batch(ctx, []kv.Op{{Delete: true, Key: key}})
}

// Batch implements kv.Store: every op goes into the running call's writes, or, when the dry
// run's budget cannot hold them, none does.
func (f *forkKV) Batch(ctx context.Context, ops []kv.Op) error {
	for _, op := range ops { // the committed value of each newly written key, for the diff
		if _, ok := f.olds[op.Key]; ok {
			continue
		}
		v, ok, err := f.committed(ctx, op.Key)
		if err != nil {
			return err
		}
		if err := f.budget.charge(int64(len(v))); err != nil {
			return err
		}
		f.olds[op.Key] = cached{val: v, ok: ok}
	}
	next := make(map[string]int64, len(ops))
	delta := int64(0)
	for _, op := range ops {
		c := int64(len(op.Key) + len(op.Value) + forkEntry)
		prev, ok := next[op.Key]
		if !ok {
			prev = f.cost[op.Key]
		}
		delta += c - prev
		next[op.Key] = c
	}
	if err := f.budget.charge(delta); err != nil {
		return err
	}
	maps.Copy(f.cost, next)
	for _, op := range ops {
		if op.Delete {
			f.pending[op.Key] = nil
		} else {
			f.pending[op.Key] = append([]byte{}, op.Value...) // never nil: nil marks a deletion
		}
	}
	return nil
}

// List implements kv.Store: the committed entries with the fork's writes laid over them.
func (f *forkKV) List(ctx context.Context, prefix string, limit int) ([]kv.Entry, error) {
	want := limit + f.deleted(prefix) // enough committed keys to survive the fork's deletions
	es, err := f.base.list(ctx, prefix, want)
	if err != nil {
		return nil, err
	}
	r := listRead{prefix: prefix, limit: want}
	if _, had := f.lists[r]; !had {
		if err := f.budget.charge(int64(len(prefix) + forkEntry)); err != nil {
			return nil, err
		}
		f.lists[r] = listDigest(es)
	}
	merged := make(map[string][]byte, len(es))
	for _, e := range es {
		merged[e.Key] = e.Value
	}
	for _, layer := range []map[string][]byte{f.writes, f.pending} {
		for k, v := range layer {
			if !strings.HasPrefix(k, prefix) {
				continue
			}
			if v == nil {
				delete(merged, k)
			} else {
				merged[k] = v
			}
		}
	}
	keys := slices.Sorted(maps.Keys(merged))
	if len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]kv.Entry, len(keys))
	for i, k := range keys {
		out[i] = kv.Entry{Key: k, Value: slices.Clone(merged[k])}
	}
	return out, nil
}

// deleted counts the keys under prefix that the fork deletes.
func (f *forkKV) deleted(prefix string) int {
	n := 0
	for k, v := range f.pending {
		if v == nil && strings.HasPrefix(k, prefix) {
			n++
		}
	}
	for k, v := range f.writes {
		if _, ok := f.pending[k]; !ok && v == nil && strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// take ends a call that returned: its writes join the fork's.
func (f *forkKV) take() {
	maps.Copy(f.writes, f.pending)
	clear(f.pending)
}

// discard ends a call that trapped: its writes are dropped and their charge given back.
func (f *forkKV) discard() {
	for k := range f.pending {
		c := int64(0)
		if v, ok := f.writes[k]; ok {
			c = int64(len(k) + len(v) + forkEntry)
		}
		_ = f.budget.charge(c - f.cost[k]) // giving back never fails
		f.cost[k] = c
	}
	clear(f.pending)
}

// moved returns the first key or list the fork read whose committed state is no longer what
// it saw ("" when none moved).
func (f *forkKV) moved(ctx context.Context) (string, error) {
	for _, k := range slices.Sorted(maps.Keys(f.seen)) {
		v, ok, err := f.base.get(ctx, k)
		if err != nil {
			return "", err
		}
		if valueDigest(v, ok) != f.seen[k] {
			return fmt.Sprintf("key %q", k), nil
		}
	}
	for r, d := range f.lists {
		es, err := f.base.list(ctx, r.prefix, r.limit)
		if err != nil {
			return "", err
		}
		if listDigest(es) != d {
			return fmt.Sprintf("the keys listed under prefix %q", r.prefix), nil
		}
	}
	return "", nil
}

// mutations are the fork's writes to gadget g, in key order.
func (f *forkKV) mutations(g store.GadgetID) []store.Mutation {
	out := make([]store.Mutation, 0, len(f.writes))
	for _, k := range slices.Sorted(maps.Keys(f.writes)) {
		if v := f.writes[k]; v == nil {
			out = append(out, store.DeleteKV(g, []byte(k)))
		} else {
			out = append(out, store.SetKV(g, []byte(k), v))
		}
	}
	return out
}

// growth is the bytes (keys plus values) the fork's writes add to the committed state; it
// is negative when they free more than they add.
func (f *forkKV) growth() int64 {
	n := int64(0)
	for k, v := range f.writes {
		old := f.olds[k]
		n += entrySize(k, valueSize(v, v != nil)) - entrySize(k, valueSize(old.val, old.ok))
	}
	return n
}

// gadgetBase reads a gadget's committed state.
type gadgetBase struct {
	ws store.WorkspaceStore
	g  store.GadgetID
}

func (b gadgetBase) get(_ context.Context, key string) ([]byte, bool, error) {
	return b.ws.Get(b.g, []byte(key))
}

func (b gadgetBase) list(_ context.Context, prefix string, limit int) ([]kv.Entry, error) {
	var out []kv.Entry
	if limit <= 0 {
		return out, nil
	}
	err := b.ws.List(b.g, []byte(prefix), func(k, v []byte) bool {
		out = append(out, kv.Entry{Key: string(k), Value: slices.Clone(v)})
		return len(out) < limit
	})
	return out, err
}

// accountBase reads a gatekeeper account's committed state.
type accountBase struct{ a *accountKV }

func (b accountBase) get(ctx context.Context, key string) ([]byte, bool, error) {
	return b.a.Get(ctx, key)
}

func (b accountBase) list(ctx context.Context, prefix string, limit int) ([]kv.Entry, error) {
	return b.a.List(ctx, prefix, limit)
}
