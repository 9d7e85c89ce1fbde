package store

import (
	"bytes"
	"errors"
	"path/filepath"
	"testing"
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
