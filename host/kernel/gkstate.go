package kernel

import (
	"context"
	"errors"
	"fmt"

	"atelier/host/capability/kv"
	"atelier/host/store"
)

// accountKV is a gatekeeper account's own atelier:host/kv: durable in the store, shared by
// every instance of the account (gadget bindings, Code Mode sessions, decisions), deleted
// with the account. Each write is committed before the guest's call returns. Instances of one
// account that run at the same time see each other's writes; a gatekeeper that needs
// read-modify-write atomicity across them uses batch.
type accountKV struct {
	st      store.Store
	account string
	quota   int64
}

var _ kv.Store = (*accountKV)(nil)

// Get implements kv.Store.
func (a *accountKV) Get(ctx context.Context, key string) ([]byte, bool, error) {
	return a.st.AccountState(ctx, a.account, key)
}

// Set implements kv.Store.
func (a *accountKV) Set(ctx context.Context, key string, value []byte) error {
	return a.Batch(ctx, []kv.Op{{Key: key, Value: value}})
}

// Delete implements kv.Store.
func (a *accountKV) Delete(ctx context.Context, key string) error {
	return a.Batch(ctx, []kv.Op{{Delete: true, Key: key}})
}

// List implements kv.Store.
func (a *accountKV) List(ctx context.Context, prefix string, limit int) ([]kv.Entry, error) {
	es, err := a.st.ListAccountState(ctx, a.account, prefix, limit)
	if err != nil {
		return nil, err
	}
	out := make([]kv.Entry, len(es))
	for i, e := range es {
		out[i] = kv.Entry{Key: e.Key, Value: e.Value}
	}
	return out, nil
}

// Batch implements kv.Store: all ops or none, within the account's quota.
func (a *accountKV) Batch(ctx context.Context, ops []kv.Op) error {
	sops := make([]store.StateOp, len(ops))
	for i, op := range ops {
		sops[i] = store.StateOp{Delete: op.Delete, Key: op.Key, Value: op.Value}
	}
	err := a.st.UpdateAccountState(ctx, a.account, sops, a.quota)
	switch {
	case errors.Is(err, store.ErrStateQuota):
		return fmt.Errorf("%w (%d bytes per gatekeeper account)", kv.ErrQuota, a.quota)
	case errors.Is(err, store.ErrNotFound):
		return errors.New("the gatekeeper account was disconnected")
	}
	return err
}
