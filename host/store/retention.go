package store

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Retention bounds the logs that grow with use: each workspace keeps its newest Audit audit
// lines and, of its gatekeeper action log, the entries among its newest Actions IDs plus every
// action still pending (a pending action is never dropped). Older entries are deleted by the
// commits that append new ones, at most trimBatch per commit, so that lowering a limit on a
// large file spreads the work. Zero fields take the defaults.
type Retention struct {
	// Audit is the number of audit lines kept per workspace (default 100,000).
	Audit uint64
	// Actions is the span of action IDs kept per workspace (default 100,000).
	Actions uint64
}

// Default retention limits.
const (
	DefaultAuditRetention   = 100_000
	DefaultActionsRetention = 100_000
	// trimBatch bounds the entries one commit deletes per log.
	trimBatch = 1000
)

func (r Retention) withDefaults() Retention {
	if r.Audit == 0 {
		r.Audit = DefaultAuditRetention
	}
	if r.Actions == 0 {
		r.Actions = DefaultActionsRetention
	}
	return r
}

// SetRetention sets the retention limits; call it before the store is used, or at least
// while no commit is in flight (a replica's applier calls it between log entries).
func (s *Bolt) SetRetention(r Retention) { s.retention = r.withDefaults() }

// trimAudit deletes the audit lines of ab beyond the newest keep, given that newest is the
// sequence number just appended (sequence numbers are never reused and lines are only
// deleted from the oldest end, so newest-first+1 is the count).
func trimAudit(ab *bolt.Bucket, newest, keep uint64) error {
	if newest <= keep {
		return nil
	}
	var old [][]byte
	c := ab.Cursor()
	for k, _ := c.First(); k != nil && len(old) < trimBatch; k, _ = c.Next() {
		if binary.BigEndian.Uint64(k) > newest-keep {
			break
		}
		old = append(old, bytes.Clone(k))
	}
	return deleteKeys(ab, old)
}

// trimActions deletes the entries of the action log ab whose IDs are not among the newest keep,
// except pending actions.
func trimActions(ab *bolt.Bucket, keep uint64) error {
	c := ab.Cursor()
	last, _ := c.Last()
	if last == nil {
		return nil
	}
	newest := binary.BigEndian.Uint64(last)
	if newest <= keep {
		return nil
	}
	var old [][]byte
	for k, v := c.First(); k != nil && len(old) < trimBatch; k, v = c.Next() {
		if binary.BigEndian.Uint64(k) > newest-keep {
			break
		}
		var a struct {
			State string `json:"state"`
		}
		if err := json.Unmarshal(v, &a); err != nil {
			return fmt.Errorf("corrupt action %x: %w", k, err)
		}
		if a.State != StatePending {
			old = append(old, bytes.Clone(k))
		}
	}
	return deleteKeys(ab, old)
}

// deleteKeys deletes keys (collected before, as a cursor must not delete while it walks).
func deleteKeys(bk *bolt.Bucket, keys [][]byte) error {
	for _, k := range keys {
		if err := bk.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
