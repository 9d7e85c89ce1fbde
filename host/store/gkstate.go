package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Gatekeeper account state: the gatekeeper's own atelier:host/kv for one connected account,
// kept apart from every workspace (an account is the user's, not a workspace's) and deleted
// with the account or its gatekeeper.
//
//	gkstate/<account id>/usage         8-byte big-endian bytes of its keys plus values
//	gkstate/<account id>/data/<key>    value
//
// The bucket is created by the first write, so files made before it need no migration.
var (
	bucketGKState = []byte("gkstate")
	subStateData  = []byte("data")
	keyStateUsage = []byte("usage")
)

// ErrStateQuota is returned by UpdateAccountState when the account's state would exceed its
// quota; nothing is written.
var ErrStateQuota = errors.New("the gatekeeper account's storage quota is exceeded")

// StateOp is one change of an account's state: Key set to Value, or deleted.
type StateOp struct {
	Delete bool
	Key    string
	Value  []byte
}

// StateEntry is one key of an account's state and its value.
type StateEntry struct {
	Key   string
	Value []byte
}

// AccountState returns the value under key in account's state, and whether it exists.
func (s *Bolt) AccountState(_ context.Context, account, key string) ([]byte, bool, error) {
	var out []byte
	found := false
	err := s.db.View(func(tx *bolt.Tx) error {
		if d := stateData(tx, account); d != nil {
			if v := d.Get([]byte(key)); v != nil {
				out, found = bytes.Clone(v), true
			}
		}
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("account %s state: %w", account, err)
	}
	return out, found, nil
}

// ListAccountState returns up to limit entries of account's state whose keys start with
// prefix, in key order.
func (s *Bolt) ListAccountState(_ context.Context, account, prefix string, limit int) ([]StateEntry, error) {
	var out []StateEntry
	err := s.db.View(func(tx *bolt.Tx) error {
		d := stateData(tx, account)
		if d == nil {
			return nil
		}
		c := d.Cursor()
		p := []byte(prefix)
		for k, v := c.Seek(p); k != nil && bytes.HasPrefix(k, p) && len(out) < limit; k, v = c.Next() {
			out = append(out, StateEntry{Key: string(k), Value: bytes.Clone(v)})
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list account %s state: %w", account, err)
	}
	return out, nil
}

// UpdateAccountState applies ops to account's state atomically and durably. It fails with
// ErrNotFound once the account was disconnected, and with ErrStateQuota (writing nothing)
// when the keys plus values would exceed quota bytes (quota <= 0: no limit).
func (s *Bolt) UpdateAccountState(_ context.Context, account string, ops []StateOp, quota int64) error {
	err := s.db.Update(func(tx *bolt.Tx) error {
		if tx.Bucket(bucketGKAccounts).Get([]byte(account)) == nil {
			return ErrNotFound
		}
		root, err := tx.CreateBucketIfNotExists(bucketGKState)
		if err != nil {
			return err
		}
		b, err := root.CreateBucketIfNotExists([]byte(account))
		if err != nil {
			return err
		}
		d, err := b.CreateBucketIfNotExists(subStateData)
		if err != nil {
			return err
		}
		var used int64
		if u := b.Get(keyStateUsage); len(u) == 8 {
			used = int64(binary.BigEndian.Uint64(u))
		}
		for _, op := range ops {
			k := []byte(op.Key)
			if old := d.Get(k); old != nil {
				used -= int64(len(k) + len(old))
			}
			if op.Delete {
				err = d.Delete(k)
			} else {
				used += int64(len(k) + len(op.Value))
				err = d.Put(k, bytes.Clone(op.Value))
			}
			if err != nil {
				return err
			}
		}
		if quota > 0 && used > quota {
			return ErrStateQuota // rolls the transaction back
		}
		return b.Put(keyStateUsage, binary.BigEndian.AppendUint64(nil, uint64(used)))
	})
	if err != nil {
		return fmt.Errorf("update account %s state: %w", account, err)
	}
	return nil
}

// stateData returns the data bucket of account's state, or nil when it has none.
func stateData(tx *bolt.Tx, account string) *bolt.Bucket {
	root := tx.Bucket(bucketGKState)
	if root == nil {
		return nil
	}
	b := root.Bucket([]byte(account))
	if b == nil {
		return nil
	}
	return b.Bucket(subStateData)
}

// deleteAccountState removes account's state, if any.
func deleteAccountState(tx *bolt.Tx, account []byte) error {
	root := tx.Bucket(bucketGKState)
	if root == nil || root.Bucket(account) == nil {
		return nil
	}
	return root.DeleteBucket(account)
}
