package kernel_test

import (
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

// home creates workspace "home" with the counter for api and returns the workspace stub, its
// id and a connected counter stub.
func home(t *testing.T, api *capnweb.Stub) (*capnweb.Promise, string, *capnweb.Promise) {
	t.Helper()
	ws := api.Call(ctx, "createWorkspace", "home")
	app := ws.Call(ctx, "createGadget", "counter", guesttest.Bytes(t, counterGo), counterGrants).Call(ctx, "connect")
	await(t, app.Call(ctx, "increment", 1))
	return ws, await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string), app
}

func TestTokensAreChecked(t *testing.T) {
	var skew atomic.Int64 // how far the kernel's clock is ahead of the real one
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.SessionTTL = time.Hour
		c.Now = func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }
	})
	root := s.dial(t)
	refused(t, root.Call(ctx, "authenticate", "atl_"+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "UNAUTHORIZED", "unknown or revoked token")
	refused(t, root.Call(ctx, "authenticate", "not a token"), "UNAUTHORIZED", "malformed token")
	refused(t, root.Call(ctx, "authenticate", "").Call(ctx, "whoami"), "UNAUTHORIZED", "malformed token")
	refused(t, root.Call(ctx, "signup", "Ada", "long enough"), "INVALID_ARGUMENT", "username")
	refused(t, root.Call(ctx, "signup", "ada", "short"), "INVALID_ARGUMENT", "password")

	tok := await(t, root.Call(ctx, "signup", "ada", "long enough")).(string)
	refused(t, root.Call(ctx, "signup", "ada", "long enough"), "CONFLICT", "taken")
	api := root.Call(ctx, "authenticate", tok)
	await(t, api.Call(ctx, "whoami"))
	skew.Store(int64(2 * time.Hour)) // past SessionTTL
	refused(t, api.Call(ctx, "whoami"), "UNAUTHORIZED", "expired")
	refused(t, root.Call(ctx, "authenticate", tok), "UNAUTHORIZED", "expired")

	// logout revokes the token for every session using it.
	skew.Store(0)
	tok = await(t, root.Call(ctx, "login", "ada", "long enough")).(string)
	api = root.Call(ctx, "authenticate", tok)
	other := s.dial(t).Call(ctx, "authenticate", tok)
	await(t, other.Call(ctx, "whoami"))
	await(t, api.Call(ctx, "logout"))
	refused(t, other.Call(ctx, "listWorkspaces"), "UNAUTHORIZED", "revoked")
	refused(t, root.Call(ctx, "authenticate", tok), "UNAUTHORIZED", "unknown or revoked")
}

func TestBootstrapAdmin(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	s := startServer(t, data)
	tok, err := s.k.Bootstrap(ctx)
	if err != nil || tok == "" {
		t.Fatalf("first Bootstrap = %q, %v", tok, err)
	}
	if again, _ := s.k.Bootstrap(ctx); again != "" {
		t.Fatal("a second Bootstrap issued another token")
	}
	root := s.dial(t)
	api := root.Call(ctx, "authenticate", tok)
	if who := await(t, api.Call(ctx, "whoami")).(map[string]any); who["username"] != "admin" {
		t.Fatalf("admin token is %v", who)
	}
	refused(t, root.Call(ctx, "signup", "admin", "long enough"), "CONFLICT", "taken")
	refused(t, root.Call(ctx, "login", "admin", ""), "UNAUTHORIZED", "wrong")
	await(t, api.Call(ctx, "changePassword", "", "admin password"))
	await(t, root.Call(ctx, "login", "admin", "admin password"))
}

