package gatekeeper_test

import (
	"atelier/host/gatekeeper/mcpgk"
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/vault"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/host/store"
)

// server is a kernel that runs gatekeepers reaching svc, over a real bbolt file and a real
// WebSocket.
type server struct {
	db      *store.Bolt
	k       *kernel.Kernel
	url     string
	origin  string // http://127.0.0.1:PORT
	keyFile string
	stop    func()
}

func startServer(t *testing.T, svc *service, dataFile string) *server {
	t.Helper()
	return startServerWith(t, []string{svc.Addr}, dataFile, nil)
}

// startServerWith is startServer with the gatekeepers allowed to reach the addresses allow,
// and with tweak (when set) applied to the kernel's configuration.
func startServerWith(t *testing.T, allow []string, dataFile string, tweak func(*kernel.Config)) *server {
	t.Helper()
	db, err := store.Open(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(filepath.Dir(dataFile), "cache"), Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		t.Fatal(err)
	}
	s := &server{db: db, keyFile: dataFile + ".key"}
	cfg := kernel.Config{
		Runtime: rt, Store: db, Limits: runtime.Limits{Timeout: 10 * time.Second}, Password: auth.TestParams,
		GatekeeperRuntime: newRuntimeIn(t, outboundhttp.Options{AllowAddrs: allow}, filepath.Join(filepath.Dir(dataFile), "gkcache")), KeyFile: s.keyFile,
	}
	if tweak != nil {
		tweak(&cfg)
	}
	s.k = kernel.New(cfg)
	h := httptest.NewServer(gateway.New(gateway.Config{Kernel: s.k}))
	s.origin = h.URL
	s.url = "ws" + strings.TrimPrefix(h.URL, "http") + "/api"
	stopped := false
	s.stop = func() {
		if stopped {
			return
		}
		stopped = true
		h.CloseClientConnections()
		h.Close()
		s.k.Close()
		rt.Close()
		db.Close()
	}
	t.Cleanup(s.stop)
	return s
}

