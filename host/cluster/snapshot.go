package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// Compaction of the log.
//
// A snapshot is a replica as of one log entry S: its bbolt file ("<S>.db" in the object store
// ATL_SNAPSHOTS) and the applier's state kept beside it ("<S>.json": the epoch of every acquired
// workspace and the retention limits). Key "latest" of the KV bucket ATL_SNAPSHOT holds the
// newest S; it only moves forward, by compare-and-set, so two nodes that snapshot at once
// cannot move it back. A starting node loads the newest snapshot and applies only the entries
// after it.
//
// Once a snapshot is the newest, the entries up to the one before it are purged from the log
// (so that a node that is just loading that one still finds the entries after it), never past
// what a live node has applied, and the workspaces' epoch entries are kept: the last sequence
// of each epoch subject is the fencing token the server checks on every commit. Snapshots
// older than the one before the newest are deleted.
const (
	snapshotObjects = "ATL_SNAPSHOTS"
	snapshotKV      = "ATL_SNAPSHOT"
	latestKey       = "latest"
	// compactCheck is how often the compacting node checks whether the log has grown by
	// Config.SnapshotEvery entries since the newest snapshot.
	compactCheck = 30 * time.Second
	// smallReplica is the replica size up to which snapshots follow the entry count alone.
	smallReplica = 64 << 20
	// restoreAttempts bounds the retries of loading the newest snapshot while newer ones
	// replace it (and delete the old) under the loading node.
	restoreAttempts = 5
)

// snapshotState is the applier's state of a snapshot, besides the replica's file.
type snapshotState struct {
	// Seq is the last log entry the snapshot holds.
	Seq uint64 `json:"seq"`
	// Retention is the limits in force (zero: none set in the log yet).
	Retention store.Retention `json:"retention"`
	// Epochs is the sequence of the latest epoch entry of every acquired workspace.
	Epochs map[store.WorkspaceID]uint64 `json:"epochs"`
}

// latestRef is the value of key "latest".
type latestRef struct {
	Seq uint64 `json:"seq"`
}

// snapshots holds the snapshot objects and the reference to the newest.
type snapshots struct {
	obs jetstream.ObjectStore
	kv  jetstream.KeyValue
}

// openSnapshots creates (or binds) the snapshot stores and waits until the reference to the
// newest snapshot can be read (a new bucket elects its leader first).
func openSnapshots(ctx context.Context, n *Node) (*snapshots, error) {
	obs, err := n.objectStore(ctx, snapshotObjects, "Atelier replica snapshots, by log sequence")
	if err != nil {
		return nil, err
	}
	sn := &snapshots{obs: obs}
	err = n.ensure(ctx, "the reference to the newest snapshot", func(ctx context.Context) error {
		kv, err := n.js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: snapshotKV, Description: "the newest replica snapshot",
			Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas, History: 1,
		})
		if err != nil {
			return err
		}
		sn.kv = kv
		_, _, err = sn.latest(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	return sn, nil
}

// latest returns the sequence of the newest snapshot (0: none yet) and the revision of the
// reference to it (0: no reference).
func (sn *snapshots) latest(ctx context.Context) (seq, rev uint64, err error) {
	e, err := sn.kv.Get(ctx, latestKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("read the newest snapshot: %w", err)
	}
	var ref latestRef
	if err := json.Unmarshal(e.Value(), &ref); err != nil {
		return 0, 0, fmt.Errorf("read the newest snapshot: %w", err)
	}
	return ref.Seq, e.Revision(), nil
}

// isLatest reports whether the reference to the newest snapshot names seq: a write of it that
// failed as a conflict was this node's own, repeated after its answer was lost (while the
// bucket's stream changed leaders), or another node's of the same entry.
func (sn *snapshots) isLatest(ctx context.Context, seq uint64) bool {
	latest, _, err := sn.latest(ctx)
	return err == nil && latest == seq
}

func snapshotName(seq uint64, ext string) string { return fmt.Sprintf("%020d.%s", seq, ext) }

// restore writes the newest snapshot's replica file to path (which must not exist) and
// returns its state; Seq 0 means there is no snapshot and nothing was written. A load that
// fails (the snapshot was replaced and deleted meanwhile) is tried again with the newest.
func (sn *snapshots) restore(ctx context.Context, path string) (snapshotState, error) {
	var lastErr error
	for range restoreAttempts {
		seq, _, err := sn.latest(ctx)
		if err != nil || seq == 0 {
			return snapshotState{}, err
		}
		st, err := sn.load(ctx, seq, path)
		if err == nil {
			return st, nil
		}
		lastErr = err
		if rerr := os.Remove(path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
			return snapshotState{}, fmt.Errorf("load snapshot %d: %w", seq, rerr)
		}
	}
	return snapshotState{}, lastErr
}

// load fetches snapshot seq: its file to path, and its state.
func (sn *snapshots) load(ctx context.Context, seq uint64, path string) (snapshotState, error) {
	var st snapshotState
	data, err := sn.obs.GetBytes(ctx, snapshotName(seq, "json"))
	if err != nil {
		return st, fmt.Errorf("load snapshot %d: %w", seq, err)
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("load snapshot %d: %w", seq, err)
	}
	if st.Seq != seq {
		return st, fmt.Errorf("load snapshot %d: its state says entry %d", seq, st.Seq)
	}
	if err := sn.obs.GetFile(ctx, snapshotName(seq, "db"), path); err != nil {
		return st, fmt.Errorf("load snapshot %d: %w", seq, err)
	}
	return st, nil
}

// put stores a snapshot: its state and the replica file at path.
func (sn *snapshots) put(ctx context.Context, st snapshotState, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := sn.obs.Put(ctx, jetstream.ObjectMeta{Name: snapshotName(st.Seq, "db")}, f); err != nil {
		return err
	}
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	_, err = sn.obs.PutBytes(ctx, snapshotName(st.Seq, "json"), data)
	return err
}

// deleteBefore deletes the snapshots older than seq.
func (sn *snapshots) deleteBefore(ctx context.Context, seq uint64) error {
	infos, err := sn.obs.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, info := range infos {
		base, _, _ := strings.Cut(info.Name, ".")
		n, err := strconv.ParseUint(base, 10, 64)
		if err != nil || n >= seq {
			continue
		}
		if err := sn.obs.Delete(ctx, info.Name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			return err
		}
	}
	return nil
}

// LogInfo is the size of the replicated log and its newest snapshot.
type LogInfo struct {
	// Entries and Bytes are what the log holds now (per replica).
	Entries uint64 `json:"entries"`
	Bytes   uint64 `json:"bytes"`
	// Snapshot is the log entry the newest snapshot holds (0: none yet).
	Snapshot uint64 `json:"snapshot"`
	// Lag is how many log entries this node's replica has yet to apply.
	Lag uint64 `json:"lag"`
}

// LogInfo reads the log's size and end from its leader, and the newest snapshot.
func (s *Store) LogInfo(ctx context.Context) (LogInfo, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return LogInfo{}, fmt.Errorf("read the log's size: %w", err)
	}
	snap, _, err := s.snaps.latest(ctx)
	if err != nil {
		return LogInfo{}, err
	}
	last := info.State.LastSeq
	return LogInfo{Entries: info.State.Msgs, Bytes: info.State.Bytes, Snapshot: snap, Lag: last - min(last, s.Applied())}, nil
}

