package gatekeeper_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"atelier/host/store"
)

// TestKernelAccountState: a gatekeeper's kv is its account's durable state: what one instance
// stores, a later instance of the account reads, also after a server restart; another account
// of the same gatekeeper has its own; disconnecting the account deletes it.
func TestKernelAccountState(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	data := filepath.Join(t.TempDir(), "atelier.db")
	s := startServer(t, svc, data)
	ws, wsID, accounts := probeWorkspace(t, s, svc, "work", "home")
	work := accounts["work"]
	callProbe(t, ws, "work", "remember", "cursor", "page-7")
	if got := callProbe(t, ws, "home", "recall", "cursor"); got != nil {
		t.Fatalf("another account of the gatekeeper reads %v", got)
	}
	// Rebinding starts a fresh instance of the account: the state is still there.
	await(t, ws.Call(ctx, "unbindGatekeeper", "caller", "work"))
	await(t, ws.Call(ctx, "bindGatekeeper", "caller", "work", work))
	if got := callProbe(t, ws, "work", "recall", "cursor"); got != "page-7" {
		t.Fatalf("recall after a new instance = %v", got)
	}

	// After a restart too.
	s.stop()
	s = startServer(t, svc, data)
	alice := s.login(t, "alice")
	ws = alice.Call(ctx, "openWorkspace", wsID, "")
	if got := callProbe(t, ws, "work", "recall", "cursor"); got != "page-7" {
		t.Fatalf("recall after a restart = %v", got)
	}

	// Disconnecting the account deletes its state.
	await(t, alice.Call(ctx, "disconnectAccount", work))
	if _, ok, err := s.db.AccountState(ctx, work, "cursor"); ok || err != nil {
		t.Fatalf("the state of a disconnected account: %v %v", ok, err)
	}
	if err := s.db.UpdateAccountState(ctx, work, []store.StateOp{{Key: "k", Value: []byte("v")}}, 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a write for a disconnected account: %v", err)
	}
}
