package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"atelier/host/quota"
	"atelier/host/store"
)

// member is one node of a test cluster with its leases and replicated store.
type member struct {
	node    *Node
	leases  *Leases
	store   *Store
	replica string
}

// testStores starts n nodes (testNodes) with their leases and stores, closed when the test
// ends; snapshots are left to the tests (the default SnapshotEvery is never reached).
func testStores(t testing.TB, n int) []*member { return testStoresWith(t, n, nil) }

// testStoresWith is testStores with the nodes' configs changed by tweak.
func testStoresWith(t testing.TB, n int, tweak func(*Config)) []*member {
	t.Helper()
	nodes := testNodes(t, n, tweak)
	ms := make([]*member, n)
	for i, nd := range nodes {
		ms[i] = &member{node: nd, replica: filepath.Join(t.TempDir(), "replica.db")}
		ms[i].open(t)
	}
	return ms
}

// open starts m's leases and store over m.node.
func (m *member) open(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := NewLeases(ctx, m.node)
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewStore(ctx, m.node, l, m.replica)
	if err != nil {
		l.Close()
		t.Fatal(err)
	}
	m.leases, m.store = l, s
	t.Cleanup(func() {
		s.Close()
		l.Close()
	})
}

func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// replicaWorkspace returns the replica's view of ws once s has applied the whole log.
func replicaWorkspace(t *testing.T, s *Store, ws store.WorkspaceID) store.WorkspaceStore {
	t.Helper()
	if err := s.barrier(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.workspaces[ws]
	if w == nil {
		t.Fatalf("replica of %s has no workspace %s", s.node.Name(), ws)
	}
	return w.ws
}

// newWorkspace creates a workspace owned by owner, on m.
func newWorkspace(t testing.TB, m *member, owner string) store.WorkspaceID {
	t.Helper()
	ctx := testCtx(t)
	ws := store.WorkspaceID(store.NewID("ws"))
	if err := m.store.CreateWorkspace(ctx, store.Workspace{ID: ws, Name: "w", Owner: owner, Created: time.Now().UTC()}); err != nil {
		t.Fatal(err)
	}
	return ws
}

func open(t testing.TB, m *member, ws store.WorkspaceID) (store.Lease, store.WorkspaceStore) {
	t.Helper()
	ctx := testCtx(t)
	l, err := m.store.Acquire(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	w, err := m.store.Open(ctx, ws, l)
	if err != nil {
		t.Fatal(err)
	}
	return l, w
}

// gadgetWith is a gadget record whose one version runs code (code no version refers to is
// collected by the commit that stores it).
func gadgetWith(code []byte) store.Gadget {
	return store.Gadget{ID: "g_code", Name: "code", Current: 1, Versions: []store.Version{{Number: 1, SHA256: store.CodeSHA(code), Size: len(code)}}}
}

func TestUsersAndTokensAreSeenOnEveryNode(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	u := store.User{ID: "u_ann", Name: "ann", Created: time.Now().UTC()}
	if err := ms[0].store.CreateUser(ctx, u); err != nil {
		t.Fatal(err)
	}
	if got, err := ms[1].store.UserByName(ctx, "ann"); err != nil || got.ID != u.ID {
		t.Fatalf("n2 reads user ann: %+v, %v", got, err)
	}
	tok := store.Token{Hash: "h1", UserID: u.ID, Created: time.Now().UTC()}
	if err := ms[0].store.PutToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if got, err := ms[2].store.Token(ctx, "h1"); err != nil || got.UserID != u.ID {
		t.Fatalf("n3 reads the token: %+v, %v", got, err)
	}

	// The replicas decide alike: the name is taken on every node.
	err := ms[1].store.CreateUser(ctx, store.User{ID: "u_other", Name: "ann"})
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a taken name on n2: %v, want ErrConflict", err)
	}
	for _, m := range ms {
		if got, err := m.store.UserByName(ctx, "ann"); err != nil || got.ID != u.ID {
			t.Fatalf("%s: ann is %+v, %v after the refused duplicate", m.node.Name(), got, err)
		}
	}

	// Bootstrap happens once in the whole cluster, with the same user everywhere.
	if issued, err := ms[2].store.Bootstrap(ctx, "root", store.Token{Hash: "boot"}); err != nil || !issued {
		t.Fatalf("first bootstrap: %v, %v", issued, err)
	}
	if issued, err := ms[0].store.Bootstrap(ctx, "root", store.Token{Hash: "boot2"}); err != nil || issued {
		t.Fatalf("second bootstrap on another node: %v, %v", issued, err)
	}
	root0, err0 := ms[0].store.UserByName(ctx, "root")
	root1, err1 := ms[1].store.UserByName(ctx, "root")
	if err0 != nil || err1 != nil || root0.ID != root1.ID || !root0.Created.Equal(root1.Created) {
		t.Fatalf("bootstrap user differs: %+v %v / %+v %v", root0, err0, root1, err1)
	}

	// A revocation on one node reaches the others.
	revoked := make(chan struct{}, 4)
	ms[1].store.OnRevoke(func() { revoked <- struct{}{} })
	if err := ms[0].store.DeleteToken(ctx, "h1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-revoked:
	case <-ctx.Done():
		t.Fatal("n2 was not told of the revocation")
	}
	if _, err := ms[1].store.Token(ctx, "h1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoked token on n2: %v", err)
	}
}

