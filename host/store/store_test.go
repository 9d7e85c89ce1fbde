package store

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

var ctx = context.Background()

func open(t *testing.T, path string) *Bolt {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// workspace creates a workspace and opens it under a fresh lease.
func workspace(t *testing.T, db *Bolt) (WorkspaceStore, Lease) {
	t.Helper()
	w := Workspace{ID: WorkspaceID(NewID("ws")), Name: "home", Owner: "u1", Created: time.Now()}
	if err := db.CreateWorkspace(ctx, w); err != nil {
		t.Fatal(err)
	}
	l, err := db.Acquire(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := db.Open(ctx, w.ID, l)
	if err != nil {
		t.Fatal(err)
	}
	return ws, l
}

func TestCommitIsAtomicAndLimited(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := workspace(t, db)
	g := Gadget{ID: "g1", Name: "counter", Current: 1, Versions: []Version{{Number: 1, SHA256: "x"}}}
	if err := ws.Commit(ctx, []Mutation{PutGadget(g), SetKV("g1", []byte("a"), []byte("1")), SetKV("g1", []byte("b"), []byte("2"))}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range [][]Mutation{
		{SetKV("g1", []byte("a"), []byte("changed")), SetKV("g1", []byte("big"), make([]byte, MaxValue+1))},
		{DeleteKV("g1", []byte("a")), SetKV("g1", nil, []byte("x"))},
	} {
		if err := ws.Commit(ctx, bad); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("bad commit: %v, want ErrTooLarge", err)
		}
	}
	if v, ok, _ := ws.Get("g1", []byte("a")); !ok || string(v) != "1" {
		t.Fatalf("a refused commit changed a to %q", v)
	}
	var keys []string
	ws.List("g1", nil, func(k, _ []byte) bool { keys = append(keys, string(k)); return true })
	if strings.Join(keys, ",") != "a,b" {
		t.Fatalf("keys = %v", keys)
	}
	if err := ws.Commit(ctx, []Mutation{DeleteGadget("g1"), AppendAudit(AuditEntry{Action: "gadget.delete"}), AppendAudit(AuditEntry{Action: "second"})}); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := ws.Get("g1", []byte("a")); ok {
		t.Fatal("deleting a gadget kept its state")
	}
	if gs, _ := ws.Gadgets(); len(gs) != 0 {
		t.Fatalf("gadgets after delete: %v", gs)
	}
	if a, _ := ws.Audit(AuditQuery{Limit: 10}); len(a) != 2 || a[0].Action != "second" || a[0].Seq != 2 {
		t.Fatalf("audit = %+v", a)
	}
}

func TestANewerLeaseFencesTheOld(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	old, oldLease := workspace(t, db)
	w, _ := old.Workspace()
	newLease, err := db.Acquire(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if newLease.Epoch() <= oldLease.Epoch() {
		t.Fatalf("epochs %d then %d", oldLease.Epoch(), newLease.Epoch())
	}
	select {
	case <-oldLease.Lost():
	default:
		t.Fatal("the old lease was not told it is lost")
	}
	if err := old.Commit(ctx, []Mutation{SetKV("g", []byte("k"), []byte("v"))}); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit under the old lease: %v, want ErrFenced", err)
	}
	cur, _ := db.Open(ctx, w.ID, newLease)
	if err := cur.Commit(ctx, []Mutation{SetKV("g", []byte("k"), []byte("v"))}); err != nil {
		t.Fatal(err)
	}
	if _, epoch, _ := db.Lookup(ctx, w.ID); epoch != newLease.Epoch() {
		t.Fatalf("Lookup epoch %d, want %d", epoch, newLease.Epoch())
	}
	newLease.Release(ctx)
	if err := cur.Commit(ctx, nil); !errors.Is(err, ErrFenced) {
		t.Fatalf("commit after Release: %v, want ErrFenced", err)
	}
}

func TestAccountsAndAccessIndex(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	u := User{ID: "u1", Name: "ada"}
	if err := db.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, User{ID: "u2", Name: "ada"}); !errors.Is(err, ErrConflict) {
		t.Fatalf("duplicate name: %v", err)
	}
	if err := db.PutToken(ctx, Token{Hash: "h1", UserID: "u1"}); err != nil {
		t.Fatal(err)
	}
	if tok, err := db.Token(ctx, "h1"); err != nil || tok.UserID != "u1" {
		t.Fatalf("Token = %+v, %v", tok, err)
	}
	db.DeleteToken(ctx, "h1")
	if _, err := db.Token(ctx, "h1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted token: %v", err)
	}
	ws, _ := workspace(t, db)
	w, _ := ws.Workspace()
	w.Collaborators = []Collaborator{{UserID: "u2", Role: RoleUse}}
	if err := ws.Commit(ctx, []Mutation{PutWorkspace(w)}); err != nil {
		t.Fatal(err)
	}
	if acc, _ := db.Workspaces(ctx, "u2"); len(acc) != 1 || acc[0].Role != RoleUse {
		t.Fatalf("u2 access = %v", acc)
	}
	w.Collaborators = nil
	ws.Commit(ctx, []Mutation{PutWorkspace(w)})
	if acc, _ := db.Workspaces(ctx, "u2"); len(acc) != 0 {
		t.Fatalf("a removed collaborator keeps access: %v", acc)
	}
	if err := ws.Commit(ctx, []Mutation{DeleteWorkspace()}); err != nil {
		t.Fatal(err)
	}
	if acc, _ := db.Workspaces(ctx, "u1"); len(acc) != 0 {
		t.Fatalf("the owner keeps a deleted workspace: %v", acc)
	}
}

