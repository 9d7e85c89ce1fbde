package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func TestGatekeepersAndAccounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := open(t, path)
	g := GatekeeperRecord{ID: "sha256:aa", Name: "notes", Version: "0.1.0", Format: "component"}
	if err := db.PutAccount(ctx, GatekeeperAccount{ID: "acct_1", Owner: "u1", Gatekeeper: g.ID}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("account of a missing gatekeeper: %v", err)
	}
	if err := db.PutGatekeeper(ctx, g, []byte("archive")); err != nil {
		t.Fatal(err)
	}
	if err := db.PutGatekeeper(ctx, g, []byte("other")); !errors.Is(err, ErrConflict) {
		t.Fatalf("second install: %v", err)
	}
	for _, a := range []GatekeeperAccount{
		{ID: "acct_1", Owner: "u1", Gatekeeper: g.ID, Sealed: map[string][]byte{"token": []byte("sealed")}},
		{ID: "acct_2", Owner: "u2", Gatekeeper: g.ID},
	} {
		if err := db.PutAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db = open(t, path) // everything survives a reopen
	rec, archive, err := db.Gatekeeper(ctx, g.ID)
	if err != nil || rec.Name != "notes" || !bytes.Equal(archive, []byte("archive")) {
		t.Fatalf("gatekeeper: %+v %q %v", rec, archive, err)
	}
	mine, err := db.Accounts(ctx, "u1")
	if err != nil || len(mine) != 1 || string(mine[0].Sealed["token"]) != "sealed" {
		t.Fatalf("accounts of u1: %+v %v", mine, err)
	}
	if err := db.DeleteAccount(ctx, "acct_1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteAccount(ctx, "acct_1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if err := db.DeleteGatekeeper(ctx, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Account(ctx, "acct_2"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("account of a removed gatekeeper: %v", err)
	}
	if gs, err := db.Gatekeepers(ctx); err != nil || len(gs) != 0 {
		t.Fatalf("gatekeepers after removal: %+v %v", gs, err)
	}
}

func TestApprovalQueueIsWorkspaceStateUnderTheLease(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := open(t, path)
	ws, l := workspace(t, db)
	other, _ := workspace(t, db)
	rule := ApprovalRule{Owner: "u1", Gatekeeper: "sha256:aa", Kind: "add-note"}
	pending := QueuedAction{ID: 2, Type: "action", State: "pending", Account: "acct_1", KindTag: "add-note", Payload: `{"op":"add"}`}
	err := ws.Commit(ctx, []Mutation{
		PutAction(QueuedAction{ID: 1, Type: "observation", State: "recorded", Account: "acct_1"}),
		PutAction(pending), PutRule(rule), PutRule(ApprovalRule{Owner: "u1", Gatekeeper: "sha256:aa", Kind: "gone"}),
		DeleteRule(ApprovalRule{Owner: "u1", Gatekeeper: "sha256:aa", Kind: "gone"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// Malformed queue mutations are refused whole.
	for _, bad := range []Mutation{PutAction(QueuedAction{}), PutRule(ApprovalRule{Owner: "u1", Kind: "k"}), DeleteRule(ApprovalRule{Owner: "u\x00", Gatekeeper: "g", Kind: "k"})} {
		if err := ws.Commit(ctx, []Mutation{PutAction(QueuedAction{ID: 3, State: "pending"}), bad}); err == nil {
			t.Fatalf("malformed mutation %+v was committed", bad)
		}
	}
	if acts, err := other.ActionsBefore(0, 10); err != nil || len(acts) != 0 {
		t.Fatalf("another workspace sees %+v %v", acts, err)
	}
	// A newer lease fences the old holder's decisions.
	w, _ := ws.Workspace()
	newLease, err := db.Acquire(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	decided := pending
	decided.State = "applied"
	if err := ws.Commit(ctx, []Mutation{PutAction(decided)}); !errors.Is(err, ErrFenced) || l.Epoch() >= newLease.Epoch() {
		t.Fatalf("decision under the old lease: %v, want ErrFenced", err)
	}
	db.Close()

	db = open(t, path) // the queue survives a reopen, per workspace
	l, err = db.Acquire(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	ws, err = db.Open(ctx, w.ID, l)
	if err != nil {
		t.Fatal(err)
	}
	acts, err := ws.ActionsBefore(0, 10)
	if err != nil || len(acts) != 2 || acts[0].ID != 1 || acts[1].State != "pending" || acts[1].Payload != pending.Payload {
		t.Fatalf("actions after reopen: %+v %v", acts, err)
	}
	if acts, err := ws.PendingActions(); err != nil || len(acts) != 1 || acts[0].ID != 2 {
		t.Fatalf("pending actions after reopen: %+v %v", acts, err)
	}
	if rules, err := ws.Rules(); err != nil || len(rules) != 1 || rules[0] != rule {
		t.Fatalf("rules after reopen: %+v %v", rules, err)
	}
	// Deleting the workspace deletes its queue.
	if err := ws.Commit(ctx, []Mutation{DeleteWorkspace()}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ActionsBefore(0, 10); !errors.Is(err, ErrNotFound) {
		t.Fatalf("actions of a deleted workspace: %v", err)
	}
}

// TestActionLogPages: the log is read in pages from the newest back, and the pending actions
// come from an index that follows every decision.
func TestActionLogPages(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := workspace(t, db)
	var muts []Mutation
	for id := uint64(1); id <= 25; id++ {
		state := "recorded"
		if id%5 == 0 {
			state = StatePending
		}
		muts = append(muts, PutAction(QueuedAction{ID: id, Type: "action", State: state}))
	}
	if err := ws.Commit(ctx, muts); err != nil {
		t.Fatal(err)
	}
	ids := func(acts []QueuedAction, err error) []uint64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out := []uint64{}
		for _, a := range acts {
			out = append(out, a.ID)
		}
		return out
	}
	for _, c := range []struct {
		before uint64
		limit  int
		want   []uint64
	}{
		{0, 3, []uint64{23, 24, 25}},
		{23, 3, []uint64{20, 21, 22}},
		{3, 10, []uint64{1, 2}},
		{1, 10, []uint64{}},
		{1000, 2, []uint64{24, 25}},
		{0, 0, []uint64{}},
	} {
		if got := ids(ws.ActionsBefore(c.before, c.limit)); !slices.Equal(got, c.want) {
			t.Errorf("ActionsBefore(%d, %d) = %v, want %v", c.before, c.limit, got, c.want)
		}
	}
	if got := ids(ws.PendingActions()); !slices.Equal(got, []uint64{5, 10, 15, 20, 25}) {
		t.Fatalf("pending = %v", got)
	}
	if err := ws.Commit(ctx, []Mutation{PutAction(QueuedAction{ID: 10, Type: "action", State: "applied"})}); err != nil {
		t.Fatal(err)
	}
	if got := ids(ws.PendingActions()); !slices.Equal(got, []uint64{5, 15, 20, 25}) {
		t.Fatalf("pending after a decision = %v", got)
	}

	// A file written before the index: pending actions are found by a scan, and the first
	// new entry builds the index from the log.
	w, _ := ws.Workspace()
	err := db.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketWS).Bucket([]byte(w.ID)).DeleteBucket(subGKPending) })
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ws.PendingActions()); !slices.Equal(got, []uint64{5, 15, 20, 25}) {
		t.Fatalf("pending without the index = %v", got)
	}
	if err := ws.Commit(ctx, []Mutation{PutAction(QueuedAction{ID: 26, Type: "action", State: StatePending})}); err != nil {
		t.Fatal(err)
	}
	if got := ids(ws.PendingActions()); !slices.Equal(got, []uint64{5, 15, 20, 25, 26}) {
		t.Fatalf("pending with the rebuilt index = %v", got)
	}
}
