package kernel

import (
	"context"
	"maps"
	"slices"
	"strings"

	"atelier/host/capability/kv"
	"atelier/host/store"
)

// txKV is a gadget's kv.Store during calls: writes are buffered (reads see them) and become
// one Commit after the call. It is used only under the actor's call lock.
type txKV struct {
	ws      store.WorkspaceStore
	g       store.GadgetID
	pending map[string][]byte // key -> value; nil value: deleted
}

var _ kv.Store = (*txKV)(nil)

// Get implements kv.Store.
func (t *txKV) Get(_ context.Context, key string) ([]byte, bool, error) {
	if v, ok := t.pending[key]; ok {
		return slices.Clone(v), v != nil, nil
	}
	return t.ws.Get(t.g, []byte(key))
}

// Set implements kv.Store.
func (t *txKV) Set(_ context.Context, key string, value []byte) error {
	t.pending[key] = append([]byte{}, value...) // never nil: nil marks a deletion
	return nil
}

// Delete implements kv.Store.
func (t *txKV) Delete(_ context.Context, key string) error {
	t.pending[key] = nil
	return nil
}

// Batch implements kv.Store; the buffer makes it atomic with the rest of the call.
func (t *txKV) Batch(ctx context.Context, ops []kv.Op) error {
	for _, op := range ops {
		if op.Delete {
			_ = t.Delete(ctx, op.Key)
		} else {
			_ = t.Set(ctx, op.Key, op.Value)
		}
	}
	return nil
}

// List implements kv.Store: the committed entries with the buffered writes laid over them.
func (t *txKV) List(_ context.Context, prefix string, limit int) ([]kv.Entry, error) {
	merged := map[string][]byte{}
	want := limit + len(t.pending) // enough committed keys to survive the buffered deletions
	err := t.ws.List(t.g, []byte(prefix), func(k, v []byte) bool {
		merged[string(k)] = slices.Clone(v)
		return len(merged) < want
	})
	if err != nil {
		return nil, err
	}
	for k, v := range t.pending {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if v == nil {
			delete(merged, k)
		} else {
			merged[k] = slices.Clone(v)
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

// take returns the buffered writes as mutations (in key order) and empties the buffer.
func (t *txKV) take() []store.Mutation {
	if len(t.pending) == 0 {
		return nil
	}
	muts := make([]store.Mutation, 0, len(t.pending))
	for _, k := range slices.Sorted(maps.Keys(t.pending)) {
		if v := t.pending[k]; v == nil {
			muts = append(muts, store.DeleteKV(t.g, []byte(k)))
		} else {
			muts = append(muts, store.SetKV(t.g, []byte(k), v))
		}
	}
	clear(t.pending)
	return muts
}

// discard drops the buffered writes.
func (t *txKV) discard() { clear(t.pending) }