func TestBlobsReachEveryNode(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	code := bytes.Repeat([]byte("0123456789abcdef"), 5<<20/16)
	sha := store.CodeSHA(code)
	bp := store.Blueprint{ID: "bp1", Owner: "u", Title: "big", SHA256: sha, Size: len(code)}
	if err := ms[0].store.PutBlueprint(ctx, bp, code); err != nil {
		t.Fatal(err)
	}
	got, err := ms[1].store.Code(ctx, sha)
	if err != nil || !bytes.Equal(got, code) {
		t.Fatalf("n2 reads the 5 MiB blueprint code: %d bytes, %v", len(got), err)
	}
	if b, err := ms[2].store.Blueprint(ctx, "bp1"); err != nil || b.SHA256 != sha {
		t.Fatalf("n3 reads the blueprint: %+v, %v", b, err)
	}

	// Code committed in a workspace travels the same way.
	ws := newWorkspace(t, ms[0], "u")
	_, w := open(t, ms[0], ws)
	code2 := append(bytes.Clone(code), "v2"...)
	if err := w.Commit(ctx, []store.Mutation{store.PutCode(code2), store.PutGadget(gadgetWith(code2))}); err != nil {
		t.Fatal(err)
	}
	if got, err := ms[2].store.Code(ctx, store.CodeSHA(code2)); err != nil || !bytes.Equal(got, code2) {
		t.Fatalf("n3 reads committed code: %d bytes, %v", len(got), err)
	}

	// A commit larger than a log message goes through the blob store as a whole.
	var big []store.Mutation
	for i := range 10 {
		big = append(big, store.SetKV("g", []byte(strconv.Itoa(i)), bytes.Repeat([]byte{byte(i)}, store.MaxValue)))
	}
	if err := w.Commit(ctx, big); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := replicaWorkspace(t, ms[1].store, ws).Get("g", []byte("9")); err != nil || !ok || len(v) != store.MaxValue || v[0] != 9 {
		t.Fatalf("n2 reads a value of the 10 MiB commit: %d bytes, %v, %v", len(v), ok, err)
	}
}

