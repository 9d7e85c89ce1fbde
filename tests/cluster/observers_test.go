package cluster

import (
	"context"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
)

// TestObserverRequirementsAcrossNodes: an observer requirement set on the node that runs the
// workspace holds for a collaborator who calls through another node; once the collaborator
// picked an account, the requirement and the pick survive kill -9 of that node (they are part
// of the replicated workspace record), and disconnecting the account locks the collaborator
// out again on the node that took the workspace over.
func TestObserverRequirementsAcrossNodes(t *testing.T) {
	tc := startCluster(t, 3)
	token, ws := tc.setup(t) // the workspace, with gadget todo, on n1
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must := func(p *capnweb.Promise, what string) any {
		t.Helper()
		v, err := p.Await(ctx)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
	const work = "http://127.0.0.1:9/notebooks/work"
	archive, err := gatekeeper.Pack(gatekeeper.Manifest{
		Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress:      gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{"127.0.0.1:9"}},
		Credentials: []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources:   []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: "http://127.0.0.1:9/notebooks/:notebook", Egress: []string{"http://127.0.0.1:9/api/notebooks/:notebook"}}},
	}, guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	gk := must(dial(t, tc.nodes[0].URL, tc.admin).api.Call(ctx, "installGatekeeper", archive), "installGatekeeper").(map[string]any)["id"].(string)
	connect := func(c *client, token string) string {
		t.Helper()
		return must(c.api.Call(ctx, "connectAccount", gk, work, map[string]any{"token": token}), "connectAccount").(map[string]any)["id"].(string)
	}
	owner := dial(t, tc.nodes[0].URL, token)
	ows := owner.api.Call(ctx, "openWorkspace", ws)
	must(ows.Call(ctx, "bindGatekeeper", "todo", "notes", connect(owner, "owners")), "bindGatekeeper")

	s, err := capnweb.DialWebSocket(ctx, tc.nodes[2].URL, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bobToken := must(s.Main().Call(ctx, "signup", "bob", "a long enough password"), "signup bob").(string)
	must(ows.Call(ctx, "addCollaborator", "bob", "use"), "addCollaborator")
	must(ows.Call(ctx, "setObserverRequirements", "use", []any{"todo.notes"}), "setObserverRequirements")

	bob := dial(t, tc.nodes[1].URL, bobToken) // through n2
	if _, err := bob.api.Call(ctx, "openWorkspace", ws).Call(ctx, "listGadgets").Await(ctx); errCode(err) != "FAILED_PRECONDITION" {
		t.Fatalf("bob's listGadgets through n2 before picking an account: %v, want FAILED_PRECONDITION", err)
	}
	mine := connect(bob, "bobs")
	must(bob.api.Call(ctx, "openWorkspace", ws).Call(ctx, "satisfyObserverRequirement", "todo.notes", mine), "satisfyObserverRequirement")
	must(bob.api.Call(ctx, "openWorkspace", ws).Call(ctx, "listGadgets"), "listGadgets after picking")

	// The owner's node dies; through n3 bob reads the workspace again once another node runs
	// it, with neither the requirement nor his pick lost.
	tc.nodes[0].Kill(t)
	bob3 := dial(t, tc.nodes[2].URL, bobToken)
	for deadline := time.Now().Add(90 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		_, err := bob3.api.Call(ctx, "openWorkspace", ws).Call(ctx, "listGadgets").Await(ctx)
		if err == nil {
			break
		}
		if errCode(err) == "FAILED_PRECONDITION" {
			t.Fatalf("after the failover bob is refused as if he had picked no account: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("bob cannot list the gadgets 90 s after the owner's node died: %v", err)
		}
	}
	if owner := tc.ownerOf(t, 2, ws); owner != "n2" && owner != "n3" {
		t.Fatalf("after the kill the workspace runs on %q, want n2 or n3", owner)
	}
	reqs, err := capnweb.AwaitAs[[]map[string]any](ctx, bob3.api.Call(ctx, "openWorkspace", ws).Call(ctx, "listObserverRequirements", ""))
	if err != nil || len(reqs) != 1 || reqs[0]["binding"] != "todo.notes" || reqs[0]["account"] != mine {
		t.Fatalf("bob's requirements after the failover = %v (%v), want todo.notes met with %s", reqs, err, mine)
	}
	must(bob3.api.Call(ctx, "disconnectAccount", mine), "disconnectAccount")
	if _, err := bob3.api.Call(ctx, "openWorkspace", ws).Call(ctx, "listGadgets").Await(ctx); errCode(err) != "FAILED_PRECONDITION" {
		t.Fatalf("bob's listGadgets after disconnecting his account: %v, want FAILED_PRECONDITION", err)
	}
}
