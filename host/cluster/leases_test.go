package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"atelier/host/store"
)

// testLeases starts Leases on every node and closes them when the test ends (before the nodes).
func testLeases(t testing.TB, nodes []*Node) []*Leases {
	t.Helper()
	ls := make([]*Leases, len(nodes))
	for i, n := range nodes {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l, err := NewLeases(ctx, n)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		ls[i] = l
	}
	return ls
}

// eventually polls cond until it holds, failing the test after a generous deadline.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// claimWhenFree claims ws at l once l's view of the lease shows no holder: its reads may come
// from a replica a moment behind the release.
func claimWhenFree(t testing.TB, l *Leases, ws store.WorkspaceID) *Claim {
	t.Helper()
	var c *Claim
	eventually(t, fmt.Sprintf("%s claims the released workspace", l.node.Name()), func() bool {
		var owner *store.OwnerError
		var err error
		c, err = l.Claim(context.Background(), ws)
		if errors.As(err, &owner) {
			return false
		}
		if err != nil {
			t.Fatalf("%s claiming a released workspace: %v", l.node.Name(), err)
		}
		return true
	})
	return c
}

// closedWithin reports whether ch is closed now or closes within d.
func closedWithin(ch <-chan struct{}, d time.Duration) bool {
	select {
	case <-ch:
		return true
	default:
	}
	select {
	case <-ch:
		return true
	case <-time.After(d):
		return false
	}
}

func holder(t *testing.T, l *Leases, ws store.WorkspaceID) store.NodeID {
	t.Helper()
	n, ok, err := l.Holder(context.Background(), ws)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return ""
	}
	return n
}

// claimEventually claims ws on l, retrying while another node's lease has not expired yet.
func claimEventually(t *testing.T, l *Leases, ws store.WorkspaceID) *Claim {
	t.Helper()
	var c *Claim
	eventually(t, fmt.Sprintf("%s claims %s", l.node.Name(), ws), func() bool {
		var err error
		c, err = l.Claim(context.Background(), ws)
		if err != nil && !errors.Is(err, store.ErrOwnedElsewhere) {
			t.Fatal(err)
		}
		return err == nil
	})
	return c
}

