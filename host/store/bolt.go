package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SchemaVersion is the layout version Bolt reads and writes. Layout (schema 3):
//
//	meta/schema                 "3"
//	meta/bootstrapped           set once the first-run admin token was issued
//	meta/replica                set in a cluster node's replica of the log (Options.Replica)
//	users/<id>                  JSON User
//	usernames/<name>            user id
//	tokens/<sha256 hex>         JSON Token
//	agents/<id>                 JSON Agent
//	workspaces/<id>             JSON Workspace
//	access/<user id>/<ws id>    role: the workspaces a user owns or collaborates on
//	ws/<id>/epoch               8-byte big-endian Epoch of the current lease
//	ws/<id>/gadgets/<gadget id> JSON Gadget
//	ws/<id>/state/<gadget id>/<key>   the gadget's key-value state
//	ws/<id>/usage/<gadget id>   8-byte big-endian bytes of the gadget's keys plus values
//	ws/<id>/audit/<8-byte seq>  JSON AuditEntry
//	code/<sha256 hex>           component bytes, shared by every version and blueprint using them
//	coderefs/<sha256 hex>       8-byte big-endian count of the gadgets and blueprints using them
//	blueprints/<id>             JSON Blueprint
//	models/<id>                 JSON Model (models.go; created on Open, no migration)
//	meta/agentinstructions      the admin's instructions for every agent (models.go)
//
// Schema 1 (the single-user preview: gadgets/<name>, code/<sha>, state/<name>/<key>) is
// migrated on Open into a workspace named "default" owned by the user "admin". Schema 2 lacks
// usage and coderefs; they are computed on Open.
const SchemaVersion = 3

var (
	bucketMeta       = []byte("meta")
	bucketUsers      = []byte("users")
	bucketUsernames  = []byte("usernames")
	bucketTokens     = []byte("tokens")
	bucketAgents     = []byte("agents")
	bucketWorkspaces = []byte("workspaces")
	bucketAccess     = []byte("access")
	bucketWS         = []byte("ws")
	bucketCode       = []byte("code")
	bucketBlueprints = []byte("blueprints")
	bucketCodeRefs   = []byte("coderefs")

	keySchema       = []byte("schema")
	keyBootstrapped = []byte("bootstrapped")
	keyReplica      = []byte("replica") // set in a replica's file (Options.Replica)
	keyEpoch        = []byte("epoch")
	subGadgets      = []byte("gadgets")
	subState        = []byte("state")
	subAudit        = []byte("audit")
	subUsage        = []byte("usage")
)

// Bolt is the Store over one bbolt file. It is safe for concurrent use. Commits of all
// workspaces go through one committer goroutine that applies every commit waiting at that
// moment in one bbolt transaction (one fsync), so concurrent calls share the disk flush.
type Bolt struct {
	db   *bolt.DB
	now  func() time.Time
	node NodeID

	commits chan *commitReq
	stop    chan struct{}
	stopped sync.WaitGroup
	cmu     sync.RWMutex // held for reading while a commit is queued; guards closed
	closed  bool

	mu     sync.Mutex // guards leases
	leases map[WorkspaceID]*lease

	retention Retention // set while no commit is in flight (SetRetention)

	grouped, groups atomic.Int64 // commits applied, and the transactions they took
}

// Options tune how a data file is opened.
type Options struct {
	// Replica opens a file that is rebuilt from a durable source (a cluster node's replica of
	// the log): writes are not fsync'd, and the file is marked so that RemoveReplica may
	// delete it. Never for the data of a single node.
	Replica bool
}

// Open opens (creating if needed) the data file at path and migrates it to SchemaVersion.
func Open(path string) (*Bolt, error) { return OpenWith(path, Options{}) }

// OpenWith is Open with options.
func OpenWith(path string, o Options) (*Bolt, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	// The freelist is not written on every commit (it is rebuilt by a scan when the file is
	// opened), which keeps each fsync'd commit small; the map freelist keeps that fast.
	db, err := bolt.Open(path, 0o600, &bolt.Options{
		Timeout: 2 * time.Second, NoFreelistSync: true, FreelistType: bolt.FreelistMapType, NoSync: o.Replica,
	})
	if err != nil {
		if errors.Is(err, bolt.ErrTimeout) {
			return nil, fmt.Errorf("open store %s: another atelier process holds it; stop it or pass another --data", path)
		}
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	s := &Bolt{db: db, now: time.Now, node: "local", commits: make(chan *commitReq, 256), stop: make(chan struct{}), leases: map[WorkspaceID]*lease{}, retention: Retention{}.withDefaults()}
	if err := s.migrate(); err != nil {
		db.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	if o.Replica {
		if err := db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyReplica, []byte("1")) }); err != nil {
			db.Close()
			return nil, fmt.Errorf("open store %s: %w", path, err)
		}
	}
	s.stopped.Add(1)
	go s.commitLoop()
	return s, nil
}

