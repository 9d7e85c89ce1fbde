package gatekeeper_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/host/store"
)

// TestKernelAccountState: a gatekeeper's kv is its account's durable state: what one instance
// stores, a later instance of the account reads, also after a server restart; another account
// of the same gatekeeper has its own; disconnecting the account deletes it.
func TestKernelAccountState(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	m := gatekeeper.Manifest{
		Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress:      gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{svc.Addr}},
		Credentials: []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources:   []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: svc.Origin + "/notebooks/:notebook", Egress: []string{svc.Origin + "/api/notebooks/:notebook"}}},
	}
	archive, err := gatekeeper.Pack(m, guest(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "atelier.db")
	s := startServer(t, svc, data)
	admin, alice := s.authed(t, s.adminToken(t)), s.user(t, "alice")
	id := await(t, admin.Call(ctx, "installGatekeeper", archive)).(map[string]any)["id"].(string)
	creds := map[string]any{"token": aliceToken}
	work := await(t, alice.Call(ctx, "connectAccount", id, svc.Origin+"/notebooks/work", creds)).(map[string]any)["id"].(string)
	home := await(t, alice.Call(ctx, "connectAccount", id, svc.Origin+"/notebooks/home", creds)).(map[string]any)["id"].(string)
	ws := alice.Call(ctx, "createWorkspace", "home")
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	grants := []any{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}
	await(t, ws.Call(ctx, "createGadget", "caller", map[string]any{"server.js": callerJS}, grants))
	await(t, ws.Call(ctx, "bindGatekeeper", "caller", "work", work))
	await(t, ws.Call(ctx, "bindGatekeeper", "caller", "home", home))
	call := func(ws *capnweb.Promise, binding, method string, args ...any) any {
		t.Helper()
		return await(t, ws.Call(ctx, "gadget", "caller").Call(ctx, "connect").Call(ctx, "call", binding, method, args))
	}

	call(ws, "work", "remember", "cursor", "page-7")
	if got := call(ws, "home", "recall", "cursor"); got != nil {
		t.Fatalf("another account of the gatekeeper reads %v", got)
	}
	// Rebinding starts a fresh instance of the account: the state is still there.
	await(t, ws.Call(ctx, "unbindGatekeeper", "caller", "work"))
	await(t, ws.Call(ctx, "bindGatekeeper", "caller", "work", work))
	if got := call(ws, "work", "recall", "cursor"); got != "page-7" {
		t.Fatalf("recall after a new instance = %v", got)
	}

	// After a restart too.
	s.stop()
	s = startServer(t, svc, data)
	alice = s.login(t, "alice")
	ws = alice.Call(ctx, "openWorkspace", wsID, "")
	if got := call(ws, "work", "recall", "cursor"); got != "page-7" {
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
