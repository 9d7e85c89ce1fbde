// Package kv implements atelier:host/kv: a gadget's own durable key-value state. The functions
// check the limits, then call the Store bound to the instance
// (runtime.InstanceConfig.Bind[kv.Grant]); without a binding each instance gets an empty
// Memory store of its own.
package kv

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

	"atelier/capnweb/ordered"
	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:host/kv@0.1.0"
	Grant     = "atelier:host/kv"
)

// Limits bound what a guest may ask for. Zero fields take the defaults below.
type Limits struct {
	// MaxKey is the longest key in bytes (default 512).
	MaxKey int
	// MaxValue is the largest value in bytes (default 1 MiB).
	MaxValue int
	// MaxList caps the `limit` of list (default 1000).
	MaxList int
	// MaxBatch caps the ops of one batch (default 1000).
	MaxBatch int
}

func (l Limits) withDefaults() Limits {
	if l.MaxKey <= 0 {
		l.MaxKey = 512
	}
	if l.MaxValue <= 0 {
		l.MaxValue = 1 << 20
	}
	if l.MaxList <= 0 {
		l.MaxList = 1000
	}
	if l.MaxBatch <= 0 {
		l.MaxBatch = 1000
	}
	return l
}

// New returns the host interface.
func New(lim Limits) runtime.HostInterface {
	c := &capability{lim: lim.withDefaults()}
	return runtime.HostInterface{
		Name: Interface,
		Funcs: []runtime.HostFunc{
			{Name: "get", Func: c.get},
			{Name: "set", Func: c.set},
			{Name: "delete", Func: c.delete},
			{Name: "list", Func: c.list},
			{Name: "batch", Func: c.batch},
		},
		NewState: func(info runtime.InstanceInfo) (any, error) {
			if info.Bind == nil {
				return NewMemory(0), nil
			}
			s, ok := info.Bind.(Store)
			if !ok {
				return nil, fmt.Errorf("kv: binding is %T, want a kv.Store", info.Bind)
			}
			return s, nil
		},
	}
}

type capability struct{ lim Limits }

// kvError returns the WIT `error` variant as a result error.
func kvError(tag, msg string) error {
	return runtime.Fail(map[string]any{"tag": tag, "val": msg})
}

// CheckKey reports whether key is a valid key under l: 1 to MaxKey bytes of UTF-8.
func (l Limits) CheckKey(key string) error {
	l = l.withDefaults()
	if key == "" || len(key) > l.MaxKey || !utf8.ValidString(key) {
		return fmt.Errorf("keys are 1 to %d bytes of UTF-8", l.MaxKey)
	}
	return nil
}

// CheckValue reports whether v fits under l's MaxValue.
func (l Limits) CheckValue(v []byte) error {
	l = l.withDefaults()
	if len(v) > l.MaxValue {
		return fmt.Errorf("value of %d bytes exceeds %d", len(v), l.MaxValue)
	}
	return nil
}

func (c *capability) checkKey(key string) error {
	if err := c.lim.CheckKey(key); err != nil {
		return kvError("invalid-key", err.Error())
	}
	return nil
}

func (c *capability) checkValue(v []byte) error {
	if err := c.lim.CheckValue(v); err != nil {
		return kvError("quota-exceeded", err.Error())
	}
	return nil
}

// storeError maps a Store failure to the WIT error variant.
func storeError(err error) error {
	if errors.Is(err, ErrQuota) {
		return kvError("quota-exceeded", err.Error())
	}
	return kvError("io", err.Error())
}

func (c *capability) get(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	key := args[0].(string)
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	v, ok, err := call.State().(Store).Get(ctx, key)
	if err != nil {
		return nil, storeError(err)
	}
	if !ok {
		return nil, nil
	}
	return v, nil
}

func (c *capability) set(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	key, value := args[0].(string), args[1].([]byte)
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	if err := c.checkValue(value); err != nil {
		return nil, err
	}
	if err := call.State().(Store).Set(ctx, key, value); err != nil {
		return nil, storeError(err)
	}
	return nil, nil
}

func (c *capability) delete(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	key := args[0].(string)
	if err := c.checkKey(key); err != nil {
		return nil, err
	}
	if err := call.State().(Store).Delete(ctx, key); err != nil {
		return nil, storeError(err)
	}
	return nil, nil
}

func (c *capability) list(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	prefix, limit := args[0].(string), int(args[1].(uint32))
	if len(prefix) > c.lim.MaxKey {
		return nil, kvError("invalid-key", "prefix longer than the longest key")
	}
	limit = min(limit, c.lim.MaxList)
	entries, err := call.State().(Store).List(ctx, prefix, limit)
	if err != nil {
		return nil, storeError(err)
	}
	out := make([]any, len(entries))
	for i, e := range entries {
		out[i] = map[string]any{"key": e.Key, "value": e.Value}
	}
	return out, nil
}

func (c *capability) batch(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	raw := args[0].([]any)
	if len(raw) > c.lim.MaxBatch {
		return nil, kvError("quota-exceeded", fmt.Sprintf("batch of %d ops exceeds %d", len(raw), c.lim.MaxBatch))
	}
	ops := make([]Op, len(raw))
	for i, r := range raw {
		v := r.(map[string]any)
		switch v["tag"] {
		case "set":
			e := v["val"].(ordered.Object) // a record, as wit.Lift makes it
			ops[i] = Op{Key: e.Value("key").(string), Value: e.Value("value").([]byte)}
			if err := c.checkValue(ops[i].Value); err != nil {
				return nil, err
			}
		default: // "delete": the only other case of the WIT variant
			ops[i] = Op{Delete: true, Key: v["val"].(string)}
		}
		if err := c.checkKey(ops[i].Key); err != nil {
			return nil, err
		}
	}
	if err := call.State().(Store).Batch(ctx, ops); err != nil {
		return nil, storeError(err)
	}
	return nil, nil
}