// Snapshot starts a consistent copy of the whole data file as of now: a read transaction,
// so commits go on meanwhile and are not in the copy. A cluster node snapshots its replica
// this way; the copy opens like any data file. Close it soon: while it is open the file
// cannot reuse the pages commits free, nor grow its memory map.
func (s *Bolt) Snapshot() (*Snapshot, error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return &Snapshot{tx: tx}, nil
}

// Snapshot is a copy of a data file in progress (Bolt.Snapshot).
type Snapshot struct{ tx *bolt.Tx }

// WriteTo writes the data file, as of the snapshot, to w.
func (sn *Snapshot) WriteTo(w io.Writer) (int64, error) { return sn.tx.WriteTo(w) }

// Close ends the snapshot.
func (sn *Snapshot) Close() error { return sn.tx.Rollback() }

// RemoveReplica deletes the file at path if it is a replica (opened with Options.Replica) or
// does not exist; it refuses any other file, so that a misconfigured path never deletes a
// single node's data.
func RemoveReplica(path string) error {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, ReadOnly: true})
	if err != nil {
		return fmt.Errorf("remove replica %s: %w", path, err)
	}
	marked := false
	err = db.View(func(tx *bolt.Tx) error {
		if meta := tx.Bucket(bucketMeta); meta != nil && meta.Get(keyReplica) != nil {
			marked = true
		}
		return nil
	})
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("remove replica %s: %w", path, err)
	}
	if !marked {
		return fmt.Errorf("remove replica %s: the file is not a replica of a cluster's log; refusing to delete it", path)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove replica %s: %w", path, err)
	}
	return nil
}

// Close stops the committer and closes the file. Every lease is lost.
func (s *Bolt) Close() error {
	s.cmu.Lock()
	if s.closed {
		s.cmu.Unlock()
		return nil
	}
	s.closed = true
	s.cmu.Unlock()
	close(s.stop)
	s.stopped.Wait()
	s.mu.Lock()
	for _, l := range s.leases {
		l.lose()
	}
	s.leases = map[WorkspaceID]*lease{}
	s.mu.Unlock()
	return s.db.Close()
}

// migrate creates the buckets of a new file, upgrades schema 1, and refuses a newer file.
func (s *Bolt) migrate() error {
	return s.db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		have := 0
		if v := meta.Get(keySchema); v != nil {
			if _, err := fmt.Sscan(string(v), &have); err != nil {
				return fmt.Errorf("schema version %q is not a number", v)
			}
		}
		if have > SchemaVersion {
			return fmt.Errorf("data file has schema version %d, this atelier reads up to %d: upgrade atelier", have, SchemaVersion)
		}
		for _, b := range [][]byte{bucketUsers, bucketUsernames, bucketTokens, bucketAgents, bucketWorkspaces, bucketAccess, bucketWS, bucketCode, bucketBlueprints, bucketGatekeepers, bucketGKArchives, bucketGKAccounts, bucketModels} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		if have == 1 {
			if err := migrateV1(tx, s.now().UTC()); err != nil {
				return fmt.Errorf("migrate schema 1 to 2: %w", err)
			}
		}
		if have < 3 {
			if err := migrateV3(tx); err != nil {
				return fmt.Errorf("migrate schema %d to 3: %w", max(have, 2), err)
			}
		}
		return meta.Put(keySchema, fmt.Appendf(nil, "%d", SchemaVersion))
	})
}

func getJSON(b *bolt.Bucket, key []byte, v any) error {
	data := b.Get(key)
	if data == nil {
		return ErrNotFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("corrupt record %s: %w", key, err)
	}
	return nil
}

func putJSON(b *bolt.Bucket, key []byte, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(key, data)
}

// listJSON returns every record of the workspace's sub-bucket sub, in key order (none when the
// bucket was never written); what names the records in errors.
func listJSON[T any](w *boltWS, sub []byte, what string) ([]T, error) {
	var out []T
	err := w.view(func(b *bolt.Bucket) error {
		sb := b.Bucket(sub)
		if sb == nil {
			return nil
		}
		return forEachJSON(sb, func(x T) error {
			out = append(out, x)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

// forEachJSON decodes every value of b into a new T and calls fn.
func forEachJSON[T any](b *bolt.Bucket, fn func(T) error) error {
	return b.ForEach(func(k, v []byte) error {
		var x T
		if err := json.Unmarshal(v, &x); err != nil {
			return fmt.Errorf("corrupt record %s: %w", k, err)
		}
		return fn(x)
	})
}

// Code implements Store.
func (s *Bolt) Code(_ context.Context, sha string) ([]byte, error) {
	var code []byte
	err := s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketCode).Get([]byte(sha))
		if c == nil {
			return fmt.Errorf("code %s: %w", sha, ErrNotFound)
		}
		code = bytes.Clone(c)
		return nil
	})
	return code, err
}