func (s *server) dial(t *testing.T) *capnweb.Stub {
	t.Helper()
	sess, err := capnweb.DialWebSocket(context.Background(), s.url, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess.Main()
}

// authed returns the authenticated API for token.
func (s *server) authed(t *testing.T, token string) *capnweb.Promise {
	return s.dial(t).Call(context.Background(), "authenticate", token)
}

// adminToken returns the first-run token of the admin.
func (s *server) adminToken(t *testing.T) string {
	t.Helper()
	tok, err := s.k.Bootstrap(context.Background())
	if err != nil || tok == "" {
		t.Fatalf("bootstrap: %q %v", tok, err)
	}
	return tok
}

// login logs user name in and returns its API.
func (s *server) login(t *testing.T, name string) *capnweb.Promise {
	t.Helper()
	tok := await(t, s.dial(t).Call(context.Background(), "login", name, "password-"+name)).(string)
	return s.authed(t, tok)
}

// user signs up name and returns its API.
func (s *server) user(t *testing.T, name string) *capnweb.Promise {
	t.Helper()
	tok := await(t, s.dial(t).Call(context.Background(), "signup", name, "password-"+name)).(string)
	return s.authed(t, tok)
}

func await(t *testing.T, p *capnweb.Promise) any {
	t.Helper()
	v, err := p.Await(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// refused checks that p fails with code and a message containing want.
func refused(t *testing.T, p *capnweb.Promise, code, want string) {
	t.Helper()
	_, err := p.Await(context.Background())
	var e *capnweb.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a %s error", err, code)
	}
	if e.Props["code"] != code || !strings.Contains(e.Message, want) {
		t.Fatalf("got %q (code %v), want code %s and a message containing %q", e.Message, e.Props["code"], code, want)
	}
}

func TestKernelInstallsGatekeepersAndConnectsAccounts(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	m := notesManifest(t, svc)
	wasm := guest(t, "gatekeepers/notes-go")
	archive, err := gatekeeper.Pack(m, wasm)
	if err != nil {
		t.Fatal(err)
	}
	coreModule, err := gatekeeper.Pack(m, []byte("\x00asm\x01\x00\x00\x00"))
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "atelier.db")
	s := startServer(t, svc, data)
	adminTok := s.adminToken(t)
	admin, alice, bob := s.authed(t, adminTok), s.user(t, "alice"), s.user(t, "bob")

	// Only the admin installs; bad packages are refused with the package error.
	refused(t, alice.Call(ctx, "installGatekeeper", archive), "FORBIDDEN", "only the server's admin")
	refused(t, admin.Call(ctx, "installGatekeeper", []byte("not a tar")), "INVALID_ARGUMENT", gatekeeper.ErrBadArchive.Error())
	refused(t, admin.Call(ctx, "installGatekeeper", coreModule), "INVALID_ARGUMENT", gatekeeper.ErrNotComponent.Error())
	info := await(t, admin.Call(ctx, "installGatekeeper", archive)).(map[string]any)
	id, _ := info["id"].(string)
	if !strings.HasPrefix(id, "sha256:") || info["name"] != "notes" || info["format"] != "component" {
		t.Fatalf("installGatekeeper = %v", info)
	}
	refused(t, admin.Call(ctx, "installGatekeeper", archive), "CONFLICT", "installed already")
	if list := await(t, bob.Call(ctx, "listGatekeepers")).([]any); len(list) != 2 || list[0].(map[string]any)["id"] != id || list[1].(map[string]any)["id"] != mcpgk.ID {
		t.Fatalf("listGatekeepers = %v", list)
	}

	// Accounts: the resource must match the manifest, the credentials must be exactly its own.
	work := svc.Origin + "/notebooks/work"
	refused(t, alice.Call(ctx, "connectAccount", id, "https://elsewhere.example/notebooks/work", map[string]any{"token": aliceToken}), "INVALID_ARGUMENT", "")
	refused(t, alice.Call(ctx, "connectAccount", id, work, map[string]any{}), "INVALID_ARGUMENT", `credential "token"`)
	refused(t, alice.Call(ctx, "connectAccount", id, work, map[string]any{"token": aliceToken, "cookie": "x"}), "INVALID_ARGUMENT", "takes no credential")
	refused(t, alice.Call(ctx, "connectAccount", "sha256:00", work, map[string]any{"token": aliceToken}), "NOT_FOUND", "")
	acct := await(t, alice.Call(ctx, "connectAccount", id, work, map[string]any{"token": aliceToken})).(map[string]any)
	acctID, _ := acct["id"].(string)
	if acct["kind"] != "notebook" || acct["resource"] != work || acctID == "" {
		t.Fatalf("connectAccount = %v", acct)
	}
	list := await(t, alice.Call(ctx, "listAccounts")).([]any)
	if len(list) != 1 || list[0].(map[string]any)["id"] != acctID || strings.Contains(fmt.Sprint(list), aliceToken) {
		t.Fatalf("listAccounts = %v", list)
	}
	if list := await(t, bob.Call(ctx, "listAccounts")).([]any); len(list) != 0 {
		t.Fatalf("bob sees %v", list)
	}

	// The credential is sealed with the key file (0600, outside the data file), bound to
	// the account: it opens only in its own context, and is nowhere in the data file.
	st, err := os.Stat(s.keyFile)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st, err)
	}
	rec, err := s.db.Account(ctx, acctID)
	if err != nil {
		t.Fatal(err)
	}
	box, err := vault.LoadKey(s.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := box.Open(rec.Sealed["token"], "credential/"+acctID+"/token"); err != nil || string(plain) != aliceToken {
		t.Fatalf("open the sealed credential: %q %v", plain, err)
	}
	if _, err := box.Open(rec.Sealed["token"], "credential/acct_other/token"); !errors.Is(err, vault.ErrOpen) {
		t.Fatalf("the sealed credential opened for another account: %v", err)
	}
	s.stop()
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), aliceToken) {
		t.Fatal("the data file holds the credential in clear")
	}

	// After a restart the package is compiled again from the store.
	s = startServer(t, svc, data)
	alice, bob = s.login(t, "alice"), s.login(t, "bob")
	refused(t, bob.Call(ctx, "disconnectAccount", acctID), "NOT_FOUND", "no account")
	second := await(t, alice.Call(ctx, "connectAccount", id, work, map[string]any{"token": aliceToken})).(map[string]any)
	await(t, alice.Call(ctx, "disconnectAccount", acctID))
	if list := await(t, alice.Call(ctx, "listAccounts")).([]any); len(list) != 1 || list[0].(map[string]any)["id"] != second["id"] {
		t.Fatalf("listAccounts after disconnect = %v", list)
	}

	// Removing the package disconnects its accounts.
	admin = s.authed(t, adminTok)
	refused(t, alice.Call(ctx, "removeGatekeeper", id), "FORBIDDEN", "only the server's admin")
	await(t, admin.Call(ctx, "removeGatekeeper", id))
	refused(t, admin.Call(ctx, "removeGatekeeper", id), "NOT_FOUND", "no gatekeeper")
	if list := await(t, alice.Call(ctx, "listAccounts")).([]any); len(list) != 0 {
		t.Fatalf("accounts of a removed gatekeeper: %v", list)
	}
	if list := await(t, alice.Call(ctx, "listGatekeepers")).([]any); len(list) != 1 || list[0].(map[string]any)["format"] != "builtin" {
		t.Fatalf("listGatekeepers after remove = %v", list)
	}
}

