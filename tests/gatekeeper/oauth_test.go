package gatekeeper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/vault"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/tests/oauthop"
)

// startProvider starts a provider and a resource server whose tokens it checks.
func startProvider(t *testing.T) (*oauthop.Provider, *oauthop.ResourceServer) {
	t.Helper()
	p, err := oauthop.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	rs := oauthop.StartResourceServer(p)
	t.Cleanup(rs.Close)
	return p, rs
}

// oauthSetup starts a provider, a resource server and an Atelier server whose kernel
// refreshes tokens that expire within margin, installs the OAuth probe gatekeeper with its
// client configured, and returns alice's API, a workspace of hers with the caller gadget,
// and the gatekeeper's id.
type oauthEnv struct {
	s         *server
	p         *oauthop.Provider
	rs        *oauthop.ResourceServer
	admin     *capnweb.Promise
	alice, ws *capnweb.Promise
	gk        string
	clientID  string
}

const (
	oauthClientID     = "atelier-probe"
	oauthClientSecret = "client-secret-4f1d0b8e9a7c6d5e"
)

func oauthSetup(t *testing.T, margin time.Duration, allow ...string) *oauthEnv {
	t.Helper()
	return oauthSetupWith(t, margin, nil, allow...)
}

// oauthSetupWith is oauthSetup with the gatekeeper's manifest changed by edit first.
func oauthSetupWith(t *testing.T, margin time.Duration, edit func(*gatekeeper.Manifest), allow ...string) *oauthEnv {
	t.Helper()
	ctx := context.Background()
	e := &oauthEnv{}
	e.p, e.rs = startProvider(t)
	e.s = startServerWith(t, []string{e.rs.Addr}, filepath.Join(t.TempDir(), "atelier.db"), func(c *kernel.Config) {
		c.OAuthRefreshMargin = margin
		c.OAuthEgress.AllowAddrs = append([]string{e.p.Addr}, allow...)
	})
	clientID := oauthClientID + "-" + strings.ReplaceAll(t.Name(), "/", "-")
	e.clientID = clientID
	e.p.Register(clientID, oauthClientSecret, e.s.origin+kernel.OAuthCallbackPath)
	e.admin = e.s.authed(t, e.s.adminToken(t))
	e.alice = e.s.user(t, "alice")
	m := oauthop.Manifest("probe", e.p, e.rs)
	if edit != nil {
		edit(&m)
	}
	e.gk = installGatekeeper(t, e.admin, m, guest(t, "tests/gatekeeper/guests/probe"))
	refused(t, e.alice.Call(ctx, "connectAccount", e.gk, e.rs.URL+"/notebooks/work"), "FAILED_PRECONDITION", "has not configured the OAuth client")
	refused(t, e.alice.Call(ctx, "setOAuthClient", e.gk, clientID, oauthClientSecret), "FORBIDDEN", "admin")
	await(t, e.admin.Call(ctx, "setOAuthClient", e.gk, clientID, oauthClientSecret))
	e.ws = e.alice.Call(ctx, "createWorkspace", "home")
	grants := []any{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}
	await(t, e.ws.Call(ctx, "createGadget", "caller", map[string]any{"server.js": callerJS}, grants))
	return e
}

// connect runs alice's whole authorization for the resource: connectAccount, the
// provider's login, the callback at the server. It returns the callback page.
func (e *oauthEnv) connect(t *testing.T, resource string) (pending map[string]any, page string) {
	t.Helper()
	pending = await(t, e.alice.Call(context.Background(), "connectAccount", e.gk, resource)).(map[string]any)
	authURL, _ := pending["authorizationUrl"].(string)
	if !strings.HasPrefix(authURL, e.p.Issuer+"/auth?") || pending["pending"] == nil || pending["id"] != nil {
		t.Fatalf("connectAccount = %v", pending)
	}
	callback := authorize(t, e.p, authURL)
	if !strings.HasPrefix(callback, e.s.origin+kernel.OAuthCallbackPath+"?") {
		t.Fatalf("the provider sent the user to %s", callback)
	}
	status, page := get(t, callback)
	if status != http.StatusOK || !strings.Contains(page, "Account connected") {
		t.Fatalf("callback: HTTP %d %s", status, page)
	}
	pending["callback"] = callback
	return pending, page
}

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// tokens opens the tokens the server sealed for an account.
func (e *oauthEnv) tokens(t *testing.T, acct string) (access, refresh string) {
	t.Helper()
	rec, err := e.s.db.Account(context.Background(), acct)
	if err != nil {
		t.Fatal(err)
	}
	box, err := vault.LoadKey(e.s.keyFile)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := box.Open(rec.Sealed["oauth"], "credential/"+acct+"/oauth")
	if err != nil {
		t.Fatal(err)
	}
	var tok struct{ Access, Refresh string }
	if err := json.Unmarshal(plain, &tok); err != nil {
		t.Fatal(err)
	}
	return tok.Access, tok.Refresh
}

