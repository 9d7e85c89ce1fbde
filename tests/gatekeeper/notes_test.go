package gatekeeper_test

import (
	"context"
	"strings"
	"testing"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
)

type note struct {
	ID    int64  `json:"id"`
	Title string `json:"title"`
	Body  string `json:"body"`
}

type pending struct {
	Action uint64 `json:"action"`
	Status string `json:"status"`
}

func entry(t *testing.T, q *gatekeeper.MemoryQueue, id uint64) gatekeeper.Entry {
	t.Helper()
	for _, e := range q.List() {
		if e.ID == id {
			return e
		}
	}
	t.Fatalf("no queue entry %d", id)
	return gatekeeper.Entry{}
}

// TestNotes drives the example gatekeeper against the real service: reads are observed,
// writes wait for approval, rejections leave the service untouched, auto-approval works only
// for auto-approvable kinds and stops at a manual gate, and revert undoes an add.
func TestNotes(t *testing.T) {
	svc := startService(t)
	rt := newRuntime(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	runNotes(t, svc, install(t, rt, notesManifest(t, svc), guest(t, "gatekeepers/notes-go")))
}

// runNotes is TestNotes on an installed notes gatekeeper of either package format, whose
// instances reach svc.
func runNotes(t *testing.T, svc *service, g *gatekeeper.Gatekeeper) {
	if g.Vendor.DisplayName != "Notes" || len(g.Kinds) != 1 || g.Kinds[0].Kind != "notebook" {
		t.Fatalf("install read %+v %+v", g.Vendor, g.Kinds)
	}
	q := gatekeeper.NewMemoryQueue()
	var con console
	in, s := start(t, g, "alice-work", svc.Origin+"/notebooks/work", aliceToken, q, &con)
	ctx := context.Background()

	res, err := in.DescribeResource(ctx)
	if err != nil || res.Title != "Notebook work" || res.SuggestedBindingName != "notes" {
		t.Fatalf("describe resource: %+v %v", res, err)
	}
	if ts, err := in.TypeScriptTypes(ctx); err != nil || !strings.Contains(ts, "interface Notebook") {
		t.Fatalf("typescript: %q %v", ts, err)
	}

	// A read returns the data and records an observation for the session.
	var notes []note
	call(t, s, &notes, "list")
	if len(notes) != 0 {
		t.Fatalf("fresh notebook has notes: %+v", notes)
	}
	obs := q.List()
	if len(obs) != 1 || obs[0].Type != gatekeeper.Observed || obs[0].Caller != "agent:alice-work" || obs[0].Title != "Read notebook work" {
		t.Fatalf("observation not recorded: %+v", obs)
	}

	// A write is queued, not performed.
	var p pending
	call(t, s, &p, "add", "groceries", "milk, eggs")
	if p.Status != "pending" || entry(t, q, p.Action).State != gatekeeper.Pending {
		t.Fatalf("add: %+v %+v", p, q.List())
	}
	if _, body := svc.direct(t, "GET", "/api/notebooks/work/notes", aliceToken); strings.Contains(body, "groceries") {
		t.Fatalf("the note was written before approval: %s", body)
	}
	// Approval applies it on the service.
	if err := q.Approve(ctx, p.Action); err != nil {
		t.Fatal(err)
	}
	if e := entry(t, q, p.Action); e.State != gatekeeper.Applied || e.Result != "added note 1" || e.AutoApproved {
		t.Fatalf("approved entry: %+v", e)
	}
	if _, body := svc.direct(t, "GET", "/api/notebooks/work/notes", aliceToken); !strings.Contains(body, "groceries") {
		t.Fatalf("approved note missing on the service: %s", body)
	}
	if err := q.Approve(ctx, p.Action); err == nil {
		t.Fatal("an applied action was approved twice")
	}

	// A rejected removal changes nothing and the gatekeeper hears of it.
	var rm pending
	call(t, s, &rm, "remove", 1)
	if err := q.Reject(ctx, rm.Action); err != nil {
		t.Fatal(err)
	}
	if e := entry(t, q, rm.Action); e.State != gatekeeper.Rejected {
		t.Fatalf("rejected entry: %+v", e)
	}
	if _, body := svc.direct(t, "GET", "/api/notebooks/work/notes/1", aliceToken); !strings.Contains(body, "groceries") {
		t.Fatalf("a rejected removal removed the note: %s", body)
	}
	if !strings.Contains(con.text(), "rejected") {
		t.Fatalf("the gatekeeper was not told of the rejection: %q", con.text())
	}

	// Auto-approval: only for the rule's kind, only when the manifest allows the kind, and
	// never past a pending manual action.
	q.AutoApprove("alice-work", "add-note")
	q.AutoApprove("alice-work", "remove-note") // not auto-approvable: the rule has no effect
	var auto pending
	call(t, s, &auto, "add", "auto", "applied by rule")
	if e := entry(t, q, auto.Action); e.State != gatekeeper.Applied || !e.AutoApproved {
		t.Fatalf("auto-approvable add: %+v", e)
	}
	var gate, behind pending
	call(t, s, &gate, "remove", 1)
	call(t, s, &behind, "add", "behind", "waits for the gate")
	if entry(t, q, gate.Action).State != gatekeeper.Pending || entry(t, q, behind.Action).State != gatekeeper.Pending {
		t.Fatalf("manual gate passed: %+v", q.List())
	}
	if err := q.Reject(ctx, gate.Action); err != nil {
		t.Fatal(err)
	}
	if e := entry(t, q, behind.Action); e.State != gatekeeper.Applied || !e.AutoApproved {
		t.Fatalf("auto action behind a decided gate: %+v", e)
	}

	// Revert undoes an applied add.
	if err := q.Revert(ctx, auto.Action); err != nil {
		t.Fatal(err)
	}
	if status, _ := svc.direct(t, "GET", "/api/notebooks/work/notes/2", aliceToken); status != 404 {
		t.Fatalf("reverted note still there: HTTP %d", status)
	}
	call(t, s, &notes, "list")
	if len(notes) != 2 || notes[0].Title != "groceries" || notes[1].Title != "behind" {
		t.Fatalf("final notes: %+v", notes)
	}
	// Every request the gatekeeper made carried alice's credential, and only hers.
	for _, r := range svc.requests() {
		if r.User != "alice" {
			t.Fatalf("request %+v did not carry alice's token", r)
		}
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := callErr(s, "list"); err == nil {
		t.Fatal("a closed session answered")
	}
}

// TestUsersAreSeparate runs alice's and bob's instances of the same gatekeeper side by side:
// each reaches its own notebook with its own credential, and neither the grant nor the
// credential lets one reach the other's.
func TestUsersAreSeparate(t *testing.T) {
	svc := startService(t)
	rt := newRuntime(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	g := install(t, rt, notesManifest(t, svc), guest(t, "gatekeepers/notes-go"))
	q := gatekeeper.NewMemoryQueue()
	_, alice := start(t, g, "alice-work", svc.Origin+"/notebooks/work", aliceToken, q, nil)
	_, bob := start(t, g, "bob-home", svc.Origin+"/notebooks/home", bobToken, q, nil)
	var notes []note
	call(t, alice, &notes, "list")
	call(t, bob, &notes, "list")
	got := map[string]string{}
	for _, r := range svc.requests() {
		got[r.Path] = r.User
	}
	if got["/api/notebooks/work/notes"] != "alice" || got["/api/notebooks/home/notes"] != "bob" {
		t.Fatalf("requests carried the wrong credentials: %v", got)
	}
	// Alice's instance with bob's resource but alice's token: the service refuses, so the
	// kernel's binding of credential to account is what keeps users apart.
	_, mixed := start(t, g, "alice-home", svc.Origin+"/notebooks/home", aliceToken, q, nil)
	if _, err := callErr(mixed, "list"); err == nil || !strings.Contains(err.Error(), "HTTP 403") {
		t.Fatalf("alice's token read bob's notebook: %v", err)
	}
	// A resource the manifest does not serve, or credentials that do not fit, are refused.
	for _, acct := range []gatekeeper.Account{
		{Name: "x", Resource: svc.Origin + "/other/work", Credentials: map[string]string{"token": aliceToken}, Queue: q},
		{Name: "x", Resource: "http://localhost:1/notebooks/work", Credentials: map[string]string{"token": aliceToken}, Queue: q},
		{Name: "x", Resource: svc.Origin + "/notebooks/work/../home", Credentials: map[string]string{"token": aliceToken}, Queue: q},
		{Name: "x", Resource: svc.Origin + "/notebooks/work", Credentials: map[string]string{}, Queue: q},
		{Name: "x", Resource: svc.Origin + "/notebooks/work", Credentials: map[string]string{"token": "a\r\nX-Evil: 1"}, Queue: q},
		{Name: "x", Resource: svc.Origin + "/notebooks/work", Credentials: map[string]string{"token": aliceToken, "other": "x"}, Queue: q},
		{Name: "x", Resource: svc.Origin + "/notebooks/work", Credentials: map[string]string{"token": aliceToken}},
	} {
		if in, err := g.Start(context.Background(), acct); err == nil {
			in.Close()
			t.Errorf("started with %+v", acct)
		}
	}
}