// callerJS is a JS gadget that calls any binding.
const callerJS = `export class Gadget {
  call(name, method, args) { return this.env[name][method](...args); }
}`

func TestKernelGadgetUsesBoundGatekeeper(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	s := startServer(t, svc, filepath.Join(t.TempDir(), "atelier.db"))
	admin, alice, bob := s.authed(t, s.adminToken(t)), s.user(t, "alice"), s.user(t, "bob")
	id := installGatekeeper(t, admin, notesManifest(t, svc), guest(t, "gatekeepers/notes-go"))
	work := svc.Origin + "/notebooks/work"
	acctID := await(t, alice.Call(ctx, "connectAccount", id, work, map[string]any{"token": aliceToken})).(map[string]any)["id"].(string)

	ws := alice.Call(ctx, "createWorkspace", "home")
	grants := []any{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}
	files := map[string]any{"server.js": callerJS}
	reader := ws.Call(ctx, "createGadget", "reader", files, grants).Call(ctx, "connect")
	stranger := ws.Call(ctx, "createGadget", "stranger", files, grants).Call(ctx, "connect")
	call := func(gadget *capnweb.Promise, method string, args ...any) *capnweb.Promise {
		if args == nil {
			args = []any{}
		}
		return gadget.Call(ctx, "call", "notes", method, args)
	}

	// Only the account's owner binds it.
	bobWS := bob.Call(ctx, "createWorkspace", "bobs")
	await(t, bobWS.Call(ctx, "createGadget", "thief", files, grants))
	refused(t, bobWS.Call(ctx, "bindGatekeeper", "thief", "notes", acctID), "NOT_FOUND", "no account")
	refused(t, call(stranger, "list"), "GADGET_ERROR", `no binding "notes"`)
	await(t, ws.Call(ctx, "bindGatekeeper", "reader", "notes", acctID))

	// A read returns the service's data and is in the audit log, naming the gadget.
	if notes := await(t, call(reader, "list")).([]any); len(notes) != 0 {
		t.Fatalf("list = %v", notes)
	}
	if !hasAudit(t, ws, "gadget:reader", "gatekeeper.observe") {
		t.Fatal("the read is not in the audit log")
	}
	// The unbound gadget still cannot reach it.
	refused(t, call(stranger, "list"), "GADGET_ERROR", `no binding "notes"`)

	// A write waits for the account's owner: rejected, the service is unchanged; approved,
	// it is applied.
	notes := func() string { _, body := svc.direct(t, "GET", "/api/notebooks/work/notes", aliceToken); return body }
	first := await(t, call(reader, "add", "groceries", "milk")).(map[string]any)
	if first["status"] != "pending" || strings.Contains(notes(), "groceries") {
		t.Fatalf("add = %v; service: %s", first, notes())
	}
	if !hasAudit(t, ws, "gadget:reader", "gatekeeper.submit") {
		t.Fatal("the action is not in the audit log")
	}
	actions := await(t, ws.Call(ctx, "listActions")).([]any)
	if len(actions) != 2 || actions[1].(map[string]any)["state"] != "pending" || actions[1].(map[string]any)["caller"] != "gadget:reader" ||
		actions[1].(map[string]any)["gatekeeper"] != "notes" {
		t.Fatalf("listActions = %v", actions)
	}
	// A collaborator does not decide the actions of another user's account.
	await(t, ws.Call(ctx, "addCollaborator", "bob", "build"))
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	refused(t, bob.Call(ctx, "openWorkspace", wsID, "").Call(ctx, "approveAction", first["action"]), "NOT_FOUND", "no action")
	refused(t, ws.Call(ctx, "rejectAction", first["action"], strings.Repeat("x", 1025)), "INVALID_ARGUMENT", "at most 1024")
	await(t, ws.Call(ctx, "rejectAction", first["action"], "not this one"))
	if strings.Contains(notes(), "groceries") {
		t.Fatalf("a rejected action reached the service: %s", notes())
	}
	// The reason is the entry's result and part of the decision's audit line.
	rejected := await(t, ws.Call(ctx, "listActions", map[string]any{"before": first["action"].(float64) + 1, "limit": 1})).([]any)[0].(map[string]any)
	if rejected["state"] != "rejected" || rejected["result"] != "not this one" {
		t.Fatalf("the rejected action = %v, want its reason as the result", rejected)
	}
	reasoned := false
	for _, e := range await(t, ws.Call(ctx, "auditLog", 100)).([]any) {
		e := e.(map[string]any)
		reasoned = reasoned || e["action"] == "gatekeeper.rejectAction" && strings.HasSuffix(e["detail"].(string), ": not this one")
	}
	if !reasoned {
		t.Fatal("the rejection's audit line does not give the reason")
	}
	second := await(t, call(reader, "add", "books", "a novel")).(map[string]any)
	await(t, ws.Call(ctx, "approveAction", second["action"]))
	if !strings.Contains(notes(), "books") {
		t.Fatalf("the approved note is missing: %s", notes())
	}
	refused(t, ws.Call(ctx, "approveAction", second["action"]), "FAILED_PRECONDITION", "")

	// Auto-approval: only for kinds the manifest allows; changes reach subscribers.
	events := make(chan map[string]any, 100)
	await(t, ws.Call(ctx, "subscribeActions", func(v map[string]any) { events <- v }))
	refused(t, ws.Call(ctx, "setAutoApprove", id, "remove-note", true), "INVALID_ARGUMENT", "does not allow")
	if rules := await(t, ws.Call(ctx, "listAutoApprove")).([]any); len(rules) != 0 {
		t.Fatalf("listAutoApprove before any rule = %v", rules)
	}
	await(t, ws.Call(ctx, "setAutoApprove", id, "add-note", true))
	if rules := fmt.Sprint(await(t, ws.Call(ctx, "listAutoApprove"))); rules != "[map[gatekeeper:"+id+" kind:add-note name:notes]]" {
		t.Fatalf("listAutoApprove after enabling add-note = %s", rules)
	}
	if others := await(t, bob.Call(ctx, "openWorkspace", wsID, "").Call(ctx, "listAutoApprove")).([]any); len(others) != 0 {
		t.Fatalf("a collaborator lists the owner's rules: %v", others)
	}
	auto := await(t, call(reader, "add", "auto", "by rule")).(map[string]any)
	if !strings.Contains(notes(), "by rule") {
		t.Fatalf("the auto-approved note is missing: %s", notes())
	}
	waitAction(t, events, auto["action"], "applied", true)
	await(t, ws.Call(ctx, "setAutoApprove", id, "add-note", false))
	if rules := await(t, ws.Call(ctx, "listAutoApprove")).([]any); len(rules) != 0 {
		t.Fatalf("listAutoApprove after withdrawing the rule = %v", rules)
	}
	manual := await(t, call(reader, "add", "manual", "waits")).(map[string]any)
	waitAction(t, events, manual["action"], "pending", false)

	// Disconnecting the account cuts the binding; so does unbinding.
	await(t, alice.Call(ctx, "disconnectAccount", acctID))
	refused(t, call(reader, "list"), "GADGET_ERROR", "disconnected")
	acct2 := await(t, alice.Call(ctx, "connectAccount", id, work, map[string]any{"token": aliceToken})).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "bindGatekeeper", "reader", "notes", acct2))
	if notes := await(t, call(reader, "list")).([]any); len(notes) != 2 {
		t.Fatalf("list after rebinding = %v", notes)
	}
	await(t, ws.Call(ctx, "unbindGatekeeper", "reader", "notes"))
	refused(t, call(reader, "list"), "GADGET_ERROR", `no binding "notes"`)
}