// account returns alice's account on the resource from listAccounts (nil when none), and
// the whole list as text.
func (e *oauthEnv) account(t *testing.T, resource string) (map[string]any, string) {
	t.Helper()
	list := await(t, e.alice.Call(context.Background(), "listAccounts")).([]any)
	for _, a := range list {
		if a := a.(map[string]any); a["resource"] == resource {
			return a, fmt.Sprint(list)
		}
	}
	return nil, fmt.Sprint(list)
}

// whoami calls the resource server through the gadget's binding of acct and returns what
// the gatekeeper received.
func (e *oauthEnv) whoami(t *testing.T, binding string) (fetched, string) {
	t.Helper()
	res := callProbe(t, e.ws, binding, "fetch", "GET", e.rs.URL+"/api/notebooks/"+binding+"/whoami", map[string]any{}, "")
	text := fmt.Sprint(res)
	var f fetched
	if s, ok := res.(string); ok {
		json.Unmarshal([]byte(s), &f)
	} else {
		b, _ := json.Marshal(res)
		json.Unmarshal(b, &f)
	}
	return f, text
}

// TestOAuthConnect runs the authorization-code flow against a real provider: the account
// exists once the callback completes, the gatekeeper's requests carry the access token (the
// resource server checks it at the provider), and the token is nowhere the user, the guest
// or the logs see.
func TestOAuthConnect(t *testing.T) {
	ctx := context.Background()
	e := oauthSetup(t, time.Second)
	work := e.rs.URL + "/notebooks/work"
	refused(t, e.alice.Call(ctx, "connectAccount", e.gk, work, map[string]any{"token": "x"}), "INVALID_ARGUMENT", "connects by OAuth and takes no credentials")
	refused(t, e.alice.Call(ctx, "connectAccount", e.gk, "http://elsewhere.example/notebooks/work"), "INVALID_ARGUMENT", "")

	pending, page := e.connect(t, work)
	auth, _ := url.Parse(pending["authorizationUrl"].(string))
	q := auth.Query()
	if q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || len(q.Get("state")) != 43 ||
		q.Get("redirect_uri") != e.s.origin+kernel.OAuthCallbackPath || q.Get("scope") != "openid offline_access" {
		t.Fatalf("authorization URL %s", auth)
	}
	acct, list := e.account(t, work)
	if acct == nil || acct["oauth"] != true || acct["state"] != nil || acct["kind"] != "notebook" {
		t.Fatalf("listAccounts = %s", list)
	}
	id := acct["id"].(string)
	access, refresh := e.tokens(t, id)
	if access == "" || refresh == "" {
		t.Fatalf("sealed tokens: access %q refresh %q", access, refresh)
	}

	await(t, e.ws.Call(ctx, "bindGatekeeper", "caller", "work", id))
	f, text := e.whoami(t, "work")
	if f.Status != 200 || !strings.Contains(f.Body, `"user":"id1"`) || !strings.Contains(f.Body, "[credential removed by atelier]") {
		t.Fatalf("whoami through the gatekeeper = %s", text)
	}
	for _, where := range map[string]string{"listAccounts": list, "the call's result": text, "the callback page": page,
		"the pending result": fmt.Sprint(pending)} {
		for _, secret := range []string{access, refresh} {
			if strings.Contains(where, secret) {
				t.Fatalf("a token is in %s", where)
			}
		}
	}

	// The state is single use: the same callback again (a replayed code) stores nothing.
	status, again := get(t, pending["callback"].(string))
	if status != http.StatusBadRequest || !strings.Contains(again, "unknown, has expired or was completed already") {
		t.Fatalf("replayed callback: HTTP %d %s", status, again)
	}
	// A wrong state (and none) is refused the same way, without touching the provider.
	cb, _ := url.Parse(pending["callback"].(string))
	cbq := cb.Query()
	cbq.Set("state", "not-a-state-of-this-server")
	cb.RawQuery = cbq.Encode()
	if status, body := get(t, cb.String()); status != http.StatusBadRequest || !strings.Contains(body, "Nothing was stored") {
		t.Fatalf("wrong state: HTTP %d %s", status, body)
	}
	if status, body := get(t, e.s.origin+kernel.OAuthCallbackPath); status != http.StatusBadRequest || !strings.Contains(body, "no valid state") {
		t.Fatalf("no state: HTTP %d %s", status, body)
	}
	if list := await(t, e.alice.Call(ctx, "listAccounts")).([]any); len(list) != 1 {
		t.Fatalf("accounts after the bad callbacks: %v", list)
	}

	// The guest's whole memory and its console hold neither token after a request that the
	// service answered by echoing the access token.
	g := install(t, newRuntime(t, outboundhttp.Options{AllowAddrs: []string{e.rs.Addr}}), oauthop.Manifest("probe", e.p, e.rs), guest(t, "tests/gatekeeper/guests/probe"))
	con := &console{}
	in, err := g.Start(ctx, gatekeeper.Account{Name: "probe-oauth", Resource: work, Token: fixedToken(access), Queue: gatekeeper.NewMemoryQueue(),
		Console: con.add, Limits: runtime.Limits{Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	sess, err := in.OpenSession(ctx, "agent:probe")
	if err != nil {
		t.Fatal(err)
	}
	if f, res, err := fetch(sess, "GET", e.rs.URL+"/api/notebooks/work/whoami", nil, ""); err != nil || f.Status != 200 || strings.Contains(res, access) {
		t.Fatalf("fetch with the OAuth token: %v %s", err, res)
	}
	if _, err := callErr(sess, "fetch", "GET", e.rs.URL+"/api/notebooks/work/whoami", map[string]string{"Authorization": "Bearer mine"}, ""); err == nil || !strings.Contains(err.Error(), "OAuth access token") {
		t.Fatalf("the guest set the token's header: %v", err)
	}
	mem := guestMemory(t, in)
	if !strings.Contains(string(mem), "[credential removed by atelier]") {
		t.Fatal("the memory scan did not find the response the guest received: the scan is broken")
	}
	for _, secret := range []string{access, refresh} {
		if strings.Contains(string(mem), secret) || strings.Contains(con.text(), secret) {
			t.Fatal("a token is in the guest's memory or console")
		}
	}

	// Disconnecting drops the tokens with the account.
	await(t, e.alice.Call(ctx, "disconnectAccount", id))
	if _, err := e.s.db.Account(ctx, id); err == nil {
		t.Fatal("the account and its tokens survived disconnectAccount")
	}
}

// revoke revokes a token at the provider, as the client (revoking a refresh token revokes
// its access token too).
func (e *oauthEnv) revoke(t *testing.T, token string) {
	t.Helper()
	if err := e.p.Revoke(e.clientID, oauthClientSecret, token); err != nil {
		t.Fatal(err)
	}
}

// authorize logs in at the provider for authURL and returns the callback URL.
func authorize(t *testing.T, p *oauthop.Provider, authURL string) string {
	t.Helper()
	u, err := p.Authorize(authURL)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// connectWork connects alice's "work" notebook by OAuth and binds it to the caller gadget
// as "work"; it returns the account id.
func (e *oauthEnv) connectWork(t *testing.T) string {
	t.Helper()
	work := e.rs.URL + "/notebooks/work"
	e.connect(t, work)
	acct, list := e.account(t, work)
	if acct == nil {
		t.Fatalf("no account after the callback: %s", list)
	}
	id := acct["id"].(string)
	await(t, e.ws.Call(context.Background(), "bindGatekeeper", "caller", "work", id))
	return id
}

// TestOAuthRefreshBeforeExpiry: a token that expires within the refresh margin (here every
// token: the provider's live 5 minutes) is refreshed before the request, which carries the
// new one.
func TestOAuthRefreshBeforeExpiry(t *testing.T) {
	e := oauthSetup(t, 10*time.Minute)
	id := e.connectWork(t)
	access, refresh := e.tokens(t, id)
	f, text := e.whoami(t, "work")
	if f.Status != 200 {
		t.Fatalf("whoami = %s", text)
	}
	access2, refresh2 := e.tokens(t, id)
	if access2 == access || refresh2 == "" {
		t.Fatal("the token was not refreshed before it was used")
	}
	if accepted, refused := e.rs.Counts(); accepted != 1 || refused != 0 {
		t.Fatalf("the resource server accepted %d tokens and refused %d requests, want the refreshed one only", accepted, refused)
	}
	if strings.Contains(text, access2) || strings.Contains(text, refresh2) || strings.Contains(text, refresh) {
		t.Fatal("a token reached the gadget")
	}
}

// TestOAuthRefreshOn401: a token the service refuses is refreshed once; a GET is sent again
// with the new token, a POST is not (the guest gets the 401) but the next request uses it.
func TestOAuthRefreshOn401(t *testing.T) {
	e := oauthSetup(t, time.Second)
	id := e.connectWork(t)
	access, _ := e.tokens(t, id)
	e.revoke(t, access)
	if f, text := e.whoami(t, "work"); f.Status != 200 {
		t.Fatalf("whoami after the access token was revoked = %s", text)
	}
	access2, _ := e.tokens(t, id)
	if _, refused := e.rs.Counts(); access2 == access || refused != 1 {
		t.Fatalf("refreshed %v, refused %d, want a refresh after one 401", access2 != access, refused)
	}

	e.revoke(t, access2)
	res := callProbe(t, e.ws, "work", "fetch", "POST", e.rs.URL+"/api/notebooks/work/notes", map[string]any{"Content-Type": "application/json"}, "{}")
	if m, _ := res.(map[string]any); m == nil || fmt.Sprint(m["status"]) != "401" {
		t.Fatalf("a POST refused with 401 = %v, want the 401 (not sent again)", res)
	}
	access3, _ := e.tokens(t, id)
	if f, text := e.whoami(t, "work"); f.Status != 200 || access3 == access2 {
		t.Fatalf("after the POST's refresh: whoami = %s, refreshed %v", text, access3 != access2)
	}
	if _, refused := e.rs.Counts(); refused != 2 {
		t.Fatalf("refused %d requests, want 2", refused)
	}
}

// TestOAuthConcurrentRefresh: gadgets that hit a refused token at the same time share one
// refresh. The provider rotates refresh tokens (a used one is refused), so two refreshes sent
// with the same refresh token would fail the second and mark the account "reconnect": every
// call succeeding with the account still connected shows they were one.
func TestOAuthConcurrentRefresh(t *testing.T) {
	ctx := context.Background()
	e := oauthSetup(t, time.Second)
	id := e.connectWork(t)
	const n = 6
	callers := []string{"caller"}
	for i := 1; i < n; i++ {
		name := fmt.Sprintf("caller%d", i)
		await(t, e.ws.Call(ctx, "createGadget", name, map[string]any{"server.js": callerJS},
			[]any{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}))
		await(t, e.ws.Call(ctx, "bindGatekeeper", name, "work", id))
		callers = append(callers, name)
	}
	access, refresh := e.tokens(t, id)
	e.revoke(t, access)
	calls := make([]*capnweb.Promise, n)
	for i, name := range callers {
		calls[i] = e.ws.Call(ctx, "gadget", name).Call(ctx, "connect").Call(ctx, "call", "work", "fetch",
			[]any{"GET", e.rs.URL + "/api/notebooks/work/whoami", map[string]any{}, ""})
	}
	for i, p := range calls {
		res, err := p.Await(ctx)
		var f fetched
		b, _ := json.Marshal(res)
		if s, ok := res.(string); ok {
			b = []byte(s)
		}
		if json.Unmarshal(b, &f); err != nil || f.Status != 200 {
			t.Fatalf("%s's call after the token was refused = %v, %v; want 200 after one shared refresh", callers[i], res, err)
		}
	}
	acct, list := e.account(t, e.rs.URL+"/notebooks/work")
	if acct["state"] != nil {
		t.Fatalf("listAccounts = %s, want the account still connected", list)
	}
	access2, refresh2 := e.tokens(t, id)
	if access2 == access || refresh2 == refresh {
		t.Fatal("the tokens were not refreshed")
	}
	// A call refused with the old token and finding a newer one sealed uses it without
	// refreshing again: one refresh, one new token for all.
	if accepted, refused := e.rs.Counts(); accepted != 1 || refused < 1 {
		t.Fatalf("the resource server accepted %d distinct tokens and refused %d requests, want 1 token (one refresh) and at least one refusal", accepted, refused)
	}
}

// TestOAuthRefreshedElsewhere: in a cluster two nodes may refresh one account at once (their
// single flights are per node). The provider rotates refresh tokens, so the second refresh is
// refused; the node that lost finds the other node's new tokens sealed and uses them, and the
// account stays connected instead of being marked "reconnect".
func TestOAuthRefreshedElsewhere(t *testing.T) {
	var e *oauthEnv
	var acct string
	var armed atomic.Bool
	// The manifest's token endpoint is a relay to the provider's. Armed, on a refresh it first
	// plays the other node: it refreshes with the same refresh token and seals the result, as
	// that node would, before relaying this node's (now stale) request.
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		form, _ := url.ParseQuery(string(body))
		if form.Get("grant_type") == "refresh_token" && armed.CompareAndSwap(true, false) {
			status, other := postToken(t, e.p.TokenEndpoint(), r.Header, body)
			var tok struct {
				Access  string `json:"access_token"`
				Refresh string `json:"refresh_token"`
			}
			if err := json.Unmarshal(other, &tok); status != http.StatusOK || err != nil || tok.Access == "" {
				t.Errorf("the other node's refresh: HTTP %d %s", status, other)
			} else {
				e.sealTokens(t, acct, tok.Access, tok.Refresh)
			}
		}
		status, answer := postToken(t, e.p.TokenEndpoint(), r.Header, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(answer)
	}))
	defer relay.Close()
	e = oauthSetupWith(t, time.Second, func(m *gatekeeper.Manifest) { m.OAuth.TokenEndpoint = relay.URL + "/oauth/token" },
		strings.TrimPrefix(relay.URL, "http://"))
	acct = e.connectWork(t)
	access, refresh := e.tokens(t, acct)
	e.revoke(t, access) // the next call is refused and refreshes
	armed.Store(true)
	f, text := e.whoami(t, "work")
	if f.Status != 200 {
		t.Fatalf("whoami after a refresh that lost to another node's = %s, want 200 with the other node's token", text)
	}
	if armed.Load() {
		t.Fatal("the call did not refresh the tokens")
	}
	if a, list := e.account(t, e.rs.URL+"/notebooks/work"); a["state"] != nil {
		t.Fatalf("listAccounts = %s, want the account still connected", list)
	}
	access2, refresh2 := e.tokens(t, acct)
	if access2 == access || refresh2 == refresh || !e.rs.Accepted(access2) {
		t.Fatal("the call did not use the tokens the other node sealed")
	}
}

// postToken posts body to a token endpoint with the request headers of the client (its
// authentication) and returns the answer.
func postToken(t *testing.T, endpoint string, h http.Header, body []byte) (int, []byte) {
	req, err := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(string(body)))
	if err != nil {
		t.Error(err)
		return http.StatusInternalServerError, nil
	}
	req.Header.Set("Content-Type", h.Get("Content-Type"))
	req.Header.Set("Authorization", h.Get("Authorization"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return http.StatusBadGateway, nil
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// sealTokens seals tokens for an account into the server's data file, as another node's
// refresh would.
func (e *oauthEnv) sealTokens(t *testing.T, acct, access, refresh string) {
	rec, err := e.s.db.Account(context.Background(), acct)
	if err != nil {
		t.Error(err)
		return
	}
	box, err := vault.LoadKey(e.s.keyFile)
	if err != nil {
		t.Error(err)
		return
	}
	plain, _ := json.Marshal(map[string]any{"access": access, "refresh": refresh, "expiry": time.Now().Add(5 * time.Minute)})
	rec.Sealed = map[string][]byte{"oauth": box.Seal(plain, "credential/"+acct+"/oauth")}
	if err := e.s.db.UpdateAccount(context.Background(), rec); err != nil {
		t.Error(err)
	}
}

// TestOAuthReconnect: when the provider no longer accepts the refresh token, the account is
// marked "reconnect" and calls fail saying so; connecting it again restores the same account.
func TestOAuthReconnect(t *testing.T) {
	ctx := context.Background()
	e := oauthSetup(t, time.Second)
	id := e.connectWork(t)
	_, refresh := e.tokens(t, id)
	e.revoke(t, refresh)
	_, err := e.ws.Call(ctx, "gadget", "caller").Call(ctx, "connect").Call(ctx, "call", "work", "fetch",
		[]any{"GET", e.rs.URL + "/api/notebooks/work/whoami", map[string]any{}, ""}).Await(ctx)
	if err == nil || !strings.Contains(err.Error(), "must be reconnected") || strings.Contains(err.Error(), refresh) {
		t.Fatalf("a call with a refused refresh token: %v", err)
	}
	acct, list := e.account(t, e.rs.URL+"/notebooks/work")
	if acct["state"] != "reconnect" {
		t.Fatalf("listAccounts = %s, want the account in state reconnect", list)
	}
	// Restarting the provider forgets every token: reconnecting gets new ones for the same
	// account (its bindings stay).
	e.p.Restart()
	e.connect(t, e.rs.URL+"/notebooks/work")
	acct, list = e.account(t, e.rs.URL+"/notebooks/work")
	if acct["id"] != id || acct["state"] != nil || strings.Count(list, "resource:") != 1 {
		t.Fatalf("after reconnecting: %s", list)
	}
	if f, text := e.whoami(t, "work"); f.Status != 200 {
		t.Fatalf("whoami after reconnecting = %s", text)
	}
}

// TestOAuthRefusals: a token endpoint that redirects elsewhere, and one at an address the
// operator did not allow, end the flow with a clear page and no account; a user's pending
// authorizations are bounded (the oldest is dropped).
func TestOAuthRefusals(t *testing.T) {
	ctx := context.Background()
	var issuer string
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, issuer+"/oauth/token", http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	unlisted := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Error("the host reached a token endpoint at an address it was not allowed")
	}))
	defer unlisted.Close()
	e := oauthSetup(t, time.Second, strings.TrimPrefix(redirector.URL, "http://"))
	issuer = e.p.Issuer
	for _, c := range []struct{ name, token, want string }{
		{"redirected", redirector.URL + "/token", "redirect (HTTP 307) to"},
		{"unlisted", unlisted.URL + "/token", "not a public address"},
	} {
		m := oauthop.Manifest("probe", e.p, e.rs)
		m.Name, m.OAuth.TokenEndpoint = c.name, c.token
		gk := installGatekeeper(t, e.admin, m, guest(t, "tests/gatekeeper/guests/probe"))
		await(t, e.admin.Call(ctx, "setOAuthClient", gk, e.clientID, oauthClientSecret))
		pending := await(t, e.alice.Call(ctx, "connectAccount", gk, e.rs.URL+"/notebooks/work")).(map[string]any)
		status, page := get(t, authorize(t, e.p, pending["authorizationUrl"].(string)))
		if status != http.StatusBadRequest || !strings.Contains(page, c.want) || !strings.Contains(page, "Nothing was stored") {
			t.Fatalf("%s: callback HTTP %d %s", c.name, status, page)
		}
		if strings.Contains(page, oauthClientSecret) {
			t.Fatalf("%s: the client secret is on the page", c.name)
		}
	}
	if list := await(t, e.alice.Call(ctx, "listAccounts")).([]any); len(list) != 0 {
		t.Fatalf("accounts after refused exchanges: %v", list)
	}

	// Pending authorizations per user are bounded: starting more drops the oldest.
	var first string
	for i := range 9 {
		p := await(t, e.alice.Call(ctx, "connectAccount", e.gk, e.rs.URL+"/notebooks/work")).(map[string]any)
		if i == 0 {
			first = p["authorizationUrl"].(string)
		}
	}
	status, page := get(t, authorize(t, e.p, first))
	if status != http.StatusBadRequest || !strings.Contains(page, "unknown, has expired") {
		t.Fatalf("the oldest of 9 pending authorizations: HTTP %d %s", status, page)
	}
}

// fixedToken is a token source that always gives one token.
type fixedToken string

func (f fixedToken) Token(context.Context, string) (string, error) { return string(f), nil }
