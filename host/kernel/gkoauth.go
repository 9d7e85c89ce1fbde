package kernel

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"atelier/capnweb"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/quota"
	"atelier/host/store"
)

// OAuth bounds and timings (docs/security.md, "OAuth").
const (
	// oauthFlowTTL is how long a started authorization may be completed.
	oauthFlowTTL = 10 * time.Minute
	// maxFlowsPerUser bounds a user's pending authorizations; starting one more drops the
	// user's oldest.
	maxFlowsPerUser = 8
	// maxFlows bounds the pending authorizations of the whole server.
	maxFlows = 10000
	// maxTokenResponse bounds a token endpoint's answer.
	maxTokenResponse = 64 << 10
	// tokenTimeout bounds one request to a token endpoint.
	tokenTimeout = 15 * time.Second
	// oauthSealName is the sealed value of an OAuth account (its tokens and their expiry).
	oauthSealName = "oauth"
	// OAuthCallbackPath is where the provider sends the user back (the gateway serves it).
	OAuthCallbackPath = "/oauth/callback"
)

// oauthFlows holds the pending authorizations and the refreshes in progress.
type oauthFlows struct {
	mu      sync.Mutex
	pending map[string]*oauthFlow // by the SHA-256 of the state
	refresh map[string]*refreshCall
	once    sync.Once
	client  *outboundhttp.Client
	err     error
}

// oauthFlow is one authorization the server waits to complete.
type oauthFlow struct {
	id, user, gatekeeper, resource, account string
	verifier, redirect                      string
	expires                                 time.Time
}

// refreshCall is a refresh of one account's tokens in progress: others wait for its result.
type refreshCall struct {
	done  chan struct{}
	token string
	err   error
}

// oauthTokens is what an OAuth account keeps sealed.
type oauthTokens struct {
	Access  string    `json:"access"`
	Refresh string    `json:"refresh,omitempty"`
	Expiry  time.Time `json:"expiry,omitzero"`
}

