package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// stopMember closes m's store, leases and node, and returns the node's config for a restart.
func stopMember(m *member) Config {
	m.store.Close()
	m.leases.Close()
	cfg := m.node.Config()
	m.node.Close()
	return cfg
}

// restartMember starts m's node again with cfg; open (or NewStore) must follow.
func restartMember(t testing.TB, m *member, cfg Config) {
	t.Helper()
	nd, err := Start(testCtx(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nd.Close() })
	m.node = nd
}

// awaitNodes waits until the live nodes m sees satisfy ok.
func awaitNodes(t testing.TB, m *member, what string, ok func([]NodeInfo) bool) {
	t.Helper()
	eventually(t, what, func() bool {
		nodes, err := m.leases.Nodes(context.Background())
		return err == nil && ok(nodes)
	})
}

// awaitApplied waits until m sees every live node's record report at least seq applied.
func awaitApplied(t testing.TB, m *member, seq uint64) {
	t.Helper()
	awaitNodes(t, m, fmt.Sprintf("every node reports entry %d applied", seq), func(nodes []NodeInfo) bool {
		for _, n := range nodes {
			if n.Applied < seq {
				return false
			}
		}
		return true
	})
}

// compact runs Compact on m and fails the test on an error.
func compact(t *testing.T, m *member) Compaction {
	t.Helper()
	c, err := m.store.Compact(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func setKV(t *testing.T, w store.WorkspaceStore, key, value string) {
	t.Helper()
	if err := w.Commit(testCtx(t), []store.Mutation{store.SetKV("g", []byte(key), []byte(value))}); err != nil {
		t.Fatal(err)
	}
}

func TestACompactedLogRebuildsReplicasFromTheSnapshot(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	ws, l, w, code := seedWorkspace(t, ms, "k1", "v1")

	first := compact(t, ms[0])
	if first.Snapshot == 0 || first.PurgedBelow != 0 {
		t.Fatalf("first compaction %+v: want a snapshot and no purge (nothing older to fall back on)", first)
	}
	if again := compact(t, ms[0]); again != (Compaction{}) {
		t.Fatalf("compaction with no new entry: %+v, want none", again)
	}
	setKV(t, w, "k2", "v2")
	if err := ms[0].store.PutToken(ctx, store.Token{Hash: "t2", UserID: "u_bo"}); err != nil {
		t.Fatal(err)
	}

	// A node that reports less applied holds the purge back to what it has.
	awaitApplied(t, ms[0], first.Snapshot)
	ms[2].leases.SetApplied(1)
	if err := ms[2].leases.publish(ctx); err != nil {
		t.Fatal(err)
	}
	awaitNodes(t, ms[0], "n3 reports entry 1 applied", func(nodes []NodeInfo) bool {
		i := len(nodes) - 1
		return nodes[i].Name == "n3" && nodes[i].Applied == 1
	})
	second := compact(t, ms[0])
	if second.Snapshot <= first.Snapshot || second.PurgedBelow != 2 {
		t.Fatalf("second compaction %+v with n3 at entry 1: want a new snapshot and a purge below 2", second)
	}
	ms[2].leases.SetApplied(ms[2].store.Applied())

	setKV(t, w, "k3", "v3")
	awaitApplied(t, ms[0], second.Snapshot)
	third := compact(t, ms[0])
	if third.PurgedBelow != second.Snapshot+1 {
		t.Fatalf("third compaction %+v: want a purge below %d (the entry after the previous snapshot)", third, second.Snapshot+1)
	}
	if _, err := ms[0].store.stream.GetMsg(ctx, 1); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Fatalf("log entry 1 after compaction: %v, want it purged", err)
	}
	if _, err := ms[0].store.stream.GetMsg(ctx, uint64(l.Epoch())); err != nil {
		t.Fatalf("the workspace's epoch entry %d after compaction: %v, want it kept (it is the fence)", l.Epoch(), err)
	}
	if _, err := ms[0].store.snaps.obs.GetInfo(ctx, snapshotName(first.Snapshot, "db")); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("snapshot %d after two newer ones: %v, want it deleted", first.Snapshot, err)
	}

	// n3 starts again: everything comes back though the log no longer has it.
	m := ms[2]
	cfg := stopMember(m)
	if err := ms[0].store.PutToken(ctx, store.Token{Hash: "late", UserID: "u_bo"}); err != nil {
		t.Fatal(err)
	}
	restartMember(t, m, cfg)
	m.open(t)
	if u, err := m.store.UserByName(ctx, "bo"); err != nil || u.ID != "u_bo" {
		t.Fatalf("after restart: user %+v, %v", u, err)
	}
	for _, tok := range []string{"t2", "late"} {
		if _, err := m.store.Token(ctx, tok); err != nil {
			t.Fatalf("after restart: token %s: %v", tok, err)
		}
	}
	if got, err := m.store.Code(ctx, store.CodeSHA(code)); err != nil || !bytes.Equal(got, code) {
		t.Fatalf("after restart: code %q, %v", got, err)
	}
	if _, epoch, err := m.store.Lookup(ctx, ws); err != nil || epoch != l.Epoch() {
		t.Fatalf("after restart: epoch %d, %v, want %d", epoch, err, l.Epoch())
	}
	// The owner still commits under its epoch, and the restarted replica applies it.
	setKV(t, w, "k4", "v4")
	r := replicaWorkspace(t, m.store, ws)
	for k, want := range map[string]string{"k1": "v1", "k2": "v2", "k3": "v3", "k4": "v4"} {
		if v, _, _ := r.Get("g", []byte(k)); string(v) != want {
			t.Fatalf("after restart: kv %s = %q, want %q", k, v, want)
		}
	}
}

