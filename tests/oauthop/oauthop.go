// Package oauthop runs a real OpenID provider for tests: zitadel's op package, with its
// example in-memory storage (one user, test-user@HOST with password "verysecure") and
// login form, on a loopback port; and a resource server that accepts the bearer tokens the
// provider's userinfo endpoint accepts. tests/gatekeeper and tests/browser connect OAuth
// gatekeeper accounts through them.
package oauthop

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"

	"atelier/host/gatekeeper"
)

// Password is the password of the provider's user.
const Password = "verysecure"

// clients guards storage.RegisterClients, which writes a package-level map.
var clients sync.Mutex

// Provider is a running OpenID provider. Its storage can be replaced (Restart), which
// forgets every token it issued.
type Provider struct {
	// Issuer is http://127.0.0.1:PORT; Addr is 127.0.0.1:PORT.
	Issuer, Addr string
	handler      atomic.Pointer[http.Handler]
	srv          *http.Server
}

// Start starts a provider; Close stops it.
func Start() (*Provider, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the provider: %w", err)
	}
	p := &Provider{Addr: ln.Addr().String(), Issuer: "http://" + ln.Addr().String()}
	p.Restart()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { (*p.handler.Load()).ServeHTTP(w, r) })}
	go p.srv.Serve(ln)
	return p, nil
}

// Close stops the provider.
func (p *Provider) Close() { p.srv.Close() }

// Register adds a confidential web client (HTTP Basic client authentication) that may
// redirect to redirectURI.
func (p *Provider) Register(clientID, secret, redirectURI string) {
	clients.Lock()
	defer clients.Unlock()
	storage.RegisterClients(storage.WebClient(clientID, secret, redirectURI))
}

// Restart gives the provider fresh storage: the tokens it issued are unknown from now on.
func (p *Provider) Restart() {
	var h http.Handler = exampleop.SetupServer(p.Issuer, storage.NewStorage(storage.NewUserStore(p.Issuer)), nil, false)
	p.handler.Store(&h)
}

// User is the provider's user name.
func (p *Provider) User() string { return "test-user@127.0.0.1" }

// AuthorizationEndpoint and TokenEndpoint are the provider's endpoints.
func (p *Provider) AuthorizationEndpoint() string { return p.Issuer + "/auth" }

// TokenEndpoint is where codes and refresh tokens are exchanged.
func (p *Provider) TokenEndpoint() string { return p.Issuer + "/oauth/token" }

// Authorize plays the user's browser: it opens authURL, logs in on the provider's form and
// returns the URL the provider redirects back to (the client's redirect URI with code and
// state), without following it.
func (p *Provider) Authorize(authURL string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	next := authURL
	for range 10 {
		resp, err := c.Get(next)
		if err != nil {
			return "", err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		loc, _ := resp.Location()
		switch {
		case resp.StatusCode/100 == 3 && loc != nil && strings.HasPrefix(loc.String(), p.Issuer+"/login/"):
			form := url.Values{"username": {p.User()}, "password": {Password}, "id": {loc.Query().Get("authRequestID")}}
			resp, err := c.PostForm(p.Issuer+"/login/username", form)
			if err != nil {
				return "", err
			}
			resp.Body.Close()
			if loc, err = resp.Location(); err != nil {
				return "", fmt.Errorf("login: HTTP %d, no redirect", resp.StatusCode)
			}
			next = loc.String()
		case resp.StatusCode/100 == 3 && loc != nil && strings.HasPrefix(loc.String(), p.Issuer):
			next = loc.String()
		case resp.StatusCode/100 == 3 && loc != nil:
			return loc.String(), nil
		default:
			return "", fmt.Errorf("authorize: HTTP %d at %s: %.300s", resp.StatusCode, next, body)
		}
	}
	return "", fmt.Errorf("authorize: too many redirects")
}

// Revoke revokes a token as the client (revoking a refresh token revokes its access token
// too).
func (p *Provider) Revoke(clientID, secret, token string) error {
	req, _ := http.NewRequest("POST", p.Issuer+"/revoke", strings.NewReader(url.Values{"token": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("revoke: HTTP %d", resp.StatusCode)
	}
	return nil
}

// ResourceServer is an API that accepts a bearer token when the provider's userinfo
// endpoint does, and answers with the user and the Authorization header it received (an
// echo, which the host must scrub). Any other token gets 401.
type ResourceServer struct {
	*httptest.Server
	// Addr is 127.0.0.1:PORT.
	Addr    string
	mu      sync.Mutex
	refused int
	tokens  map[string]bool
}

// StartResourceServer starts a resource server whose tokens p checks; Close stops it.
func StartResourceServer(p *Provider) *ResourceServer {
	rs := &ResourceServer{tokens: map[string]bool{}}
	rs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequest("GET", p.Issuer+"/userinfo", nil)
		req.Header.Set("Authorization", r.Header.Get("Authorization"))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		var info struct {
			Sub string `json:"sub"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&info) != nil || info.Sub == "" {
			rs.mu.Lock()
			rs.refused++
			rs.mu.Unlock()
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
			return
		}
		rs.mu.Lock()
		rs.tokens[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")] = true
		rs.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"user": info.Sub, "echo": r.Header.Get("Authorization"), "path": r.URL.Path})
	}))
	rs.Addr = strings.TrimPrefix(rs.URL, "http://")
	return rs
}

// Counts returns how many distinct tokens the server accepted and how many requests it
// refused.
func (rs *ResourceServer) Counts() (accepted, refused int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.tokens), rs.refused
}

// Accepted reports whether the server accepted token.
func (rs *ResourceServer) Accepted(token string) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.tokens[token]
}

// Manifest is a gatekeeper manifest named name for the probe guest
// (tests/gatekeeper/guests/probe) on rs's notebooks, whose accounts connect by OAuth at p
// (PKCE S256, scopes openid and offline_access, the token as a bearer header).
func Manifest(name string, p *Provider, rs *ResourceServer) gatekeeper.Manifest {
	return gatekeeper.Manifest{
		Name: name, Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress: gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{rs.Addr}},
		OAuth: &gatekeeper.OAuth{AuthorizationEndpoint: p.AuthorizationEndpoint(), TokenEndpoint: p.TokenEndpoint(),
			Scopes: []string{"openid", "offline_access"}, PKCE: "S256", Header: "Authorization", Template: "Bearer {secret}"},
		Resources: []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: rs.URL + "/notebooks/:notebook", Egress: []string{rs.URL + "/api/notebooks/:notebook"}}},
	}
}