// randomToken returns n random bytes in unpadded URL-safe base64.
func randomToken(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// stateKey is the map key of a state: its hash, so that looking a guessed state up takes
// no time that depends on how much of a real one it shares.
func stateKey(state string) string {
	h := sha256.Sum256([]byte(state))
	return hex.EncodeToString(h[:])
}

// oauthClientSeal binds a gatekeeper's sealed client secret to it.
func oauthClientSeal(gatekeeperID string) string { return "oauth-client/" + gatekeeperID }

// SetOAuthClient configures the OAuth client of gatekeeperId (the admin only): the client id
// and secret the provider issued for this server. The secret is sealed in the vault and never
// returned; an empty secret configures a public client (PKCE alone).
func (a *Authed) SetOAuthClient(ctx context.Context, gatekeeperID, clientID, clientSecret string) error {
	if err := a.adminOnly("setOAuthClient"); err != nil {
		return err
	}
	k := a.k
	rec, _, err := k.st.Gatekeeper(ctx, gatekeeperID)
	if err != nil {
		return wrapErr(err, "set OAuth client of %s", gatekeeperID)
	}
	m, err := gatekeeper.ParseManifest(rec.Manifest)
	if err != nil {
		return wrapErr(err, "set OAuth client of %s", gatekeeperID)
	}
	if m.OAuth == nil {
		return fail(CodeFailedPrecondition, "set OAuth client: %s connects accounts with pasted credentials; its manifest declares no oauth", m.Name)
	}
	if clientID == "" || len(clientID) > 512 || strings.ContainsAny(clientID, "\r\n\x00") || len(clientSecret) > 4096 || strings.ContainsAny(clientSecret, "\r\n\x00") {
		return fail(CodeInvalidArgument, "set OAuth client: want a client id of 1-512 characters and a secret of at most 4096, each on one line")
	}
	box, err := k.box()
	if err != nil {
		return wrapErr(err, "set OAuth client")
	}
	rec.OAuthClient = &store.OAuthClient{ID: clientID}
	if clientSecret != "" {
		rec.OAuthClient.Sealed = box.Seal([]byte(clientSecret), oauthClientSeal(gatekeeperID))
	}
	if err := k.st.UpdateGatekeeper(ctx, rec); err != nil {
		return wrapErr(err, "set OAuth client of %s", gatekeeperID)
	}
	return nil
}

// redirectURI is where the provider sends the user back: Config.PublicURL, or else the
// origin of the session that starts the flow (its Origin header, or http:// and its Host).
func (k *Kernel) redirectURI(ctx context.Context) (string, error) {
	base := k.cfg.PublicURL
	if base == "" {
		if s := capnweb.SessionFrom(ctx); s != nil {
			if o := s.Peer().Header.Get("Origin"); o != "" && o != "null" {
				base = o
			} else if host := s.Peer().Host; host != "" {
				base = "http://" + host
			}
		}
	}
	if base == "" {
		return "", fail(CodeFailedPrecondition, "connect account: this server does not know its own URL for the OAuth callback; start it with --public-url")
	}
	return strings.TrimSuffix(base, "/") + OAuthCallbackPath, nil
}

// startOAuth begins an authorization-code flow with PKCE for the caller's account on the
// gatekeeper (or, when account is set, to reconnect that account) and returns the URL to
// send the user to.
func (a *Authed) startOAuth(ctx context.Context, rec store.GatekeeperRecord, m *gatekeeper.Manifest, resource, account string) (AccountInfo, error) {
	k := a.k
	if rec.OAuthClient == nil {
		return AccountInfo{}, fail(CodeFailedPrecondition, "connect account: the admin has not configured the OAuth client of %s yet (atelier gatekeeper oauth-client %s --client-id ID --client-secret-file FILE)", m.Name, m.Name)
	}
	redirect, err := k.redirectURI(ctx)
	if err != nil {
		return AccountInfo{}, err
	}
	f := &oauthFlow{id: store.NewID("oauth"), user: a.p.userID, gatekeeper: rec.ID, resource: resource, account: account,
		verifier: randomToken(32), redirect: redirect, expires: time.Now().Add(oauthFlowTTL)}
	state := randomToken(32)
	if err := k.addFlow(stateKey(state), f); err != nil {
		return AccountInfo{}, err
	}
	challenge := sha256.Sum256([]byte(f.verifier))
	u, _ := url.Parse(m.OAuth.AuthorizationEndpoint) // Validate checked it
	q := u.Query()
	q.Set("response_type", "code")
	q.Set("client_id", rec.OAuthClient.ID)
	q.Set("redirect_uri", redirect)
	q.Set("state", state)
	q.Set("code_challenge", base64.RawURLEncoding.EncodeToString(challenge[:]))
	q.Set("code_challenge_method", gatekeeper.PKCEMethod)
	if len(m.OAuth.Scopes) > 0 {
		q.Set("scope", strings.Join(m.OAuth.Scopes, " "))
	}
	u.RawQuery = q.Encode()
	return AccountInfo{Gatekeeper: rec.ID, Name: m.Name, Resource: resource, AuthorizationURL: u.String(), Pending: f.id}, nil
}

// addFlow stores a pending flow, dropping expired ones and the user's oldest beyond
// maxFlowsPerUser.
func (k *Kernel) addFlow(key string, f *oauthFlow) error {
	o := &k.oauth
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.pending == nil {
		o.pending = map[string]*oauthFlow{}
	}
	now := time.Now()
	var mine []string
	for key, p := range o.pending {
		switch {
		case now.After(p.expires):
			delete(o.pending, key)
		case p.user == f.user:
			mine = append(mine, key)
		}
	}
	for len(mine) >= maxFlowsPerUser {
		oldest := 0
		for i, key := range mine {
			if o.pending[key].expires.Before(o.pending[mine[oldest]].expires) {
				oldest = i
			}
		}
		delete(o.pending, mine[oldest])
		mine = append(mine[:oldest], mine[oldest+1:]...)
	}
	if len(o.pending) >= maxFlows {
		return fail(CodeUnavailable, "connect account: too many sign-ins are in progress on this server; try again in a few minutes")
	}
	o.pending[key] = f
	return nil
}

// takeFlow removes and returns the pending flow of state (single use), nil when it is
// unknown or expired.
func (k *Kernel) takeFlow(state string) *oauthFlow {
	o := &k.oauth
	key := stateKey(state)
	o.mu.Lock()
	defer o.mu.Unlock()
	f := o.pending[key]
	delete(o.pending, key)
	if f == nil || time.Now().After(f.expires) {
		return nil
	}
	return f
}

// OAuthCallbackError is a callback that stored nothing; Msg says why and what to do, for the
// user's browser.
type OAuthCallbackError struct{ Msg string }

func (e *OAuthCallbackError) Error() string { return e.Msg }

// CompleteOAuth handles the provider's redirect to OAuthCallbackPath: it takes the pending
// flow of state (unknown, expired or used already: an *OAuthCallbackError and nothing
// stored), exchanges code at the token endpoint with the PKCE verifier and the client's
// credentials, seals the tokens, and creates (or reconnects) the account. providerErr is the
// callback's error parameter, when the provider refused.
func (k *Kernel) CompleteOAuth(ctx context.Context, state, code, providerErr string) (AccountInfo, error) {
	if state == "" || len(state) > 256 {
		return AccountInfo{}, &OAuthCallbackError{"This sign-in link has no valid state. Start connecting the account again from the workshop."}
	}
	f := k.takeFlow(state)
	if f == nil {
		return AccountInfo{}, &OAuthCallbackError{"This sign-in is unknown, has expired or was completed already. Nothing was stored. Start connecting the account again from the workshop."}
	}
	if providerErr != "" {
		return AccountInfo{}, &OAuthCallbackError{fmt.Sprintf("The provider did not authorize the account (%.100s). Nothing was stored. Start connecting it again from the workshop.", providerErr)}
	}
	if code == "" || len(code) > 4096 {
		return AccountInfo{}, &OAuthCallbackError{"The provider sent no authorization code. Nothing was stored. Start connecting the account again from the workshop."}
	}
	rec, _, err := k.st.Gatekeeper(ctx, f.gatekeeper)
	if err != nil {
		return AccountInfo{}, &OAuthCallbackError{"The gatekeeper of this sign-in is no longer installed. Nothing was stored."}
	}
	m, err := gatekeeper.ParseManifest(rec.Manifest)
	if err != nil || m.OAuth == nil {
		return AccountInfo{}, &OAuthCallbackError{"The gatekeeper of this sign-in no longer uses OAuth. Nothing was stored."}
	}
	grant, err := m.GrantFor(f.resource)
	if err != nil {
		return AccountInfo{}, &OAuthCallbackError{"The resource of this sign-in is no longer served by its gatekeeper. Nothing was stored."}
	}
	tok, err := k.tokenRequest(ctx, rec, m, url.Values{"grant_type": {"authorization_code"}, "code": {code},
		"redirect_uri": {f.redirect}, "code_verifier": {f.verifier}})
	if err != nil {
		return AccountInfo{}, &OAuthCallbackError{fmt.Sprintf("Exchanging the authorization code failed: %v. Nothing was stored. Start connecting the account again from the workshop.", err)}
	}
	box, err := k.box()
	if err != nil {
		return AccountInfo{}, err
	}
	seal := func(id string) map[string][]byte {
		plain, _ := json.Marshal(tok)
		return map[string][]byte{oauthSealName: box.Seal(plain, sealContext(id, oauthSealName))}
	}
	if f.account != "" { // reconnecting: the account keeps its id, bindings and state
		acct, ok := k.userAccount(ctx, f.user, f.account)
		if !ok {
			return AccountInfo{}, &OAuthCallbackError{"The account to reconnect was disconnected meanwhile. Nothing was stored."}
		}
		acct.Sealed, acct.State = seal(acct.ID), ""
		if err := k.st.UpdateAccount(ctx, acct); err != nil {
			return AccountInfo{}, wrapErr(err, "reconnect account %s", acct.ID)
		}
		return AccountInfo{ID: acct.ID, Gatekeeper: acct.Gatekeeper, Name: m.Name, Resource: acct.Resource, Kind: grant.Kind, Created: acct.Created}, nil
	}
	acct := store.GatekeeperAccount{ID: store.NewID("acct"), Owner: f.user, Gatekeeper: f.gatekeeper, Resource: f.resource, Created: time.Now().UTC()}
	acct.Sealed = seal(acct.ID)
	if err := k.charge(ctx, f.user, quota.Limits{Accounts: 1}, func() error { return k.st.PutAccount(ctx, acct) }); err != nil {
		return AccountInfo{}, wrapErr(err, "connect account")
	}
	return AccountInfo{ID: acct.ID, Gatekeeper: f.gatekeeper, Name: m.Name, Resource: f.resource, Kind: grant.Kind, Created: acct.Created}, nil
}

// errRefused is a token endpoint's refusal of a grant (invalid_grant and the like): the
// user must authorize again.
var errRefused = errors.New("the provider refused the grant")

// oauthHTTP returns the client of the host's own requests to token endpoints.
func (k *Kernel) oauthHTTP() (*outboundhttp.Client, error) {
	o := &k.oauth
	o.once.Do(func() {
		opts := k.cfg.OAuthEgress
		opts.MaxResponseBody, opts.Timeout = maxTokenResponse, tokenTimeout
		o.client, o.err = outboundhttp.NewClient(opts)
	})
	return o.client, o.err
}

// tokenRequest posts form to the gatekeeper's token endpoint with the client's credentials
// (HTTP Basic, RFC 6749 section 2.3.1; a public client sends its id in the form) and
// returns the tokens. The request follows the host's egress rules (public addresses or
// Config.OAuthEgress.AllowAddrs, no redirects, a bounded answer and time); the client
// secret is scrubbed from the answer, and no error carries a token.
func (k *Kernel) tokenRequest(ctx context.Context, rec store.GatekeeperRecord, m *gatekeeper.Manifest, form url.Values) (oauthTokens, error) {
	c, err := k.oauthHTTP()
	if err != nil {
		return oauthTokens{}, err
	}
	u, _ := url.Parse(m.OAuth.TokenEndpoint) // Validate checked it
	host := outboundhttp.CanonicalHost(u.Scheme, u.Host)
	p := &outboundhttp.Policy{Schemes: []string{u.Scheme}, Hosts: []string{host}, Prefixes: []string{u.Scheme + "://" + host + u.EscapedPath()}}
	client := rec.OAuthClient
	if client == nil {
		return oauthTokens{}, errors.New("the admin has not configured the OAuth client")
	}
	if client.Sealed != nil {
		box, err := k.box()
		if err != nil {
			return oauthTokens{}, err
		}
		secret, err := box.Open(client.Sealed, oauthClientSeal(rec.ID))
		if err != nil {
			return oauthTokens{}, fmt.Errorf("open the client secret: %w", err)
		}
		basic := base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(client.ID) + ":" + url.QueryEscape(string(secret))))
		p.Headers = []outboundhttp.Header{{Name: "Authorization", Value: "Basic " + basic}}
		p.Secrets = []string{string(secret)}
	} else {
		form.Set("client_id", client.ID)
	}
	ctx, cancel := context.WithTimeout(ctx, tokenTimeout)
	defer cancel()
	resp, err := c.Do(ctx, p, outboundhttp.Request{Method: "POST", URL: m.OAuth.TokenEndpoint, Body: []byte(form.Encode()), Headers: []outboundhttp.Header{
		{Name: "Content-Type", Value: "application/x-www-form-urlencoded"}, {Name: "Accept", Value: "application/json"}}})
	if err != nil {
		return oauthTokens{}, fmt.Errorf("token endpoint: %w", err)
	}
	var body struct {
		AccessToken  string          `json:"access_token"`
		TokenType    string          `json:"token_type"`
		ExpiresIn    json.Number     `json:"expires_in"`
		RefreshToken string          `json:"refresh_token"`
		Error        string          `json:"error"`
		Description  json.RawMessage `json:"error_description"`
	}
	if err := json.Unmarshal(resp.Body, &body); err != nil && resp.Status == http.StatusOK {
		return oauthTokens{}, fmt.Errorf("token endpoint answered HTTP %d with no JSON token response", resp.Status)
	}
	if resp.Status != http.StatusOK || body.Error != "" {
		code := body.Error
		if !scopeLike(code) {
			code = "unknown"
		}
		if resp.Status == http.StatusBadRequest || resp.Status == http.StatusUnauthorized {
			return oauthTokens{}, fmt.Errorf("%w: token endpoint answered HTTP %d (%s)", errRefused, resp.Status, code)
		}
		return oauthTokens{}, fmt.Errorf("token endpoint answered HTTP %d (%s)", resp.Status, code)
	}
	if body.AccessToken == "" || len(body.AccessToken) > 8192 || strings.ContainsAny(body.AccessToken+body.RefreshToken, "\r\n\x00") {
		return oauthTokens{}, errors.New("token endpoint answered without a usable access token")
	}
	if body.TokenType != "" && !strings.EqualFold(body.TokenType, "bearer") && !strings.EqualFold(body.TokenType, "dpop") {
		return oauthTokens{}, fmt.Errorf("token endpoint answered a token of type %.20q, which the host does not send", body.TokenType)
	}
	tok := oauthTokens{Access: body.AccessToken, Refresh: body.RefreshToken}
	if n, err := body.ExpiresIn.Int64(); err == nil && n > 0 {
		tok.Expiry = time.Now().Add(time.Duration(min(n, 10*365*24*3600)) * time.Second).UTC()
	}
	return tok, nil
}

