package store

import (
	"bytes"
	"context"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Entry is one key of a gadget's state and its value.
type Entry struct {
	Key   string
	Value []byte
}

// Op is one step of an atomic batch: a set of Key to Value, or a delete of Key.
type Op struct {
	Delete bool
	Key    string
	Value  []byte
}

// State is one gadget's key-value state in the data file. Values returned are copies.
type State struct {
	db     *bolt.DB
	gadget []byte
}

// State returns the key-value state of gadget name. It fails on use when the gadget does not
// exist (or was deleted).
func (s *DB) State(name string) *State { return &State{db: s.db, gadget: []byte(name)} }

func (st *State) bucket(tx *bolt.Tx) (*bolt.Bucket, error) {
	b := tx.Bucket(bucketState).Bucket(st.gadget)
	if b == nil {
		return nil, fmt.Errorf("state of gadget %s: %w", st.gadget, ErrNotFound)
	}
	return b, nil
}

// Get returns the value under key and whether it exists.
func (st *State) Get(_ context.Context, key string) ([]byte, bool, error) {
	var val []byte
	var ok bool
	err := st.db.View(func(tx *bolt.Tx) error {
		b, err := st.bucket(tx)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(key)); v != nil {
			val, ok = bytes.Clone(v), true
		}
		return nil
	})
	return val, ok, err
}

// Set stores value under key.
func (st *State) Set(ctx context.Context, key string, value []byte) error {
	return st.Batch(ctx, []Op{{Key: key, Value: value}})
}

// Delete removes key; a missing key is not an error.
func (st *State) Delete(ctx context.Context, key string) error {
	return st.Batch(ctx, []Op{{Delete: true, Key: key}})
}

// List returns up to limit entries whose keys start with prefix, in key order.
func (st *State) List(_ context.Context, prefix string, limit int) ([]Entry, error) {
	var out []Entry
	err := st.db.View(func(tx *bolt.Tx) error {
		b, err := st.bucket(tx)
		if err != nil {
			return err
		}
		p := []byte(prefix)
		c := b.Cursor()
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
			out = append(out, Entry{Key: string(k), Value: bytes.Clone(v)})
		}
		return nil
	})
	return out, err
}

// Batch applies every op in one transaction: all of them or, on error, none.
func (st *State) Batch(_ context.Context, ops []Op) error {
	return st.db.Update(func(tx *bolt.Tx) error {
		b, err := st.bucket(tx)
		if err != nil {
			return err
		}
		for _, op := range ops {
			if op.Delete {
				err = b.Delete([]byte(op.Key))
			} else {
				err = b.Put([]byte(op.Key), op.Value)
			}
			if err != nil {
				return fmt.Errorf("state of gadget %s: key %q: %w", st.gadget, op.Key, err)
			}
		}
		return nil
	})
}