// Compaction is what one Compact did.
type Compaction struct {
	// Snapshot is the log entry the new snapshot holds; 0 when the newest snapshot already
	// held every applied entry and none was made.
	Snapshot uint64 `json:"snapshot"`
	// PurgedBelow is the first log entry kept (apart from epoch entries); 0 when nothing was
	// purged (the first snapshot, or a live node had not applied the entries yet).
	PurgedBelow uint64 `json:"purgedBelow"`
}

// Compact snapshots the replica, makes the snapshot the newest, purges the log up to the
// snapshot before it and deletes older snapshots (see the comment on compaction). The
// compacting node does this on its own every Config.SnapshotEvery entries; any node may call
// it. It fails, and changes nothing, if another node made a newer snapshot meanwhile.
func (s *Store) Compact(ctx context.Context) (Compaction, error) {
	s.compactMu.Lock()
	defer s.compactMu.Unlock()
	prev, rev, err := s.snaps.latest(ctx)
	if err != nil {
		return Compaction{}, fmt.Errorf("compact the log: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.replicaPath), "snapshot-*.db")
	if err != nil {
		return Compaction{}, fmt.Errorf("compact the log: %w", err)
	}
	defer os.Remove(tmp.Name())
	st, err := s.capture(ctx, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return Compaction{}, fmt.Errorf("compact the log: snapshot the replica: %w", err)
	}
	if st.Seq <= prev {
		return Compaction{}, nil
	}
	if err := s.snaps.put(ctx, st, tmp.Name()); err != nil {
		return Compaction{}, fmt.Errorf("compact the log: store snapshot %d: %w", st.Seq, err)
	}
	ref, err := json.Marshal(latestRef{Seq: st.Seq})
	if err != nil {
		return Compaction{}, err
	}
	if rev == 0 {
		_, err = s.snaps.kv.Create(ctx, latestKey, ref)
	} else {
		_, err = s.snaps.kv.Update(ctx, latestKey, ref, rev)
	}
	if err != nil && !s.snaps.isLatest(ctx, st.Seq) { // the objects stay: they may be the newer snapshot's too (same entry)
		return Compaction{}, fmt.Errorf("compact the log: another node snapshotted meanwhile: %w", err)
	}
	done := Compaction{Snapshot: st.Seq}
	below, err := s.purgeBound(ctx, prev)
	if err != nil || below == 0 {
		return done, err
	}
	for _, subject := range []string{globalSubject, commitSubject("*")} {
		if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(below)); err != nil {
			return done, fmt.Errorf("compact the log: purge %s below %d: %w", subject, below, err)
		}
	}
	done.PurgedBelow = below
	if err := s.snaps.deleteBefore(ctx, prev); err != nil {
		return done, fmt.Errorf("compact the log: delete old snapshots: %w", err)
	}
	s.log.Info("compacted the log", "snapshot", st.Seq, "purged_below", below)
	return done, nil
}

// purgeBound is the first log entry a purge keeps: the one after the previous snapshot prev,
// unless a live node has not applied that far (0: purge nothing).
func (s *Store) purgeBound(ctx context.Context, prev uint64) (uint64, error) {
	if prev == 0 {
		return 0, nil
	}
	nodes, err := s.leases.Nodes(ctx)
	if err != nil {
		return 0, fmt.Errorf("compact the log: %w", err)
	}
	bound := prev
	for _, n := range nodes {
		bound = min(bound, n.Applied)
	}
	if bound == 0 {
		return 0, nil
	}
	return bound + 1, nil
}

// capture writes the replica to f as of the last entry handed to it, with the applier's state
// at that entry: it holds the applier between entries while it starts the copy, which then
// goes on beside the applier.
func (s *Store) capture(ctx context.Context, f *os.File) (snapshotState, error) {
	st, snap, err := s.startCapture(ctx)
	if err != nil {
		return snapshotState{}, err
	}
	defer snap.Close()
	if _, err := snap.WriteTo(f); err != nil {
		return snapshotState{}, err
	}
	return st, nil
}

// startCapture waits, holding the applier, until the replica applied every entry handed to it,
// and starts the replica's snapshot there.
func (s *Store) startCapture(ctx context.Context) (snapshotState, *store.Snapshot, error) {
	s.applyMu.Lock()
	defer s.applyMu.Unlock()
	if err := s.waitApplied(ctx, s.handed); err != nil {
		return snapshotState{}, nil, err
	}
	snap, err := s.replica.Snapshot()
	if err != nil {
		return snapshotState{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := snapshotState{Seq: s.applied, Retention: s.retention, Epochs: make(map[store.WorkspaceID]uint64, len(s.workspaces))}
	for ws, w := range s.workspaces {
		st.Epochs[ws] = w.epoch
	}
	return st, snap, nil
}

// adopt takes over a restored snapshot's state: the applier goes on after its entry.
func (s *Store) adopt(ctx context.Context, st snapshotState) error {
	if st.Retention != (store.Retention{}) {
		s.replica.SetRetention(st.Retention)
	}
	for ws, epoch := range st.Epochs {
		l, err := s.replica.Acquire(ctx, ws)
		if err != nil {
			return fmt.Errorf("workspace %s: %w", ws, err)
		}
		w, err := s.replica.Open(ctx, ws, l)
		if err != nil {
			return fmt.Errorf("workspace %s: %w", ws, err)
		}
		s.workspaces[ws] = &replicaWS{epoch: epoch, ws: w}
	}
	s.applied, s.handed, s.snapSeen, s.retention = st.Seq, st.Seq, st.Seq, st.Retention
	s.leases.SetApplied(st.Seq)
	return nil
}

// compactLoop compacts the log once it has grown by Config.SnapshotEvery entries since the newest snapshot,
// while this node is the compacting one: the first node by name that is not draining (two
// nodes that both believe they are cannot undo each other's work, see Compact). The completer
// wakes it when the replica reaches that many entries past the snapshot it last saw; the
// ticker covers a change of the compacting node.
func (s *Store) compactLoop() {
	defer s.compacting.Done()
	every := s.snapshotEvery()
	t := time.NewTicker(compactCheck)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		case <-s.compactDue:
		}
		applied := s.Applied()
		// Not this node's to do, not due or failed: look again `every` entries on, or at the tick.
		seen := applied
		if s.compactsHere() { // only then is the newest snapshot worth a read
			latest, _, err := s.snaps.latest(s.ctx)
			if err != nil {
				continue
			}
			seen = max(latest, applied)
			if applied-min(latest, applied) >= every && s.worthSnapshot(s.ctx) {
				c, err := s.Compact(s.ctx)
				if err == nil {
					seen = max(latest, c.Snapshot)
				} else if s.ctx.Err() == nil {
					s.log.Warn("could not compact the log", "err", err)
				}
			}
		}
		s.mu.Lock()
		s.snapSeen = seen
		s.mu.Unlock()
	}
}

// worthSnapshot reports whether a snapshot costs no more than the log it lets go: a replica
// of up to smallReplica always is; a larger one once the log holds at least as many bytes as
// the replica's file (so that a busy cluster with a large state does not copy all of it every
// SnapshotEvery entries).
func (s *Store) worthSnapshot(ctx context.Context) bool {
	fi, err := os.Stat(s.replicaPath)
	if err != nil {
		return false
	}
	if fi.Size() <= smallReplica {
		return true
	}
	info, err := s.stream.Info(ctx)
	return err == nil && info.State.Bytes >= uint64(fi.Size())
}

// compactsHere reports whether this node is the first live node by name that is not
// draining.
func (s *Store) compactsHere() bool {
	nodes, err := s.leases.Nodes(s.ctx)
	if err != nil {
		return false
	}
	for _, n := range nodes {
		if !n.Draining {
			return n.Name == s.node.Name()
		}
	}
	return false
}