func TestRolesAndRevokedCollaborators(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws, id, app := home(t, ada)
	code := guesttest.Bytes(t, counterGo)

	// Another user reaches nothing.
	refused(t, bob.Call(ctx, "openWorkspace", id), "FORBIDDEN", "no access")
	refused(t, bob.Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "counter").Call(ctx, "connect"), "FORBIDDEN", "no access")
	// A workspace that does not exist is refused the same way, its id said once.
	_, errNoAccess := bob.Call(ctx, "openWorkspace", id).Await(ctx)
	_, errMissing := bob.Call(ctx, "openWorkspace", "ws_nosuchworkspace").Await(ctx)
	if errNoAccess == nil || errMissing == nil ||
		strings.ReplaceAll(errMissing.Error(), "ws_nosuchworkspace", "ID") != strings.ReplaceAll(errNoAccess.Error(), id, "ID") {
		t.Fatalf("opening a workspace without access: %v; one that does not exist: %v; want the same error", errNoAccess, errMissing)
	}
	if msg := errMissing.Error(); strings.Count(msg, "ws_nosuchworkspace") != 1 || strings.Contains(msg, "acquire") {
		t.Fatalf("opening a workspace that does not exist says %q; want its id once, in user words", msg)
	}
	if l := await(t, bob.Call(ctx, "listWorkspaces")).([]any); len(l) != 0 {
		t.Fatalf("bob lists %v", l)
	}

	// A use collaborator calls, but does not deploy, create, bind or read logs.
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	bws := bob.Call(ctx, "openWorkspace", id)
	bcounter := bws.Call(ctx, "gadget", "counter")
	bapp := bcounter.Call(ctx, "connect")
	if got := await(t, bapp.Call(ctx, "increment", 2)); got != float64(3) {
		t.Fatalf("bob's increment = %v", got)
	}
	refused(t, bcounter.Call(ctx, "deploy", code, counterGrants), "FORBIDDEN", "needs the build role")
	refused(t, bws.Call(ctx, "createGadget", "mine", code, counterGrants), "FORBIDDEN", "needs the build role")
	refused(t, bws.Call(ctx, "bind", "counter", "x", "counter"), "FORBIDDEN", "needs the build role")
	refused(t, bws.Call(ctx, "auditLog", 10), "FORBIDDEN", "needs the build role")
	refused(t, bcounter.Call(ctx, "logs", func(any) {}), "FORBIDDEN", "needs the build role")
	refused(t, bws.Call(ctx, "addCollaborator", "bob", "build"), "FORBIDDEN", "needs the owner role")
	refused(t, bcounter.Call(ctx, "delete"), "FORBIDDEN", "needs the build role")
	if v := await(t, bcounter.Call(ctx, "versions")).([]any); len(v) != 1 {
		t.Fatalf("a refused deploy left versions: %v", v)
	}

	// Removal cuts bob's live stubs from the next call; the state is untouched.
	await(t, ws.Call(ctx, "removeCollaborator", "bob"))
	refused(t, bapp.Call(ctx, "increment", 100), "FORBIDDEN", "no access")
	refused(t, bws.Call(ctx, "listGadgets"), "FORBIDDEN", "no access")
	if got := await(t, app.Call(ctx, "get")); got != float64(3) {
		t.Fatalf("after bob's refused call get() = %v, want 3", got)
	}
	// The audit log has the changes, newest first.
	log := await(t, ws.Call(ctx, "auditLog", 2)).([]any)
	if len(log) != 2 || log[0].(map[string]any)["action"] != "collaborator.remove" || log[1].(map[string]any)["action"] != "collaborator.add" {
		t.Fatalf("audit log = %v", log)
	}
	// Filters and pages are the server's: the collaborator lines before the newest one.
	newest := log[0].(map[string]any)["seq"].(float64)
	page := await(t, ws.Call(ctx, "auditLog", 5, map[string]any{"action": "collaborator.", "actor": "ada", "before": newest})).([]any)
	if len(page) != 1 || page[0].(map[string]any)["action"] != "collaborator.add" {
		t.Fatalf("auditLog(5, {action, actor, before}) = %v, want the collaborator.add line", page)
	}
	if none := await(t, ws.Call(ctx, "auditLog", 5, map[string]any{"actor": "bob"})).([]any); len(none) != 0 {
		t.Fatalf("bob made no change, yet auditLog(5, {actor: bob}) = %v", none)
	}
}