// TestMigratesSchema1 writes a file as the preview did and opens it.
func TestMigratesSchema1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	raw, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = raw.Update(func(tx *bolt.Tx) error {
		meta, _ := tx.CreateBucket([]byte("meta"))
		meta.Put([]byte("schema"), []byte("1"))
		gs, _ := tx.CreateBucket([]byte("gadgets"))
		rec, _ := json.Marshal(map[string]any{"name": "counter", "grants": []string{"atelier:host/kv"}, "current": 1,
			"versions": []map[string]any{{"number": 1, "sha256": "abc", "size": 4, "created": time.Now()}}})
		gs.Put([]byte("counter"), rec)
		code, _ := tx.CreateBucket([]byte("code"))
		code.Put([]byte("abc"), []byte("wasm"))
		st, _ := tx.CreateBucket([]byte("state"))
		cs, _ := st.CreateBucket([]byte("counter"))
		return cs.Put([]byte("count"), []byte{12})
	})
	if err != nil {
		t.Fatal(err)
	}
	raw.Close()

	db := open(t, path)
	admin, err := db.UserByName(ctx, "admin")
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := db.Workspaces(ctx, admin.ID)
	if len(acc) != 1 || acc[0].Role != RoleOwner {
		t.Fatalf("admin's workspaces after migration: %v", acc)
	}
	l, _ := db.Acquire(ctx, acc[0].Workspace)
	ws, _ := db.Open(ctx, acc[0].Workspace, l)
	gs, _ := ws.Gadgets()
	if len(gs) != 1 || gs[0].Name != "counter" || gs[0].Current != 1 {
		t.Fatalf("migrated gadgets: %+v", gs)
	}
	if v, ok, _ := ws.Get(gs[0].ID, []byte("count")); !ok || v[0] != 12 {
		t.Fatalf("migrated state: %v %v", v, ok)
	}
	if code, err := db.Code(ctx, "abc"); err != nil || string(code) != "wasm" {
		t.Fatalf("migrated code: %q %v", code, err)
	}
	issued, err := db.Bootstrap(ctx, "admin", Token{Hash: "t"})
	if err != nil || !issued {
		t.Fatalf("bootstrap after migration: %v %v", issued, err)
	}
	if tok, _ := db.Token(ctx, "t"); tok.UserID != admin.ID {
		t.Fatalf("the admin token belongs to %q, want %q", tok.UserID, admin.ID)
	}
}