// scopeLike reports whether s is a short printable token (an OAuth error code), safe to show.
func scopeLike(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if r < 0x21 || r > 0x7e || r == '"' || r == '\\' {
			return false
		}
	}
	return true
}

// accountToken is the token source of one OAuth account (outboundhttp.TokenSource).
type accountToken struct {
	k       *Kernel
	account string
}

// Token returns the account's access token, refreshed first when it expires within
// Config.OAuthRefreshMargin or when the service refused it.
func (t accountToken) Token(ctx context.Context, refused string) (string, error) {
	acct, tok, err := t.k.openTokens(ctx, t.account)
	if err != nil {
		return "", err
	}
	if acct.State == store.AccountReconnect {
		return "", reconnectErr(acct.ID, nil)
	}
	if refused == "" && (tok.Expiry.IsZero() || time.Until(tok.Expiry) > t.k.cfg.OAuthRefreshMargin) {
		return tok.Access, nil
	}
	if refused != "" && tok.Access != refused {
		return tok.Access, nil // refreshed meanwhile
	}
	return t.k.refreshTokens(ctx, t.account, tok.Access)
}

// reconnectErr says that an account must be connected again.
func reconnectErr(account string, cause error) error {
	msg := "the OAuth account " + account + " must be reconnected: its provider no longer accepts its tokens. Reconnect it in the workshop (Accounts) or with `atelier account connect`"
	if cause != nil {
		msg += " (" + cause.Error() + ")"
	}
	return errors.New(msg)
}

