package store

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
)

// TestRetention: the audit log keeps its newest lines, the action log the entries among its
// newest IDs plus every pending action, however old.
func TestRetention(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "a.db"))
	db.SetRetention(Retention{Audit: 5, Actions: 4})
	ws, _ := workspace(t, db)
	for i := range 12 {
		state := "recorded"
		if i == 1 {
			state = StatePending // action 2 waits for a decision
		}
		muts := []Mutation{AppendAudit(AuditEntry{Actor: "u1", Action: fmt.Sprint("a", i)}), PutAction(QueuedAction{ID: uint64(i + 1), Type: "action", State: state})}
		if err := ws.Commit(ctx, muts); err != nil {
			t.Fatal(err)
		}
	}
	audit, err := ws.Audit(AuditQuery{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range audit {
		actions = append(actions, e.Action)
	}
	if !slices.Equal(actions, []string{"a11", "a10", "a9", "a8", "a7"}) {
		t.Fatalf("audit kept %v", actions)
	}
	acts, err := ws.ActionsBefore(0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []uint64
	for _, a := range acts {
		ids = append(ids, a.ID)
	}
	if !slices.Equal(ids, []uint64{2, 9, 10, 11, 12}) {
		t.Fatalf("action log kept %v", ids)
	}
	// Once decided, the old action goes with the next trim.
	if err := ws.Commit(ctx, []Mutation{PutAction(QueuedAction{ID: 2, Type: "action", State: "applied"})}); err != nil {
		t.Fatal(err)
	}
	if acts, _ := ws.ActionsBefore(0, 100); len(acts) != 4 || acts[0].ID != 9 {
		t.Fatalf("after the decision: %+v", acts)
	}
}