func TestRefusesNewerSchemaAndSecondOpener(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := open(t, path)
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "another atelier process") {
		t.Fatalf("second Open: %v", err)
	}
	db.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, []byte("99")) })
	db.Close()
	if _, err := Open(path); err == nil || !strings.Contains(err.Error(), "upgrade atelier") {
		t.Fatalf("Open of a newer schema: %v", err)
	}
}

func TestChainFailsAfterAFailure(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := workspace(t, db)
	c, other := ws.Chain(), ws.Chain()
	first := c.Submit([]Mutation{SetKV("g", []byte("a"), []byte("1"))})
	bad := c.Submit([]Mutation{SetKV("g", []byte("big"), make([]byte, MaxValue+1))})
	after := c.Submit([]Mutation{SetKV("g", []byte("a"), []byte("2"))})
	elsewhere := other.Submit([]Mutation{SetKV("g", []byte("b"), []byte("1"))})
	if err := first.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := bad.Wait(); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("bad commit: %v, want ErrTooLarge", err)
	}
	if err := after.Wait(); !errors.Is(err, ErrChainBroken) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("commit after a failure: %v, want ErrChainBroken wrapping ErrTooLarge", err)
	}
	if err := elsewhere.Wait(); err != nil {
		t.Fatalf("another chain's commit: %v", err)
	}
	if v, _, _ := ws.Get("g", []byte("a")); string(v) != "1" {
		t.Fatalf("a = %q: a commit after a failed one was written", v)
	}
	if n, _ := ws.Usage("g"); n != 4 { // a=1 and b=1
		t.Fatalf("usage = %d, want 4", n)
	}
}

func TestCodeIsCollectedWhenUnused(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := workspace(t, db)
	a, b := []byte("code a"), []byte("code b")
	v := func(n int, code []byte) Version { return Version{Number: n, SHA256: CodeSHA(code), Size: len(code)} }
	g := Gadget{ID: "g1", Name: "one", Current: 1, Versions: []Version{v(1, a)}}
	g2 := Gadget{ID: "g2", Name: "two", Current: 1, Versions: []Version{v(1, a)}}
	if err := ws.Commit(ctx, []Mutation{PutCode(a), PutGadget(g), PutCode(a), PutGadget(g2)}); err != nil {
		t.Fatal(err)
	}
	g.Versions, g.Current = append(g.Versions, v(2, b)), 2
	if err := ws.Commit(ctx, []Mutation{PutCode(b), PutGadget(g)}); err != nil {
		t.Fatal(err)
	}
	has := func(code []byte) bool {
		_, err := db.Code(ctx, CodeSHA(code))
		return err == nil
	}
	if !has(a) || !has(b) {
		t.Fatal("code in use is missing")
	}
	if err := ws.Commit(ctx, []Mutation{DeleteGadget("g1")}); err != nil {
		t.Fatal(err)
	}
	if !has(a) || has(b) {
		t.Fatalf("after deleting g1: a kept %v (want true), b kept %v (want false)", has(a), has(b))
	}
	if err := db.PutBlueprint(ctx, Blueprint{ID: "bp1", SHA256: CodeSHA(a)}, a); err != nil {
		t.Fatal(err)
	}
	if err := ws.Commit(ctx, []Mutation{DeleteWorkspace()}); err != nil {
		t.Fatal(err)
	}
	if !has(a) {
		t.Fatal("a blueprint's code was collected")
	}
	// Code stored without any record referring to it does not stay either.
	ws2, _ := workspace(t, db)
	if err := ws2.Commit(ctx, []Mutation{PutCode(b)}); err != nil || has(b) {
		t.Fatalf("unreferenced code: %v, kept %v", err, has(b))
	}
}