// hasAudit reports whether the workspace's audit log has a line by actor for action.
func hasAudit(t *testing.T, ws *capnweb.Promise, actor, action string) bool {
	t.Helper()
	for _, e := range await(t, ws.Call(context.Background(), "auditLog", 100)).([]any) {
		if e := e.(map[string]any); e["actor"] == actor && e["action"] == action {
			return true
		}
	}
	return false
}

// waitAction waits until a subscribeActions delivery shows action id in state.
func waitAction(t *testing.T, events <-chan map[string]any, id any, state string, auto bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case v := <-events:
			for _, a := range v["actions"].([]any) {
				if a := a.(map[string]any); a["id"] == id && a["state"] == state && a["autoApproved"] == auto {
					return
				}
			}
		case <-timeout:
			t.Fatalf("no delivery shows action %v %s", id, state)
		}
	}
}

// TestKernelQueueSurvivesRestart: pending actions, decisions and auto-approval rules are in
// the data file; after a restart a pending action is approved through a fresh instance of
// its account's gatekeeper and reaches the service, and new actions get new, higher ids.
func TestKernelQueueSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	data := filepath.Join(t.TempDir(), "atelier.db")
	s := startServer(t, svc, data)
	admin, alice := s.authed(t, s.adminToken(t)), s.user(t, "alice")
	id := installGatekeeper(t, admin, notesManifest(t, svc), guest(t, "gatekeepers/notes-go"))
	acctID := await(t, alice.Call(ctx, "connectAccount", id, svc.Origin+"/notebooks/work", map[string]any{"token": aliceToken})).(map[string]any)["id"].(string)
	ws := alice.Call(ctx, "createWorkspace", "home")
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	grants := []any{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}
	await(t, ws.Call(ctx, "createGadget", "reader", map[string]any{"server.js": callerJS}, grants))
	await(t, ws.Call(ctx, "bindGatekeeper", "reader", "notes", acctID))
	call := func(ws *capnweb.Promise, method string, args ...any) map[string]any {
		return await(t, ws.Call(ctx, "gadget", "reader").Call(ctx, "connect").Call(ctx, "call", "notes", method, args)).(map[string]any)
	}
	notes := func() string { _, body := svc.direct(t, "GET", "/api/notebooks/work/notes", aliceToken); return body }

	// Before the restart: one action rejected, one applied, a removal of the applied note
	// left pending, and a rule auto-approving additions (it does not cover the removal, which
	// therefore stays pending).
	rejected := call(ws, "add", "groceries", "milk")["action"]
	await(t, ws.Call(ctx, "rejectAction", rejected))
	applied := call(ws, "add", "books", "a novel")["action"]
	await(t, ws.Call(ctx, "approveAction", applied))
	listed := await(t, ws.Call(ctx, "gadget", "reader").Call(ctx, "connect").Call(ctx, "call", "notes", "list", []any{})).([]any)
	if len(listed) != 1 {
		t.Fatalf("notes before the restart: %v", listed)
	}
	pending := call(ws, "remove", listed[0].(map[string]any)["id"])["action"]
	await(t, ws.Call(ctx, "setAutoApprove", id, "add-note", true))
	if !strings.Contains(notes(), "books") {
		t.Fatalf("the removal was applied without a decision: %s", notes())
	}
	s.stop()

	s = startServer(t, svc, data)
	alice = s.login(t, "alice")
	ws = alice.Call(ctx, "openWorkspace", wsID, "")
	states := map[any]map[string]any{}
	for _, a := range await(t, ws.Call(ctx, "listActions")).([]any) {
		states[a.(map[string]any)["id"]] = a.(map[string]any)
	}
	if states[rejected]["state"] != "rejected" || states[applied]["state"] != "applied" || states[pending]["state"] != "pending" ||
		states[pending]["kind"] != "remove-note" || states[pending]["caller"] != "gadget:reader" || states[pending]["account"] != acctID {
		t.Fatalf("listActions after the restart: %v", states)
	}
	refused(t, ws.Call(ctx, "approveAction", rejected), "FAILED_PRECONDITION", "rejected")

	// Approving the stored action applies its stored payload on the real service.
	await(t, ws.Call(ctx, "approveAction", pending))
	if strings.Contains(notes(), "books") {
		t.Fatalf("the approved removal did not reach the service: %s", notes())
	}
	// The rule survived: a new addition is applied without asking, under a higher id.
	auto := call(ws, "add", "auto", "by rule")["action"].(float64)
	if auto <= pending.(float64) || !strings.Contains(notes(), "by rule") {
		t.Fatalf("action %v after the restart (last before: %v); service: %s", auto, pending, notes())
	}
	for _, a := range await(t, ws.Call(ctx, "listActions")).([]any) {
		if a := a.(map[string]any); a["id"] == auto && (a["state"] != "applied" || a["autoApproved"] != true) {
			t.Fatalf("the auto-approved action: %v", a)
		}
	}
	if !hasAudit(t, ws, "alice", "gatekeeper.approveAction") {
		t.Fatal("the decision is not in the audit log")
	}
}