func TestAWorkspaceHasOneHolder(t *testing.T) {
	ctx := context.Background()
	ls := testLeases(t, testNodes(t, 3, nil))
	ws := store.WorkspaceID(store.NewID("ws"))
	c1, err := ls[0].Claim(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ls[1].Claim(ctx, ws)
	var owner *store.OwnerError
	if !errors.As(err, &owner) || owner.Node != "n1" || owner.Workspace != ws || !errors.Is(err, store.ErrOwnedElsewhere) {
		t.Fatalf("n2 claiming n1's workspace: got %v, want an OwnerError naming n1", err)
	}
	for _, l := range ls {
		eventually(t, fmt.Sprintf("%s sees n1 holding", l.node.Name()), func() bool { return holder(t, l, ws) == "n1" })
	}

	// Renewals keep the lease alive well past its TTL.
	time.Sleep(2 * ls[0].ttl)
	select {
	case <-c1.Lost():
		t.Fatal("a renewed claim was lost")
	default:
	}
	if _, err := ls[2].Claim(ctx, ws); !errors.As(err, &owner) || owner.Node != "n1" {
		t.Fatalf("n3 claiming after two TTLs of renewals: got %v, want an OwnerError naming n1", err)
	}
	eventually(t, "n1's record counts its lease", func() bool {
		nodes, err := ls[1].Nodes(ctx)
		return err == nil && len(nodes) == 3 && nodes[0].Leases == 1
	})

	if err := c1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if !closedWithin(c1.Lost(), 0) {
		t.Error("Lost is still open after Release")
	}
	if err := c1.Release(ctx); err != nil {
		t.Fatalf("a second release: %v", err)
	}
	// A KV read may be served by a replica a moment behind (direct get), so the release shows
	// shortly after.
	eventually(t, "the released lease is gone", func() bool { return holder(t, ls[0], ws) == "" })
	c2 := claimWhenFree(t, ls[1], ws)
	defer c2.Release(ctx)
	for _, l := range ls {
		eventually(t, fmt.Sprintf("%s sees n2 holding", l.node.Name()), func() bool { return holder(t, l, ws) == "n2" })
	}
	held, err := ls[2].Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 1 || held[ws] != "n2" {
		t.Fatalf("Held = %v, want only %s on n2", held, ws)
	}
}

func TestANewClaimOnTheSameNodeSupersedesTheOld(t *testing.T) {
	ctx := context.Background()
	l := testLeases(t, testNodes(t, 1, nil))[0]
	ws := store.WorkspaceID(store.NewID("ws"))
	old, err := l.Claim(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	c, err := l.Claim(ctx, ws)
	if err != nil {
		t.Fatalf("claiming a workspace this node holds: %v", err)
	}
	if !closedWithin(old.Lost(), 0) {
		t.Fatal("the superseded claim is not lost")
	}
	if err := old.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h := holder(t, l, ws); h != "n1" {
		t.Fatalf("releasing the superseded claim left the holder %q", h)
	}
	time.Sleep(2 * l.ttl)
	if closedWithin(c.Lost(), 0) {
		t.Fatal("the new claim was lost")
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h := holder(t, l, ws); h != "" {
		t.Fatalf("released, yet held by %q", h)
	}
}

func TestALeaseExpiresWithoutRenewals(t *testing.T) {
	ctx := context.Background()
	nodes := testNodes(t, 3, func(c *Config) { c.LeaseTTL = 4 * time.Second })
	ls := testLeases(t, nodes)
	ws := store.WorkspaceID(store.NewID("ws"))
	stale, err := ls[0].Claim(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	ls[0].Close() // stops renewing without releasing
	if !closedWithin(stale.Lost(), 0) {
		t.Fatal("a claim of closed leases is not lost")
	}
	var owner *store.OwnerError
	if _, err := ls[1].Claim(ctx, ws); !errors.As(err, &owner) || owner.Node != "n1" {
		t.Fatalf("claim right after n1 closed its leases: got %v, want an OwnerError naming n1 (Close must not release)", err)
	}
	if err := stale.Release(ctx); err != nil {
		t.Fatalf("releasing a lost claim: %v", err)
	}
	closed := time.Now()
	c := claimEventually(t, ls[1], ws)
	t.Logf("n2 claimed %v after n1 stopped renewing (TTL %v)", time.Since(closed), ls[1].ttl)
	for _, l := range ls[1:] {
		eventually(t, fmt.Sprintf("%s sees n2 holding", l.node.Name()), func() bool { return holder(t, l, ws) == "n2" })
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestALeaseUnderThisNodesNameIsTakenOver(t *testing.T) {
	ctx := context.Background()
	nodes := testNodes(t, 1, nil)
	first := testLeases(t, nodes)[0]
	ws := store.WorkspaceID(store.NewID("ws"))
	if _, err := first.Claim(ctx, ws); err != nil {
		t.Fatal(err)
	}
	first.Close() // a crash: the lease stays until it expires
	restarted := testLeases(t, nodes)[0]
	c, err := restarted.Claim(ctx, ws)
	if err != nil {
		t.Fatalf("taking over this node's own earlier lease: %v", err)
	}
	time.Sleep(2 * restarted.ttl)
	if closedWithin(c.Lost(), 0) {
		t.Fatal("the taken-over lease was lost")
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := restarted.Holder(ctx, ws); err != nil || ok {
		t.Fatalf("after release: held %t, %v", ok, err)
	}
}

func TestATakenLeaseIsLostAtTheNextRenewal(t *testing.T) {
	ctx := context.Background()
	// A long TTL puts the self-fence (at 3/4 of it) well after the next renewal (at 1/3).
	nodes := testNodes(t, 1, func(c *Config) { c.LeaseTTL = 12 * time.Second })
	l := testLeases(t, nodes)[0]
	ws := store.WorkspaceID(store.NewID("ws"))
	c, err := l.Claim(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.lease.Put(ctx, leaseKey(ws), []byte("n2")); err != nil { // a usurper ignoring the protocol
		t.Fatal(err)
	}
	if !closedWithin(c.Lost(), 8*time.Second) {
		t.Fatal("the claim did not notice at its renewal that its lease changed hands")
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h := holder(t, l, ws); h != "n2" {
		t.Fatalf("the lost claim's release touched the new holder's lease: holder %q", h)
	}
}

func TestAClaimFencesItselfWhenRenewalsFail(t *testing.T) {
	ctx := context.Background()
	nodes := testNodes(t, 3, nil)
	ls := testLeases(t, nodes)
	ws := store.WorkspaceID(store.NewID("ws"))
	c, err := ls[0].Claim(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	cut := time.Now()
	nodes[0].Close() // n1 can no longer reach anyone
	if !closedWithin(c.Lost(), 10*ls[0].ttl) {
		t.Fatal("a claim that cannot renew was not lost")
	}
	t.Logf("n1's claim was lost %v after its node stopped (TTL %v)", time.Since(cut), ls[0].ttl)
	c2 := claimEventually(t, ls[1], ws)
	t.Logf("n2 claimed %v after n1's node stopped", time.Since(cut))
	if err := c2.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestMembershipAndPlacement(t *testing.T) {
	ctx := context.Background()
	begin := time.Now().Add(-time.Second)
	ls := testLeases(t, testNodes(t, 3, nil))
	ls[0].SetAddress("10.0.0.1:8080")
	for _, l := range ls {
		eventually(t, fmt.Sprintf("%s lists the three nodes", l.node.Name()), func() bool {
			nodes, err := l.Nodes(ctx)
			if err != nil {
				t.Fatal(err)
			}
			return len(nodes) == 3 && nodes[0].Address == "10.0.0.1:8080"
		})
		nodes, _ := l.Nodes(ctx)
		for i, n := range nodes {
			if want := store.NodeID(fmt.Sprintf("n%d", i+1)); n.Name != want || n.Draining || n.Seen.Before(begin) || n.Started.Before(begin) {
				t.Errorf("%s lists %+v, want %s, serving, seen and started since the test began", l.node.Name(), n, want)
			}
		}
	}

	var wss []store.WorkspaceID
	for i := range 100 {
		wss = append(wss, store.WorkspaceID(fmt.Sprintf("ws_t%03d", i)))
	}
	before := map[store.WorkspaceID]store.NodeID{}
	count := map[store.NodeID]int{}
	for _, ws := range wss {
		for _, l := range ls {
			n, err := l.Pick(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			if before[ws] != "" && before[ws] != n {
				t.Fatalf("%s picks %s for %s where another node picks %s", l.node.Name(), n, ws, before[ws])
			}
			before[ws] = n
		}
		count[before[ws]]++
	}
	for _, n := range []store.NodeID{"n1", "n2", "n3"} {
		if count[n] < 10 {
			t.Errorf("100 workspaces spread as %v: %s got too few", count, n)
		}
	}

	if err := ls[1].SetDraining(ctx, true); err != nil {
		t.Fatal(err)
	}
	if !ls[1].Draining() {
		t.Fatal("Draining is false after SetDraining(true)")
	}
	for _, l := range ls {
		eventually(t, fmt.Sprintf("%s sees n2 draining", l.node.Name()), func() bool {
			nodes, err := l.Nodes(ctx)
			return err == nil && len(nodes) == 3 && nodes[1].Draining
		})
	}
	if _, err := ls[1].Claim(ctx, wss[0]); !errors.Is(err, ErrDraining) {
		t.Fatalf("claim on a draining node: got %v, want ErrDraining", err)
	}
	for _, ws := range wss {
		for _, l := range ls {
			n, err := l.Pick(ctx, ws)
			if err != nil {
				t.Fatal(err)
			}
			if n == "n2" {
				t.Fatalf("%s picks the draining n2 for %s", l.node.Name(), ws)
			}
			if before[ws] != "n2" && before[ws] != n {
				t.Fatalf("draining n2 moved %s from %s to %s", ws, before[ws], n)
			}
		}
	}

	if err := ls[1].SetDraining(ctx, false); err != nil {
		t.Fatal(err)
	}
	c, err := ls[1].Claim(ctx, wss[0])
	if err != nil {
		t.Fatalf("claim after the drain ended: %v", err)
	}
	if err := c.Release(ctx); err != nil {
		t.Fatal(err)
	}

	ls[2].Close()
	for _, l := range ls[:2] {
		eventually(t, fmt.Sprintf("%s drops the closed n3", l.node.Name()), func() bool {
			nodes, err := l.Nodes(ctx)
			return err == nil && len(nodes) == 2 && !slices.ContainsFunc(nodes, func(n NodeInfo) bool { return n.Name == "n3" })
		})
	}
	if _, err := ls[2].Claim(ctx, wss[1]); err == nil {
		t.Fatal("closed leases claimed a workspace")
	}

	for _, l := range ls[:2] {
		if err := l.SetDraining(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "no node accepts workspaces", func() bool {
		_, err := ls[0].Pick(ctx, wss[0])
		return err != nil
	})
}

func TestBadWorkspaceIDsAreRefused(t *testing.T) {
	ctx := context.Background()
	l := testLeases(t, testNodes(t, 1, nil))[0]
	for _, ws := range []store.WorkspaceID{"", "ws.x", "ws_*", "ws_>", "ws.>", "a b", "ws_ü", "../x", "ws/x", "ws_a\x00", store.WorkspaceID(strings.Repeat("a", maxNameLen+1))} {
		if _, err := l.Claim(ctx, ws); err == nil {
			t.Errorf("Claim(%q) succeeded", ws)
		}
		if _, _, err := l.Holder(ctx, ws); err == nil {
			t.Errorf("Holder(%q) succeeded", ws)
		}
		if _, err := l.Pick(ctx, ws); err == nil {
			t.Errorf("Pick(%q) succeeded", ws)
		}
	}
	held, err := l.Held(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(held) != 0 {
		t.Fatalf("refused claims left leases: %v", held)
	}
	if _, err := l.Claim(ctx, store.WorkspaceID(strings.Repeat("a", maxNameLen))); err != nil {
		t.Fatalf("the longest valid id: %v", err)
	}
}

func TestEveryNodeNeedsTheSameLeaseTTL(t *testing.T) {
	nodes := testNodes(t, 1, nil)
	testLeases(t, nodes)
	other := *nodes[0]
	other.cfg.LeaseTTL = 5 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := NewLeases(ctx, &other); err == nil || !strings.Contains(err.Error(), "same lease TTL") {
		t.Fatalf("leases with another TTL: got %v, want a TTL mismatch", err)
	}
}

// BenchmarkLeases measures, on a single node (R1), a claim with its release and a lease
// renewal (the Update that renew sends), reporting the p50 and p99 of each.
func BenchmarkLeases(b *testing.B) {
	ctx := context.Background()
	n, err := Start(ctx, Config{Name: "bench", Dir: b.TempDir(), Replicas: 1, LeaseTTL: 2 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	defer n.Close()
	l := testLeases(b, []*Node{n})[0]
	key := leaseKey("ws_renewal")
	rev, err := l.lease.Create(ctx, key, []byte(n.Name()))
	if err != nil {
		b.Fatal(err)
	}
	var claims, renewals []time.Duration
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		c, err := l.Claim(ctx, store.WorkspaceID(fmt.Sprintf("ws_b%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Release(ctx); err != nil {
			b.Fatal(err)
		}
		claims = append(claims, time.Since(start))
		start = time.Now()
		if rev, err = l.lease.Update(ctx, key, []byte(n.Name()), rev); err != nil {
			b.Fatal(err)
		}
		renewals = append(renewals, time.Since(start))
	}
	for name, ds := range map[string][]time.Duration{"claim+release": claims, "renew": renewals} {
		slices.Sort(ds)
		b.ReportMetric(float64(ds[len(ds)/2].Microseconds()), name+"-p50-µs")
		b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds()), name+"-p99-µs")
	}
}

// TestANodeNameServesOneProcess: a second process under the name of a running node is refused
// (it would take the running node's leases), and one that starts while a crashed process's
// membership record is still there waits until the record expires, leaving it alone meanwhile.
func TestANodeNameServesOneProcess(t *testing.T) {
	nodes := testNodes(t, 1, nil)
	running := testLeases(t, nodes)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := NewLeases(ctx, nodes[0]); err == nil || !strings.Contains(err.Error(), "in use by a running node") {
		t.Fatalf("a second process of node n1: got %v, want a refusal", err)
	}
	if _, err := running.members.Get(ctx, memberKey(nodes[0].Name())); err != nil {
		t.Fatalf("the refused process removed the running node's record: %v", err)
	}

	// A crash: the record is left behind and nobody renews it.
	running.publishM.Lock()
	running.published = false // so that Close leaves the record, as a crash would
	running.publishM.Unlock()
	running.Close()
	if err := running.publish(ctx); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	restarted := testLeases(t, nodes)[0]
	// An order, not a speed: the record was fresh at start, so it expired a memberTTL later.
	if waited := time.Since(start); waited < running.memberTTL()/2 {
		t.Fatalf("started after %v, before the crashed process's record expired", waited)
	}
	if _, err := restarted.members.Get(ctx, memberKey(nodes[0].Name())); err != nil {
		t.Fatalf("the restarted node has no record: %v", err)
	}
}