func TestWorkspaceMovesBetweenNodes(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	ws := newWorkspace(t, ms[0], "u")

	l2, w2 := open(t, ms[1], ws)
	g := store.Gadget{ID: "g1", Name: "counter", Created: time.Now().UTC()}
	err := w2.Commit(ctx, []store.Mutation{
		store.PutGadget(g), store.SetKV("g1", []byte("n"), []byte("1")),
		store.AppendAudit(store.AuditEntry{Actor: "u", Action: "create"}),
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, err := w2.Get("g1", []byte("n")); err != nil || !ok || string(v) != "1" {
		t.Fatalf("n2 reads its own commit: %q %v %v", v, ok, err)
	}
	replicaWorkspace(t, ms[2].store, ws) // Lookup's epoch is the replica's
	if node, epoch, err := ms[2].store.Lookup(ctx, ws); err != nil || node != "n2" || epoch != l2.Epoch() {
		t.Fatalf("n3 looks %s up: %s %d %v, want n2 %d", ws, node, epoch, err, l2.Epoch())
	}
	if _, err := ms[0].store.Acquire(ctx, ws); !errors.Is(err, store.ErrOwnedElsewhere) {
		t.Fatalf("n1 acquires a workspace n2 holds: %v", err)
	}

	r3 := replicaWorkspace(t, ms[2].store, ws)
	if v, ok, err := r3.Get("g1", []byte("n")); err != nil || !ok || string(v) != "1" {
		t.Fatalf("n3 reads the commit: %q %v %v", v, ok, err)
	}
	gs, err := r3.Gadgets()
	if err != nil || len(gs) != 1 || gs[0].Name != "counter" {
		t.Fatalf("n3 gadgets: %+v %v", gs, err)
	}
	a2, _ := w2.Audit(store.AuditQuery{Limit: 1})
	a3, err := r3.Audit(store.AuditQuery{Limit: 1})
	if err != nil || len(a3) != 1 || len(a2) != 1 || a3[0] != a2[0] || a3[0].Time.IsZero() {
		t.Fatalf("audit differs between replicas: %+v / %+v (%v)", a2, a3, err)
	}

	// Released, it moves to n3, which reads n2's state and writes on.
	if err := l2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l3, w3 := open(t, ms[2], ws)
	if l3.Epoch() <= l2.Epoch() {
		t.Fatalf("epoch went from %d to %d", l2.Epoch(), l3.Epoch())
	}
	if err := w3.Commit(ctx, []store.Mutation{store.SetKV("g1", []byte("n"), []byte("2"))}); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := replicaWorkspace(t, ms[0].store, ws).Get("g1", []byte("n")); string(v) != "2" {
		t.Fatalf("n1 reads %q, want 2", v)
	}
}

func TestAStaleOwnerIsFencedByTheServer(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	ws := newWorkspace(t, ms[0], "u")
	l1, w1 := open(t, ms[0], ws)
	if err := w1.Commit(ctx, []store.Mutation{store.SetKV("g", []byte("k"), []byte("n1"))}); err != nil {
		t.Fatal(err)
	}
	// n1's lease ends behind its back (as when it is paused past the TTL): only its claim
	// goes; its store still believes in epoch E1.
	if err := l1.(*lease).claim.Release(ctx); err != nil {
		t.Fatal(err)
	}
	l2, w2 := open(t, ms[1], ws)
	if l2.Epoch() <= l1.Epoch() {
		t.Fatalf("epoch went from %d to %d", l1.Epoch(), l2.Epoch())
	}

	err := w1.Commit(ctx, []store.Mutation{store.SetKV("g", []byte("k"), []byte("stale"))})
	if !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale commit: %v, want ErrFenced", err)
	}
	pending := w1.Chain().Submit([]store.Mutation{store.SetKV("g", []byte("k2"), []byte("stale"))})
	if err := pending.Wait(); !errors.Is(err, store.ErrFenced) {
		t.Fatalf("stale chained commit: %v, want ErrFenced", err)
	}
	select {
	case <-l1.Lost():
	default:
		t.Fatal("the stale lease is not lost")
	}
	if err := w2.Commit(ctx, []store.Mutation{store.SetKV("g", []byte("k"), []byte("n2"))}); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		r := replicaWorkspace(t, m.store, ws)
		if v, _, _ := r.Get("g", []byte("k")); string(v) != "n2" {
			t.Errorf("%s reads %q, want n2", m.node.Name(), v)
		}
		if _, ok, _ := r.Get("g", []byte("k2")); ok {
			t.Errorf("%s has the stale chained write", m.node.Name())
		}
	}
}

