package store

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRemoveReplicaDeletesOnlyReplicas(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "atelier.db")
	db := open(t, data)
	db.Close()
	if err := RemoveReplica(data); err == nil {
		t.Fatal("a single node's data file was deleted as a replica")
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("the data file is gone: %v", err)
	}

	replica := filepath.Join(dir, "replica.db")
	r, err := OpenWith(replica, Options{Replica: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := RemoveReplica(replica); err == nil {
		t.Fatal("a replica in use was deleted")
	}
	r.Close()
	if err := RemoveReplica(replica); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(replica); !os.IsNotExist(err) {
		t.Fatalf("the replica is still there: %v", err)
	}
	if err := RemoveReplica(replica); err != nil {
		t.Fatalf("removing a missing replica: %v", err)
	}
}

func TestASnapshotIsTheFileAsItWasWhenTaken(t *testing.T) {
	dir := t.TempDir()
	db := open(t, filepath.Join(dir, "atelier.db"))
	defer db.Close()
	ctx := t.Context()
	if err := db.CreateUser(ctx, User{ID: "u_before", Name: "before"}); err != nil {
		t.Fatal(err)
	}
	snap, err := db.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, User{ID: "u_after", Name: "after"}); err != nil { // goes on meanwhile
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.db")
	f, err := os.Create(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := snap.WriteTo(f); err != nil {
		t.Fatal(err)
	}
	if err := snap.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	cp := open(t, copyPath)
	defer cp.Close()
	if _, err := cp.UserByName(ctx, "before"); err != nil {
		t.Fatalf("the copy lacks what was there: %v", err)
	}
	if _, err := cp.UserByName(ctx, "after"); err == nil {
		t.Fatal("the copy has a user created after the snapshot")
	}
}