func TestShareLinks(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws, id, _ := home(t, ada)
	link := await(t, ws.Call(ctx, "createShareLink", "build")).(map[string]any)
	refused(t, bob.Call(ctx, "openWorkspace", id, "atl_wrongwrongwrongwrongwrongwrongwrongwrongw"), "FORBIDDEN", "share key is not valid")
	bws := bob.Call(ctx, "openWorkspace", id, link["key"])
	if info := await(t, bws.Call(ctx, "info")).(map[string]any); info["role"] != "build" || info["owner"] != "ada" {
		t.Fatalf("bob's info after redeeming = %v", info)
	}
	await(t, bws.Call(ctx, "gadget", "counter").Call(ctx, "rename", "tally"))
	links := await(t, ws.Call(ctx, "listShareLinks")).([]any)
	if len(links) != 1 || links[0].(map[string]any)["key"] != nil {
		t.Fatalf("listShareLinks = %v (must not show keys)", links)
	}
	await(t, ws.Call(ctx, "revokeShareLink", link["id"]))
	refused(t, bws.Call(ctx, "listGadgets"), "FORBIDDEN", "no access")
	refused(t, bob.Call(ctx, "openWorkspace", id, link["key"]), "FORBIDDEN", "share key is not valid")
}

func TestAgentsStayInsideTheirScope(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws, id, app := home(t, ada)
	await(t, ws.Call(ctx, "createGadget", "other", guesttest.Bytes(t, counterGo), counterGrants))
	_, bobID, _ := home(t, bob)
	ws2 := ada.Call(ctx, "createWorkspace", "second")
	id2 := await(t, ws2.Call(ctx, "info")).(map[string]any)["id"].(string)

	scope := func(ws, role string, gadgets ...string) map[string]any {
		return map[string]any{"workspaces": map[string]any{ws: map[string]any{"role": role, "gadgets": gadgets}}}
	}
	refused(t, ada.Call(ctx, "createAgent", "bot", scope(bobID, "use", "*")), "FORBIDDEN", "no access")
	refused(t, ada.Call(ctx, "createAgent", "bot", scope(id, "owner", "*")), "INVALID_ARGUMENT", "want build or use")
	ag := await(t, ada.Call(ctx, "createAgent", "bot", scope(id, "use", "counter"))).(map[string]any)

	bot := s.dial(t).Call(ctx, "authenticate", ag["token"])
	who := await(t, bot.Call(ctx, "whoami")).(map[string]any)
	if who["kind"] != "agent" || who["owner"] != "ada" {
		t.Fatalf("agent whoami = %v", who)
	}
	list := await(t, bot.Call(ctx, "listWorkspaces")).([]any)
	if len(list) != 1 || list[0].(map[string]any)["role"] != "use" {
		t.Fatalf("agent lists %v", list)
	}
	bws := bot.Call(ctx, "openWorkspace", id)
	bapp := bws.Call(ctx, "gadget", "counter").Call(ctx, "connect")
	if got := await(t, bapp.Call(ctx, "increment", 1)); got != float64(2) {
		t.Fatalf("agent increment = %v", got)
	}
	if gs := await(t, bws.Call(ctx, "listGadgets")).([]any); len(gs) != 1 {
		t.Fatalf("agent sees gadgets %v, want only counter", gs)
	}
	refused(t, bws.Call(ctx, "gadget", "other").Call(ctx, "connect"), "FORBIDDEN", "outside its scope")
	refused(t, bws.Call(ctx, "createGadget", "x", guesttest.Bytes(t, counterGo), counterGrants), "FORBIDDEN", "needs the build role")
	refused(t, bot.Call(ctx, "openWorkspace", id2), "FORBIDDEN", "outside its scope")
	refused(t, bot.Call(ctx, "createWorkspace", "mine"), "FORBIDDEN", "agents may not")
	refused(t, bot.Call(ctx, "createAgent", "sub", scope(id, "use", "*")), "FORBIDDEN", "agents may not")

	await(t, ada.Call(ctx, "revokeAgent", ag["id"]))
	refused(t, bapp.Call(ctx, "increment", 1), "UNAUTHORIZED", "revoked")
	refused(t, s.dial(t).Call(ctx, "authenticate", ag["token"]), "UNAUTHORIZED", "unknown or revoked")
	if got := await(t, app.Call(ctx, "get")); got != float64(2) {
		t.Fatalf("get() = %v after the revoked agent's call, want 2", got)
	}
}