// openTokens reads an OAuth account and opens its tokens.
func (k *Kernel) openTokens(ctx context.Context, id string) (store.GatekeeperAccount, oauthTokens, error) {
	acct, err := k.st.Account(ctx, id)
	if err != nil {
		return acct, oauthTokens{}, fmt.Errorf("account %s: %w", id, err)
	}
	var tok oauthTokens
	sealed, ok := acct.Sealed[oauthSealName]
	if !ok {
		return acct, tok, fmt.Errorf("account %s has no OAuth tokens", id)
	}
	box, err := k.box()
	if err != nil {
		return acct, tok, err
	}
	plain, err := box.Open(sealed, sealContext(id, oauthSealName))
	if err != nil {
		return acct, tok, fmt.Errorf("account %s: open its tokens: %w", id, err)
	}
	if err := json.Unmarshal(plain, &tok); err != nil {
		return acct, tok, fmt.Errorf("account %s: its sealed tokens: %w", id, err)
	}
	return acct, tok, nil
}

// refreshTokens refreshes the account's tokens unless its access token is no longer stale
// (another refresh replaced it). Concurrent refreshes of one account share one request.
func (k *Kernel) refreshTokens(ctx context.Context, id, stale string) (string, error) {
	o := &k.oauth
	o.mu.Lock()
	if o.refresh == nil {
		o.refresh = map[string]*refreshCall{}
	}
	if c := o.refresh[id]; c != nil {
		o.mu.Unlock()
		select {
		case <-c.done:
			return c.token, c.err
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	c := &refreshCall{done: make(chan struct{})}
	o.refresh[id] = c
	o.mu.Unlock()
	c.token, c.err = k.refreshOnce(context.WithoutCancel(ctx), id, stale)
	o.mu.Lock()
	delete(o.refresh, id)
	o.mu.Unlock()
	close(c.done)
	return c.token, c.err
}

// refreshOnce does the refresh of refreshTokens; a refused refresh token marks the account
// AccountReconnect, unless the account's tokens changed meanwhile (refreshed elsewhere).
func (k *Kernel) refreshOnce(ctx context.Context, id, stale string) (string, error) {
	acct, tok, err := k.openTokens(ctx, id)
	if err != nil {
		return "", err
	}
	if tok.Access != stale {
		return tok.Access, nil
	}
	markReconnect := func(cause error) error {
		acct.State = store.AccountReconnect
		if err := k.st.UpdateAccount(ctx, acct); err != nil {
			k.log.Warn("oauth: mark account for reconnection", "account", id, "err", err)
		}
		return reconnectErr(id, cause)
	}
	if tok.Refresh == "" {
		if !tok.Expiry.IsZero() && time.Now().Before(tok.Expiry) {
			return "", reconnectErr(id, errors.New("the service refused the access token and there is no refresh token"))
		}
		return "", markReconnect(errors.New("the access token expired and there is no refresh token"))
	}
	rec, _, err := k.st.Gatekeeper(ctx, acct.Gatekeeper)
	if err != nil {
		return "", fmt.Errorf("refresh the tokens of %s: %w", id, err)
	}
	m, err := gatekeeper.ParseManifest(rec.Manifest)
	if err != nil || m.OAuth == nil {
		return "", fmt.Errorf("refresh the tokens of %s: its gatekeeper declares no oauth", id)
	}
	fresh, err := k.tokenRequest(ctx, rec, m, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tok.Refresh}})
	if errors.Is(err, errRefused) {
		// Another node (a cluster's refreshes share no lock) may have refreshed the account
		// meanwhile, and the provider rotated its refresh token: its tokens are the account's.
		if acct2, now, rerr := k.openTokens(ctx, id); rerr == nil && now.Access != stale {
			k.log.Info("oauth: the account was refreshed elsewhere meanwhile", "account", id)
			if acct2.State == store.AccountReconnect {
				return "", reconnectErr(id, nil)
			}
			return now.Access, nil
		}
		return "", markReconnect(err)
	}
	if err != nil {
		return "", fmt.Errorf("refresh the tokens of %s: %w", id, err)
	}
	if fresh.Refresh == "" {
		fresh.Refresh = tok.Refresh
	}
	box, err := k.box()
	if err != nil {
		return "", err
	}
	plain, _ := json.Marshal(fresh)
	acct.Sealed = map[string][]byte{oauthSealName: box.Seal(plain, sealContext(id, oauthSealName))}
	if err := k.st.UpdateAccount(ctx, acct); err != nil {
		return "", fmt.Errorf("store the refreshed tokens of %s: %w", id, err)
	}
	return fresh.Access, nil
}
