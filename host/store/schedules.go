package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Schedules live in a workspace sub-bucket, and a server-wide index names every workspace's
// next due run, so a scheduler can find due work without opening every workspace. Both are
// written by the same commit and created by the first one that needs them (no migration).
var (
	subSchedules       = []byte("schedules")    // schedule id -> Schedule
	bucketScheduleNext = []byte("schedulenext") // workspace id NUL schedule id -> unix nanos of Next
)

// Schedule is a persistent hook of a workspace: call Method of gadget Gadget with Args every
// EveryMs milliseconds, or once at Next when EveryMs is zero. Creator is the user whose
// authority each run uses. Args is a JSON array.
type Schedule struct {
	ID      string          `json:"id"`
	Gadget  GadgetID        `json:"gadget"`
	Method  string          `json:"method"`
	Args    json.RawMessage `json:"args"`
	EveryMs int64           `json:"everyMs,omitempty"`
	Next    time.Time       `json:"next"`
	Creator string          `json:"creator"`
	// Agent is the creator's agent when an agent created it (its scope is checked too).
	Agent   string    `json:"agent,omitempty"`
	Created time.Time `json:"created"`
	// Runs counts the runs made; LastRun and LastError describe the latest one.
	Runs      int64     `json:"runs"`
	LastRun   time.Time `json:"lastRun,omitzero"`
	LastError string    `json:"lastError,omitempty"`
}

// DueSchedule names a workspace's schedule and when it is next due, from the server-wide index.
type DueSchedule struct {
	Workspace WorkspaceID
	Schedule  string
	Next      time.Time
}

// PutSchedule creates or replaces schedule s of the workspace.
func PutSchedule(s Schedule) Mutation { return Mutation{Kind: MutPutSchedule, Schedule: &s} }

// DeleteSchedule removes schedule id of the workspace (a missing one is not an error).
func DeleteSchedule(id string) Mutation {
	return Mutation{Kind: MutDeleteSchedule, Schedule: &Schedule{ID: id}}
}

// checkSchedule refuses a schedule mutation that cannot be applied.
func (m Mutation) checkSchedule() error {
	if m.Schedule == nil || m.Schedule.ID == "" || bytes.IndexByte([]byte(m.Schedule.ID), 0) >= 0 {
		return errors.New("schedule mutation without a valid id")
	}
	if m.Kind == MutPutSchedule && (m.Schedule.Gadget == "" || m.Schedule.Next.IsZero()) {
		return errors.New("schedule without a gadget or a next run")
	}
	return nil
}

func scheduleIndexKey(ws WorkspaceID, id string) []byte {
	return append(append([]byte(ws), 0), id...)
}

// applySchedule writes one schedule mutation into workspace bucket b and the index.
func applySchedule(tx *bolt.Tx, b *bolt.Bucket, ws WorkspaceID, m Mutation) error {
	idx, err := tx.CreateBucketIfNotExists(bucketScheduleNext)
	if err != nil {
		return err
	}
	key := scheduleIndexKey(ws, m.Schedule.ID)
	if m.Kind == MutDeleteSchedule {
		if sb := b.Bucket(subSchedules); sb != nil {
			if err := sb.Delete([]byte(m.Schedule.ID)); err != nil {
				return err
			}
		}
		return idx.Delete(key)
	}
	sb, err := b.CreateBucketIfNotExists(subSchedules)
	if err != nil {
		return err
	}
	if err := putJSON(sb, []byte(m.Schedule.ID), *m.Schedule); err != nil {
		return err
	}
	return idx.Put(key, binary.BigEndian.AppendUint64(nil, uint64(m.Schedule.Next.UnixNano())))
}

// dropScheduleIndex removes workspace ws's entries from the index (the workspace is deleted).
func dropScheduleIndex(tx *bolt.Tx, ws WorkspaceID) error {
	idx := tx.Bucket(bucketScheduleNext)
	if idx == nil {
		return nil
	}
	prefix := append([]byte(ws), 0)
	var keys [][]byte
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for _, k := range keys {
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Schedules implements WorkspaceStore.
func (w *boltWS) Schedules() ([]Schedule, error) {
	return listJSON[Schedule](w, subSchedules, "read schedules")
}

// DueSchedules lists every workspace's schedules due at or before before, from the index.
func (s *Bolt) DueSchedules(_ context.Context, before time.Time) ([]DueSchedule, error) {
	var out []DueSchedule
	err := s.db.View(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bucketScheduleNext)
		if idx == nil {
			return nil
		}
		return idx.ForEach(func(k, v []byte) error {
			i := bytes.IndexByte(k, 0)
			if i < 0 || len(v) != 8 {
				return fmt.Errorf("bad schedule index entry %q", k)
			}
			next := time.Unix(0, int64(binary.BigEndian.Uint64(v)))
			if !next.After(before) {
				out = append(out, DueSchedule{Workspace: WorkspaceID(k[:i]), Schedule: string(k[i+1:]), Next: next})
			}
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list due schedules: %w", err)
	}
	return out, nil
}