// One node (R1), whose stream cannot lag its own purge: the replica is rebuilt beside it.
func TestAReplicaMissingLogEntriesRefusesToServe(t *testing.T) {
	m := testStores(t, 1)[0]
	ctx := testCtx(t)
	if err := m.store.CreateUser(ctx, store.User{ID: "u_bo", Name: "bo"}); err != nil {
		t.Fatal(err)
	}
	snap := compact(t, m)
	for _, tok := range []string{"t1", "t2"} {
		if err := m.store.PutToken(ctx, store.Token{Hash: tok, UserID: "u_bo"}); err != nil {
			t.Fatal(err)
		}
	}
	// Entries after the newest snapshot are lost (an operator's purge): a replica rebuilt from
	// that snapshot would miss them.
	last, err := m.store.lastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.store.stream.Purge(ctx, jetstream.WithPurgeSubject(globalSubject), jetstream.WithPurgeSequence(last)); err != nil {
		t.Fatal(err)
	}
	s, err := NewStore(ctx, m.node, m.leases, filepath.Join(t.TempDir(), "replica.db"))
	if err == nil {
		s.Close()
		t.Fatalf("a replica rebuilt from snapshot %d with entries %d to %d gone started", snap.Snapshot, snap.Snapshot+1, last-1)
	}
	if !strings.Contains(err.Error(), "no longer holds entries") || !strings.Contains(err.Error(), "restart") {
		t.Fatalf("error %q: want it to say which entries are missing and what to do", err)
	}
	// The running replica, which applied them, keeps serving.
	if _, err := m.store.Token(ctx, "t1"); err != nil {
		t.Fatalf("the running replica after the failed start: %v", err)
	}
}

func TestTheLogIsCompactedAsItGrows(t *testing.T) {
	const every = 10
	ms := testStoresWith(t, 3, func(c *Config) { c.SnapshotEvery = every })
	ctx := testCtx(t)
	if err := ms[1].store.CreateUser(ctx, store.User{ID: "u_bo", Name: "bo"}); err != nil {
		t.Fatal(err)
	}
	var written uint64 = 1
	for {
		li, err := ms[2].store.LogInfo(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if li.Snapshot > 0 && li.Entries < written {
			break // snapshotted twice, and purged up to the first
		}
		if written > 300*every { // purges wait for the nodes' heartbeats to report what they applied
			t.Fatalf("after %d entries the log is %+v: want it compacted every %d", written, li, every)
		}
		time.Sleep(5 * time.Millisecond)
		if err := ms[1].store.PutToken(ctx, store.Token{Hash: fmt.Sprint("t", written), UserID: "u_bo"}); err != nil {
			t.Fatal(err)
		}
		written++
	}
	if _, err := ms[2].store.Token(ctx, "t1"); err != nil {
		t.Fatalf("a token written before the compaction: %v", err)
	}
}
