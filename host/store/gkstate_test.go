package store_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"atelier/host/store"
)

func TestAccountState(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "a.db")
	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	gk := store.GatekeeperRecord{ID: "sha256:gk", Name: "notes", Created: time.Now()}
	if err := s.PutGatekeeper(ctx, gk, []byte("archive")); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"acct_a", "acct_b"} {
		if err := s.PutAccount(ctx, store.GatekeeperAccount{ID: id, Owner: "u1", Gatekeeper: gk.ID}); err != nil {
			t.Fatal(err)
		}
	}
	set := func(acct string, quota int64, ops ...store.StateOp) error {
		return s.UpdateAccountState(ctx, acct, ops, quota)
	}
	if err := set("acct_a", 0, store.StateOp{Key: "p/1", Value: []byte("one")}, store.StateOp{Key: "p/2", Value: []byte("two")}, store.StateOp{Key: "q", Value: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	if err := set("acct_missing", 0, store.StateOp{Key: "k", Value: []byte("v")}); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a write for an unknown account: %v", err)
	}
	// The quota counts keys plus values after the whole batch; a refused batch writes nothing.
	if err := set("acct_a", 20, store.StateOp{Key: "p/3", Value: []byte("three")}); !errors.Is(err, store.ErrStateQuota) {
		t.Fatalf("over the quota: %v", err)
	}
	if _, ok, _ := s.AccountState(ctx, "acct_a", "p/3"); ok {
		t.Fatal("a refused batch was written")
	}
	if err := set("acct_a", 20, store.StateOp{Delete: true, Key: "q"}, store.StateOp{Key: "p/1", Value: []byte("1")}); err != nil {
		t.Fatalf("a batch that shrinks the state: %v", err)
	}
	es, err := s.ListAccountState(ctx, "acct_a", "p/", 10)
	if err != nil || len(es) != 2 || es[0].Key != "p/1" || string(es[0].Value) != "1" || es[1].Key != "p/2" {
		t.Fatalf("list = %v %v", es, err)
	}
	if es, _ := s.ListAccountState(ctx, "acct_a", "p/", 1); len(es) != 1 {
		t.Fatalf("list with limit 1 = %v", es)
	}
	if es, _ := s.ListAccountState(ctx, "acct_b", "", 10); len(es) != 0 {
		t.Fatalf("another account sees %v", es)
	}

	// Durable across a reopen; deleted with the account, and with the gatekeeper.
	s.Close()
	if s, err = store.Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if v, ok, err := s.AccountState(ctx, "acct_a", "p/2"); !ok || string(v) != "two" || err != nil {
		t.Fatalf("after reopen: %q %v %v", v, ok, err)
	}
	if err := set("acct_b", 0, store.StateOp{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAccount(ctx, "acct_a"); err != nil {
		t.Fatal(err)
	}
	if es, _ := s.ListAccountState(ctx, "acct_a", "", 10); len(es) != 0 {
		t.Fatalf("state of a deleted account: %v", es)
	}
	if err := s.DeleteGatekeeper(ctx, gk.ID); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.AccountState(ctx, "acct_b", "k"); ok {
		t.Fatal("state of an account of a removed gatekeeper")
	}
}
