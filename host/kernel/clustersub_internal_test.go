package kernel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/store"
)

func TestSubscriptionsOfAWorkspaceShareItsLeaseLookup(t *testing.T) {
	var c holderCache
	lookups := map[store.WorkspaceID]int{}
	failing := false
	lookup := func(_ context.Context, ws store.WorkspaceID) (store.NodeID, bool, error) {
		lookups[ws]++
		if failing {
			return "", false, errors.New("no leader")
		}
		return "n2", true, nil
	}
	ctx := t.Context()
	for range 100 { // a hundred subscriptions check at once
		if node, held, err := c.holder(ctx, "ws_a", lookup); err != nil || !held || node != "n2" {
			t.Fatalf("holder: %q, %v, %v", node, held, err)
		}
	}
	if lookups["ws_a"] != 1 {
		t.Fatalf("%d lookups for one workspace within a period, want 1", lookups["ws_a"])
	}
	failing = true
	if _, _, err := c.holder(ctx, "ws_b", lookup); err == nil {
		t.Fatal("a failed lookup answered")
	}
	if _, _, err := c.holder(ctx, "ws_b", lookup); err == nil || lookups["ws_b"] != 2 {
		t.Fatalf("a failed lookup was remembered: %v after %d lookups", err, lookups["ws_b"])
	}
	failing = false
	now := time.Now()
	c.now = func() time.Time { return now }
	for i := range holderCacheSweep {
		if _, _, err := c.holder(ctx, store.WorkspaceID(fmt.Sprint("ws_", i)), lookup); err != nil {
			t.Fatal(err)
		}
	}
	now = now.Add(subscriptionCheck) // all of them expired
	if _, _, err := c.holder(ctx, "ws_a", lookup); err != nil || lookups["ws_a"] != 2 {
		t.Fatalf("an expired entry answered: %v after %d lookups", err, lookups["ws_a"])
	}
	if n := len(c.entries); n != 1 {
		t.Fatalf("%d entries after the expired ones were swept, want 1", n)
	}
}

func TestSubscriptionsCheckingAtOnceWaitForOneLookup(t *testing.T) {
	var c holderCache
	release := make(chan struct{})
	var lookups atomic.Int32
	lookup := func(context.Context, store.WorkspaceID) (store.NodeID, bool, error) {
		lookups.Add(1)
		<-release
		return "n2", true, nil
	}
	var wg sync.WaitGroup
	for range 10 {
		wg.Go(func() {
			if node, _, err := c.holder(t.Context(), "ws_a", lookup); err != nil || node != "n2" {
				t.Errorf("holder: %q, %v", node, err)
			}
		})
	}
	for lookups.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // the others reach the cache meanwhile
	close(release)
	wg.Wait()
	if n := lookups.Load(); n != 1 {
		t.Fatalf("%d lookups by ten subscriptions checking at once, want 1", n)
	}
}

// counted is a callback target that counts how often the last reference to it was dropped.
type counted struct {
	capnweb.Target
	disposed atomic.Int32
}

func (c *counted) Dispose() { c.disposed.Add(1) }

func TestAnEndedRoutedSubscriptionReleasesItsNestedCallbacks(t *testing.T) {
	cb := &counted{}
	stub, err := capnweb.NewStub(cb)
	if err != nil {
		t.Fatal(err)
	}
	s := &routedSubscription{args: dupStubs([]any{"topic", map[string]any{"on": []any{stub}}}).([]any)}
	stub.Dispose() // the client's own reference
	if n := cb.disposed.Load(); n != 0 {
		t.Fatalf("the callback was released %d times while the subscription held it", n)
	}
	s.release()
	if n := cb.disposed.Load(); n != 1 {
		t.Fatalf("the callback nested in a record was released %d times when the subscription ended, want 1", n)
	}
}
