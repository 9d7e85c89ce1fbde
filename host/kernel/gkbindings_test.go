package kernel_test

import (
	"path/filepath"
	"testing"

	"atelier/capnweb"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/sdk/guesttest"
)

// withGatekeepers lets the server run gatekeeper components (none reaches the network here)
// and seal credentials with a key file in dir.
func withGatekeepers(t *testing.T, dir string) option {
	gk, err := gatekeeper.Interfaces(outboundhttp.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: gk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return func(c *kernel.Config) {
		c.GatekeeperRuntime = rt
		c.KeyFile = filepath.Join(dir, "vault.key")
	}
}

// probeManifest describes the probe gatekeeper (tests/gatekeeper/guests/probe) for notebooks
// under an address nothing listens on: listing bindings never calls it.
var probeManifest = gatekeeper.Manifest{
	Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
	Egress:      gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{"127.0.0.1:9"}},
	Credentials: []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
	Resources: []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: "http://127.0.0.1:9/notebooks/:notebook",
		Egress: []string{"http://127.0.0.1:9/api/notebooks/:notebook"}}},
}

// probeArchive packs the probe gatekeeper with probeManifest.
func probeArchive(t *testing.T) []byte {
	t.Helper()
	archive, err := gatekeeper.Pack(probeManifest, guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	return archive
}

// TestListGatekeeperBindings: the members of a workspace (use role included) list its
// gadgets' gatekeeper bindings with the account's owner and gatekeeper, and those with the
// build role the account's resource; an agent sees only the gadgets in its scope and may not
// unbind outside it (nor learn there whether a gadget exists); a stranger is refused and
// another workspace lists none of them; unbinding removes the entry and a disconnected
// account shows as missing.
func TestListGatekeeperBindings(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, filepath.Join(dir, "a.db"), withGatekeepers(t, dir))
	tok, err := s.k.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	admin := s.dial(t).Call(ctx, "authenticate", tok)
	gk := await(t, admin.Call(ctx, "installGatekeeper", probeArchive(t))).(map[string]any)["id"].(string)

	ada := s.user(t, "ada")
	acct := await(t, ada.Call(ctx, "connectAccount", gk, "http://127.0.0.1:9/notebooks/work", map[string]any{"token": "secret-1"})).(map[string]any)["id"].(string)
	ws := ada.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	code := guesttest.Bytes(t, counterGo)
	await(t, ws.Call(ctx, "createGadget", "a", code, counterGrants))
	await(t, ws.Call(ctx, "createGadget", "b", code, counterGrants))
	if got := await(t, ws.Call(ctx, "listGatekeeperBindings")).([]any); len(got) != 0 {
		t.Fatalf("bindings before any bind: %v", got)
	}
	await(t, ws.Call(ctx, "bindGatekeeper", "b", "notes", acct))
	await(t, ws.Call(ctx, "bindGatekeeper", "a", "work", acct))
	await(t, ws.Call(ctx, "bindGatekeeper", "a", "diary", acct))

	const resource = "http://127.0.0.1:9/notebooks/work"
	want := func(who *capnweb.Promise, resource any, names ...string) { // resource nil: not shown
		t.Helper()
		got := await(t, who.Call(ctx, "listGatekeeperBindings")).([]any)
		if len(got) != len(names)/2 {
			t.Fatalf("listGatekeeperBindings = %v, want %v", got, names)
		}
		for i, b := range got {
			m := b.(map[string]any)
			if m["gadget"] != names[2*i] || m["name"] != names[2*i+1] || m["account"] != acct || m["owner"] != "ada" ||
				m["gatekeeper"] != "probe" || m["resource"] != resource || m["missing"] != nil {
				t.Fatalf("binding %d = %v, want %s.%s with ada's account and resource %v", i, m, names[2*i], names[2*i+1], resource)
			}
		}
	}
	want(ws, resource, "a", "diary", "a", "work", "b", "notes")

	// A use collaborator lists them too, without the resource; an agent scoped to gadget b
	// sees b's only, and one with the build role cannot unbind a's nor probe for gadgets.
	bob := s.user(t, "bob")
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	want(bob.Call(ctx, "openWorkspace", id), nil, "a", "diary", "a", "work", "b", "notes")
	ag := await(t, ada.Call(ctx, "createAgent", "helper", map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "use", "gadgets": []any{"b"}}}})).(map[string]any)
	want(s.dial(t).Call(ctx, "authenticate", ag["token"]).Call(ctx, "openWorkspace", id), nil, "b", "notes")
	builder := await(t, ada.Call(ctx, "createAgent", "builder", map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "build", "gadgets": []any{"b"}}}})).(map[string]any)
	bws := s.dial(t).Call(ctx, "authenticate", builder["token"]).Call(ctx, "openWorkspace", id)
	want(bws, resource, "b", "notes")
	refused(t, bws.Call(ctx, "unbindGatekeeper", "a", "work"), "FORBIDDEN", "outside its scope")
	refused(t, bws.Call(ctx, "unbindGatekeeper", "nosuch", "work"), "FORBIDDEN", "outside its scope")
	refused(t, bws.Call(ctx, "unbind", "nosuch", "x"), "FORBIDDEN", "outside its scope")

	// A stranger cannot list them, nor can eve through her own workspace's id.
	eve := s.user(t, "eve")
	refused(t, eve.Call(ctx, "openWorkspace", id).Call(ctx, "listGatekeeperBindings"), "FORBIDDEN", "no access")
	own := eve.Call(ctx, "createWorkspace", "mine")
	if got := await(t, own.Call(ctx, "listGatekeeperBindings")).([]any); len(got) != 0 {
		t.Fatalf("eve's own workspace lists %v", got)
	}
	refused(t, bob.Call(ctx, "openWorkspace", id).Call(ctx, "unbindGatekeeper", "a", "work"), "FORBIDDEN", "needs the build role")

	// Unbinding removes the entry; a disconnected account shows as missing.
	await(t, ws.Call(ctx, "unbindGatekeeper", "a", "diary"))
	want(ws, resource, "a", "work", "b", "notes")
	await(t, ada.Call(ctx, "disconnectAccount", acct))
	got := await(t, ws.Call(ctx, "listGatekeeperBindings")).([]any)
	if len(got) != 2 || got[0].(map[string]any)["missing"] != true || got[0].(map[string]any)["owner"] != nil {
		t.Fatalf("bindings of a disconnected account = %v, want them marked missing", got)
	}
}
