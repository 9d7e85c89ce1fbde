package kv

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
)

// Store is one gadget's key-value state. The kernel implements it over its database; Memory is
// the in-memory implementation. Implementations must be safe for concurrent use, copy the
// byte slices they keep or return, and apply Batch atomically.
type Store interface {
	// Get returns the value under key, and whether it exists.
	Get(ctx context.Context, key string) ([]byte, bool, error)
	// Set stores value under key.
	Set(ctx context.Context, key string, value []byte) error
	// Delete removes key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns up to limit entries whose keys start with prefix, in key order.
	List(ctx context.Context, prefix string, limit int) ([]Entry, error)
	// Batch applies every op or none.
	Batch(ctx context.Context, ops []Op) error
}

// Entry is a stored key and its value.
type Entry struct {
	Key   string
	Value []byte
}

// Op is one step of a batch: a set of Key to Value, or a delete of Key.
type Op struct {
	Delete bool
	Key    string
	Value  []byte
}

// ErrQuota is returned by a Store whose write would exceed the gadget's storage quota.
var ErrQuota = errors.New("kv: storage quota exceeded")

// Memory is an in-memory Store with an optional quota on the total bytes of keys and values.
type Memory struct {
	quota int64

	mu   sync.Mutex // guards data and used
	data map[string][]byte
	used int64
}

// NewMemory returns an empty store; quota <= 0 means unlimited.
func NewMemory(quota int64) *Memory { return &Memory{quota: quota, data: make(map[string][]byte)} }

// Get implements Store.
func (m *Memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.data[key]
	return slices.Clone(v), ok, nil
}

// Set implements Store.
func (m *Memory) Set(ctx context.Context, key string, value []byte) error {
	return m.Batch(ctx, []Op{{Key: key, Value: value}})
}

// Delete implements Store.
func (m *Memory) Delete(ctx context.Context, key string) error {
	return m.Batch(ctx, []Op{{Delete: true, Key: key}})
}

// List implements Store.
func (m *Memory) List(_ context.Context, prefix string, limit int) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var keys []string
	for k := range m.data {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	if len(keys) > limit {
		keys = keys[:limit]
	}
	out := make([]Entry, len(keys))
	for i, k := range keys {
		out[i] = Entry{Key: k, Value: slices.Clone(m.data[k])}
	}
	return out, nil
}

// Batch implements Store: the quota is checked against the state after all ops, and nothing
// changes when it would be exceeded.
func (m *Memory) Batch(_ context.Context, ops []Op) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	sizes := make(map[string]int64) // key -> size after the batch (-1: deleted)
	for _, op := range ops {
		if op.Delete {
			sizes[op.Key] = -1
		} else {
			sizes[op.Key] = int64(len(op.Key) + len(op.Value))
		}
	}
	used := m.used
	for k, after := range sizes {
		if v, ok := m.data[k]; ok {
			used -= int64(len(k) + len(v))
		}
		if after > 0 {
			used += after
		}
	}
	if m.quota > 0 && used > m.quota {
		return ErrQuota
	}
	for _, op := range ops {
		if op.Delete {
			delete(m.data, op.Key)
		} else {
			m.data[op.Key] = slices.Clone(op.Value)
		}
	}
	m.used = used
	return nil
}