func TestConcurrentCommitsLandInChainOrder(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	ws := newWorkspace(t, ms[0], "u")
	_, w := open(t, ms[0], ws)
	const chains, perChain, lone = 8, 40, 20
	var wg sync.WaitGroup
	errs := make(chan error, chains*perChain+lone)
	for c := range chains {
		wg.Go(func() {
			ch := w.Chain()
			var ps []*store.Pending
			for i := range perChain {
				ps = append(ps, ch.Submit([]store.Mutation{
					store.SetKV("g", fmt.Appendf(nil, "last-%d", c), []byte(strconv.Itoa(i))),
					store.SetKV("g", fmt.Appendf(nil, "c%d-%d", c, i), []byte("x")),
				}))
			}
			for _, p := range ps {
				errs <- p.Wait()
			}
		})
	}
	for i := range lone {
		wg.Go(func() {
			errs <- w.Commit(ctx, []store.Mutation{store.SetKV("g", fmt.Appendf(nil, "lone-%d", i), []byte("x"))})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	r := replicaWorkspace(t, ms[2].store, ws)
	n := 0
	if err := r.List("g", nil, func(k, v []byte) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if want := chains*perChain + chains + lone; n != want {
		t.Errorf("n3 has %d keys, want %d", n, want)
	}
	for c := range chains {
		if v, _, _ := r.Get("g", fmt.Appendf(nil, "last-%d", c)); string(v) != strconv.Itoa(perChain-1) {
			t.Errorf("chain %d ends at %q, want %d", c, v, perChain-1)
		}
	}
}

func TestABrokenChainStaysBroken(t *testing.T) {
	ms := testStores(t, 1)
	ctx := testCtx(t)
	ws := newWorkspace(t, ms[0], "u")
	_, w := open(t, ms[0], ws)

	// Refused before publishing: an empty key.
	bad := w.Chain()
	first := bad.Submit([]store.Mutation{store.SetKV("g", nil, []byte("x"))})
	second := bad.Submit([]store.Mutation{store.SetKV("g", []byte("k"), []byte("x"))})
	if err := first.Wait(); !errors.Is(err, store.ErrTooLarge) {
		t.Fatalf("empty key: %v", err)
	}
	if err := second.Wait(); !errors.Is(err, store.ErrChainBroken) {
		t.Fatalf("after a refused commit: %v, want ErrChainBroken", err)
	}

	// Refused by the replica while applying: the workspace is gone.
	ch, other := w.Chain(), w.Chain()
	del := ch.Submit([]store.Mutation{store.DeleteWorkspace()})
	gone := ch.Submit([]store.Mutation{store.SetKV("g", []byte("k"), []byte("x"))})
	after := ch.Submit([]store.Mutation{store.SetKV("g", []byte("k"), []byte("y"))})
	unrelated := other.Submit([]store.Mutation{store.SetKV("g", []byte("k"), []byte("z"))})
	if err := del.Wait(); err != nil {
		t.Fatal(err)
	}
	if err := gone.Wait(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("commit to a deleted workspace: %v, want ErrNotFound", err)
	}
	if err := after.Wait(); !errors.Is(err, store.ErrChainBroken) {
		t.Fatalf("after a failed commit: %v, want ErrChainBroken", err)
	}
	if err := unrelated.Wait(); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another chain: %v, want ErrNotFound", err)
	}
	if err := w.Commit(ctx, []store.Mutation{store.SetKV("g", []byte("k"), []byte("x"))}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a later commit to the deleted workspace: %v, want ErrNotFound", err)
	}
	if _, err := ms[0].store.Acquire(ctx, ws); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("acquire a deleted workspace: %v", err)
	}
}

// An entry that reaches the replica after its workspace was deleted (the commits queued behind
// the delete went out in the next entry) keeps the chain's promise: after the first refused
// commit of a chain, the later ones fail with ErrChainBroken.
func TestAnEntryForADeletedWorkspaceKeepsChains(t *testing.T) {
	ms := testStores(t, 1)
	set := []mutation{{Mutation: store.SetKV("g", []byte("k"), []byte("x"))}}
	e := entry{Op: opCommit, WS: "ws_gone", Epoch: 1, Commits: []commitRecord{
		{Chain: 1, Muts: set}, {Chain: 1, Muts: set}, {Chain: 2, Muts: set}, {Muts: set}, {Muts: set},
	}}
	r := ms[0].store.applyCommit(e)()
	want := []error{store.ErrNotFound, store.ErrChainBroken, store.ErrNotFound, store.ErrNotFound, store.ErrNotFound}
	for i, err := range r.commits {
		if !errors.Is(err, want[i]) || (i != 1 && errors.Is(err, store.ErrChainBroken)) {
			t.Errorf("commit %d: %v, want %v", i, err, want[i])
		}
	}
}

func TestWorkspaceIDsCannotReachOtherSubjects(t *testing.T) {
	ms := testStores(t, 1)
	ctx := testCtx(t)
	for _, id := range []store.WorkspaceID{"", "a.b", "*", ">", "ws.x.e", "a b", "a\x00"} {
		if _, err := ms[0].store.Acquire(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("acquire %q: %v, want ErrNotFound", id, err)
		}
		if err := ms[0].store.CreateWorkspace(ctx, store.Workspace{ID: id, Name: "x", Owner: "u"}); err == nil {
			t.Errorf("created workspace %q", id)
		}
	}
	if _, err := ms[0].store.Acquire(ctx, "ws_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("acquire a missing workspace: %v", err)
	}
}

// seedWorkspace creates user bo (u_bo) on ms[0] and a workspace of bo's run by ms[1], and
// commits a gadget's code and record and key = value to it; it returns the workspace, its
// lease and store on ms[1], and the code.
func seedWorkspace(t *testing.T, ms []*member, key, value string) (store.WorkspaceID, store.Lease, store.WorkspaceStore, []byte) {
	t.Helper()
	ctx := testCtx(t)
	if err := ms[0].store.CreateUser(ctx, store.User{ID: "u_bo", Name: "bo"}); err != nil {
		t.Fatal(err)
	}
	ws := newWorkspace(t, ms[0], "u_bo")
	l, w := open(t, ms[1], ws)
	code := []byte("component bytes")
	if err := w.Commit(ctx, []store.Mutation{store.PutCode(code), store.PutGadget(gadgetWith(code)), store.SetKV("g", []byte(key), []byte(value))}); err != nil {
		t.Fatal(err)
	}
	return ws, l, w, code
}

func TestARestartedNodeRebuildsItsReplica(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	ws, l, _, code := seedWorkspace(t, ms, "k", "v")
	m := ms[2]
	if err := m.store.barrier(ctx); err != nil {
		t.Fatal(err)
	}
	cfg := stopMember(m)

	// Written while n3 is down.
	if err := ms[0].store.PutToken(ctx, store.Token{Hash: "late", UserID: "u_bo"}); err != nil {
		t.Fatal(err)
	}
	restartMember(t, m, cfg)
	m.open(t)
	if u, err := m.store.UserByName(ctx, "bo"); err != nil || u.ID != "u_bo" {
		t.Fatalf("after restart: user %+v, %v", u, err)
	}
	if _, err := m.store.Token(ctx, "late"); err != nil {
		t.Fatalf("after restart: token written while down: %v", err)
	}
	if got, err := m.store.Code(ctx, store.CodeSHA(code)); err != nil || !bytes.Equal(got, code) {
		t.Fatalf("after restart: code %q, %v", got, err)
	}
	r := replicaWorkspace(t, m.store, ws)
	if v, _, _ := r.Get("g", []byte("k")); string(v) != "v" {
		t.Fatalf("after restart: kv %q", v)
	}
	if _, epoch, err := m.store.Lookup(ctx, ws); err != nil || epoch != l.Epoch() {
		t.Fatalf("after restart: epoch %d, %v, want %d", epoch, err, l.Epoch())
	}
}

func TestAFileThatIsNoReplicaIsKept(t *testing.T) {
	nd := testNodes(t, 1, nil)[0]
	ctx := testCtx(t)
	path := filepath.Join(t.TempDir(), "atelier.db")
	db, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, store.User{ID: "u_keep", Name: "keep"}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	l, err := NewLeases(ctx, nd)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if s, err := NewStore(ctx, nd, l, path); err == nil {
		s.Close()
		t.Fatal("NewStore rebuilt a single node's data file as its replica")
	}
	db, err = store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.UserByName(ctx, "keep"); err != nil {
		t.Fatalf("the data file lost its user: %v", err)
	}
}

func TestRetentionIsTheSameOnEveryReplica(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	r := store.Retention{Audit: 3}
	ms[0].store.SetRetention(r)
	last, err := ms[0].store.lastSeq(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := ms[1].store.barrier(ctx); err != nil {
		t.Fatal(err)
	}
	ms[1].store.SetRetention(r) // in force already: no new entry
	if again, _ := ms[1].store.lastSeq(ctx); again != last {
		t.Fatalf("setting the limits in force appended to the log (%d -> %d)", last, again)
	}
	ws := newWorkspace(t, ms[0], "u")
	_, w := open(t, ms[1], ws)
	for i := range 5 {
		if err := w.Commit(ctx, []store.Mutation{store.AppendAudit(store.AuditEntry{Actor: "u", Action: strconv.Itoa(i)})}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range ms {
		a, err := replicaWorkspace(t, m.store, ws).Audit(store.AuditQuery{Limit: 100})
		if err != nil || len(a) != 3 || a[0].Action != "4" {
			t.Errorf("%s keeps audit %+v (%v), want the newest 3", m.node.Name(), a, err)
		}
	}
}

func TestQuotasReachEveryNode(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	changed := make(chan struct{}, 4)
	ms[2].store.OnQuotas(func() { changed <- struct{}{} })
	want := quota.Limits{Workspaces: 2, HostMemory: quota.Unlimited}
	if err := ms[0].store.PutQuotas(ctx, want); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("n3 was not told of the new quotas")
	}
	for _, m := range ms {
		if err := m.store.barrier(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := m.store.Quotas(ctx); err != nil || got != want {
			t.Errorf("%s: quotas %+v, %v, want %+v", m.node.Name(), got, err, want)
		}
	}
}

func TestModelsAndAgentInstructionsReachEveryNode(t *testing.T) {
	ms := testStores(t, 3)
	ctx := testCtx(t)
	m := store.Model{ID: "mdl_1", Owner: "u_ann", Name: "gpt", Provider: "openai", BaseURL: "https://api.openai.com/v1",
		Model: "gpt-4o", SealedKey: []byte("sealed"), Created: time.Now().UTC()}
	if err := ms[0].store.PutModel(ctx, m); err != nil {
		t.Fatal(err)
	}
	if got, err := ms[1].store.Model(ctx, m.ID); err != nil || string(got.SealedKey) != "sealed" || got.Owner != m.Owner {
		t.Fatalf("n2 reads the model: %+v, %v", got, err)
	}
	if err := ms[2].store.PutModel(ctx, store.Model{ID: m.ID, Owner: "u_bob"}); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a taken model id on n3: %v, want ErrConflict", err)
	}
	if err := ms[1].store.PutAgentInstructions(ctx, "Be brief."); err != nil {
		t.Fatal(err)
	}
	if err := ms[2].store.DeleteModel(ctx, m.ID); err != nil {
		t.Fatal(err)
	}
	for _, n := range ms {
		if err := n.store.barrier(ctx); err != nil {
			t.Fatal(err)
		}
		if got, err := n.store.Models(ctx, "u_ann"); err != nil || len(got) != 0 {
			t.Errorf("%s: models of u_ann after the delete: %+v, %v", n.node.Name(), got, err)
		}
		if text, err := n.store.AgentInstructions(ctx); err != nil || text != "Be brief." {
			t.Errorf("%s: agent instructions %q, %v", n.node.Name(), text, err)
		}
	}
	if err := ms[0].store.DeleteModel(ctx, m.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v, want ErrNotFound", err)
	}
}
