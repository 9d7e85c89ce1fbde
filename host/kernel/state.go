package kernel

import (
	"context"

	"atelier/host/capability/kv"
	"atelier/host/store"
)

// stateStore lets the kv capability use a gadget's state in the store.
type stateStore struct{ st *store.State }

func (s stateStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return s.st.Get(ctx, key)
}

func (s stateStore) Set(ctx context.Context, key string, value []byte) error {
	return s.st.Set(ctx, key, value)
}

func (s stateStore) Delete(ctx context.Context, key string) error { return s.st.Delete(ctx, key) }

func (s stateStore) List(ctx context.Context, prefix string, limit int) ([]kv.Entry, error) {
	es, err := s.st.List(ctx, prefix, limit)
	out := make([]kv.Entry, len(es))
	for i, e := range es {
		out[i] = kv.Entry{Key: e.Key, Value: e.Value}
	}
	return out, err
}

func (s stateStore) Batch(ctx context.Context, ops []kv.Op) error {
	sops := make([]store.Op, len(ops))
	for i, op := range ops {
		sops[i] = store.Op{Delete: op.Delete, Key: op.Key, Value: op.Value}
	}
	return s.st.Batch(ctx, sops)
}