// TestMigratesSchema2 computes the reference counts and usage a schema 2 file lacks, and
// drops the code nothing uses.
func TestMigratesSchema2(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := workspace(t, db)
	w, _ := ws.Workspace()
	code := []byte("used")
	g := Gadget{ID: "g1", Name: "one", Current: 1, Versions: []Version{{Number: 1, SHA256: CodeSHA(code)}}}
	if err := ws.Commit(ctx, []Mutation{PutCode(code), PutGadget(g), SetKV("g1", []byte("k"), []byte("vvv"))}); err != nil {
		t.Fatal(err)
	}
	// Make it look like schema 2: no counts, no usage, an orphan blob.
	err = db.db.Update(func(tx *bolt.Tx) error {
		tx.Bucket(bucketMeta).Put(keySchema, []byte("2"))
		tx.DeleteBucket(bucketCodeRefs)
		tx.Bucket(bucketWS).Bucket([]byte(w.ID)).DeleteBucket(subUsage)
		return tx.Bucket(bucketCode).Put([]byte(CodeSHA([]byte("orphan"))), []byte("orphan"))
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = open(t, path)
	if _, err := db.Code(ctx, CodeSHA([]byte("orphan"))); !errors.Is(err, ErrNotFound) {
		t.Fatalf("orphan code after migration: %v", err)
	}
	l, _ := db.Acquire(ctx, w.ID)
	ws, _ = db.Open(ctx, w.ID, l)
	if n, _ := ws.Usage("g1"); n != 4 {
		t.Fatalf("migrated usage = %d, want 4", n)
	}
	if err := ws.Commit(ctx, []Mutation{DeleteGadget("g1")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Code(ctx, CodeSHA(code)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("code after deleting its only gadget: %v", err)
	}
}

// TestAuditQuery pages and filters the audit log in the store: before a seq, by actor, by
// action prefix, and never by a value that only looks like a match in another field.
func TestAuditQuery(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := workspace(t, db)
	var muts []Mutation
	for i := range 30 {
		actor := []string{"ada", "bob", "ada/agent:x<y"}[i%3]
		muts = append(muts, AppendAudit(AuditEntry{Actor: actor, Action: []string{"gadget.deploy", "gadget.delete", "share.create"}[i%3], Target: "g", Detail: `"actor":"bob"`}))
	}
	if err := ws.Commit(ctx, muts); err != nil {
		t.Fatal(err)
	}
	seqs := func(es []AuditEntry) []uint64 {
		out := []uint64{}
		for _, e := range es {
			out = append(out, e.Seq)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    AuditQuery
		want []uint64
	}{
		{"newest", AuditQuery{Limit: 3}, []uint64{30, 29, 28}},
		{"before", AuditQuery{Limit: 3, Before: 28}, []uint64{27, 26, 25}},
		{"before the first", AuditQuery{Limit: 3, Before: 1}, []uint64{}},
		{"before past the newest", AuditQuery{Limit: 2, Before: 1000}, []uint64{30, 29}},
		{"actor", AuditQuery{Limit: 3, Actor: "bob"}, []uint64{29, 26, 23}},
		{"actor with escapes", AuditQuery{Limit: 2, Actor: "ada/agent:x<y"}, []uint64{30, 27}},
		{"actor is exact", AuditQuery{Limit: 3, Actor: "ad"}, []uint64{}},
		{"action prefix", AuditQuery{Limit: 4, Action: "gadget."}, []uint64{29, 28, 26, 25}},
		{"action and actor and before", AuditQuery{Limit: 2, Action: "gadget.de", Actor: "ada", Before: 25}, []uint64{22, 19}},
		{"no such action", AuditQuery{Limit: 5, Action: "bob"}, []uint64{}},
	} {
		got, err := ws.Audit(tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(seqs(got), tc.want) {
			t.Errorf("%s: seqs %v, want %v", tc.name, seqs(got), tc.want)
		}
	}
}
