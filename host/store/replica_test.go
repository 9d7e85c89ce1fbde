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
