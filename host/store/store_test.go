package store

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"
)

func open(t *testing.T, path string) *DB {
	t.Helper()
	db, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestDeployVersionsAndCode(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	if _, err := db.Deploy(ctx, "g", []byte("v1"), []string{"atelier:host/kv"}); err != nil {
		t.Fatal(err)
	}
	g, err := db.Deploy(ctx, "g", []byte("v2"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if g.Current != 2 || len(g.Versions) != 2 || len(g.Grants) != 0 {
		t.Fatalf("after second deploy: %+v", g)
	}
	if _, code, _ := db.Gadget(ctx, "g"); string(code) != "v2" {
		t.Fatalf("current code = %q, want v2", code)
	}
	if _, err := db.Rollback(ctx, "g", 1); err != nil {
		t.Fatal(err)
	}
	if _, code, _ := db.Gadget(ctx, "g"); string(code) != "v1" {
		t.Fatalf("code after rollback = %q, want v1", code)
	}
	if _, err := db.Rollback(ctx, "g", 3); !errors.Is(err, ErrNotFound) {
		t.Fatalf("rollback to missing version: %v", err)
	}
	if _, _, err := db.Gadget(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing gadget: %v", err)
	}
}

func TestStateIsPerGadgetAndBatchIsAtomic(t *testing.T) {
	ctx := context.Background()
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	for _, n := range []string{"a", "b"} {
		if _, err := db.Deploy(ctx, n, []byte(n), nil); err != nil {
			t.Fatal(err)
		}
	}
	a, b := db.State("a"), db.State("b")
	if err := a.Set(ctx, "k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Get(ctx, "k"); ok {
		t.Fatal("gadget b sees gadget a's key")
	}
	// An op that bbolt refuses (empty key) rolls back the ops before it.
	err := a.Batch(ctx, []Op{{Key: "x", Value: []byte("2")}, {Key: "", Value: []byte("3")}})
	if err == nil {
		t.Fatal("batch with an empty key succeeded")
	}
	if _, ok, _ := a.Get(ctx, "x"); ok {
		t.Fatal("a failed batch left a partial write")
	}
	for _, k := range []string{"p/1", "p/2", "q/1"} {
		a.Set(ctx, k, []byte(k))
	}
	es, err := a.List(ctx, "p/", 10)
	if err != nil || len(es) != 2 || es[0].Key != "p/1" || es[1].Key != "p/2" {
		t.Fatalf("List(p/) = %v, %v", es, err)
	}
	if es, _ := a.List(ctx, "", 2); len(es) != 2 {
		t.Fatalf("List limit 2 returned %d", len(es))
	}
	if err := db.Delete(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := a.Get(ctx, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("state of a deleted gadget: %v", err)
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
