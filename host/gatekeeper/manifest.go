package gatekeeper

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"atelier/host/capability/outboundhttp"
)

// World is the WIT world every gatekeeper package targets; a package that serves hooks
// declares WorldWithHooks, which includes it.
const World = "atelier:gatekeeper/gatekeeper@0.1.0"

// Package formats (Manifest.Format): how gatekeeper.wasm implements World.
const (
	// FormatComponent is a WebAssembly component of World (the default). Install runs it.
	FormatComponent = "component"
	// FormatExtism is an Extism plugin: a core module using Extism's host ABI, whose plugin
	// functions map World's connector (host/gatekeeper/extism installs it).
	FormatExtism = "extism"
)

// Manifest describes a gatekeeper package: who made it, what it may reach, which credentials
// it needs and which resources it serves. It is manifest.json in the package archive.
type Manifest struct {
	// Name identifies the gatekeeper: lowercase letters, digits and dashes ("notes").
	Name string `json:"name"`
	// Version is the vendor's version ("1.2.0").
	Version string `json:"version"`
	// Vendor names who ships it.
	Vendor string `json:"vendor"`
	// World is the WIT world the component targets (World).
	World string `json:"world"`
	// Format is FormatComponent (when empty) or FormatExtism.
	Format string `json:"format,omitempty"`
	// Component pins the component's content.
	Component ComponentRef `json:"component"`
	// Egress lists where the gatekeeper may send requests at all.
	Egress Egress `json:"egress"`
	// Credentials are the secrets a user connects; the host adds each to every request.
	Credentials []Credential `json:"credentials"`
	// Resources are the kinds of resource a user can grant, with the URLs each may reach.
	Resources []ResourcePattern `json:"resources"`
	// AutoApprovable lists the action kind tags that user rules may approve without asking.
	AutoApprovable []string `json:"autoApprovable,omitempty"`
	// Session declares the session API that Code Mode snippets (agents, users) call. A
	// gatekeeper without it serves gadgets only: their bindings call any method by name.
	Session *SessionAPI `json:"session,omitempty"`
	// OAuth, when set, connects accounts by an OAuth 2.0 authorization-code flow with PKCE
	// instead of pasted credentials (Credentials must then be empty).
	OAuth *OAuth `json:"oauth,omitempty"`
	// Hooks are the events a gadget may register a hook for (the world must then be
	// WorldWithHooks).
	Hooks []HookSpec `json:"hooks,omitempty"`
}

// OAuth declares a gatekeeper's OAuth 2.0 client: where users authorize it, where the host
// exchanges and refreshes tokens, and how the access token is added to requests (like a
// Credential, with {secret} replaced by the access token). The admin configures the client
// id and secret (setOAuthClient).
type OAuth struct {
	// AuthorizationEndpoint is where the user's browser is sent to authorize.
	AuthorizationEndpoint string `json:"authorizationEndpoint"`
	// TokenEndpoint is where the host exchanges the code and refreshes the tokens. The host
	// reaches it for itself; it need not be in Egress.
	TokenEndpoint string `json:"tokenEndpoint"`
	// Scopes are requested in the authorization (may be empty).
	Scopes []string `json:"scopes,omitempty"`
	// PKCE must be "S256".
	PKCE string `json:"pkce"`
	// Header and Template add the access token to every request, as a Credential does.
	Header   string `json:"header"`
	Template string `json:"template"`
}

// PKCEMethod is the only PKCE method a manifest may declare.
const PKCEMethod = "S256"

// maxScopes bounds OAuth.Scopes.
const maxScopes = 64

// scopePattern is an OAuth scope token (RFC 6749 section 3.3).
var scopePattern = regexp.MustCompile(`^[\x21\x23-\x5b\x5d-\x7e]{1,128}$`)

// checkEndpoint accepts an https URL, or an http URL whose host is an IP literal (which the
// host dials only when the operator allows that address, outboundhttp.Options.AllowAddrs),
// without user info or fragment.
func checkEndpoint(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	if !u.IsAbs() || u.Host == "" || u.User != nil || u.Fragment != "" || u.Opaque != "" || len(raw) > 2048 {
		return fmt.Errorf("%q: want an absolute URL without user info or fragment", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if _, err := netip.ParseAddr(strings.Trim(u.Hostname(), "[]")); err != nil {
			return fmt.Errorf("%q: want https (plain http only for an IP address the operator allows)", raw)
		}
	default:
		return fmt.Errorf("%q: want https", raw)
	}
	if !hostPattern.MatchString(strings.ToLower(u.Host)) {
		return fmt.Errorf("%q: host %q is not a host name or IP with an optional port", raw, u.Host)
	}
	return nil
}

// validateOAuth checks the oauth block.
func (m *Manifest) validateOAuth(bad func(string, ...any)) {
	o := m.OAuth
	if len(m.Credentials) > 0 {
		bad("oauth: a gatekeeper with oauth declares no credentials (the access token is its credential)")
	}
	if err := checkEndpoint(o.AuthorizationEndpoint); err != nil {
		bad("oauth.authorizationEndpoint %v", err)
	} else if u, _ := url.Parse(o.AuthorizationEndpoint); u.Query().Has("state") || u.Query().Has("code_challenge") || u.Query().Has("redirect_uri") {
		bad("oauth.authorizationEndpoint: the host sets state, code_challenge and redirect_uri itself")
	}
	if err := checkEndpoint(o.TokenEndpoint); err != nil {
		bad("oauth.tokenEndpoint %v", err)
	}
	if o.PKCE != PKCEMethod {
		bad("oauth.pkce %q: want %q (PKCE is required)", o.PKCE, PKCEMethod)
	}
	if len(o.Scopes) > maxScopes {
		bad("oauth.scopes: at most %d", maxScopes)
	}
	for _, sc := range o.Scopes {
		if !scopePattern.MatchString(sc) {
			bad("oauth.scopes: %q is not a scope token", sc)
		}
	}
	switch {
	case !tokenPattern.MatchString(o.Header) || slices.Contains(forbiddenCredentialHeaders, strings.ToLower(o.Header)):
		bad("oauth.header %q: want a header name the transport does not manage", o.Header)
	case strings.Count(o.Template, "{secret}") != 1 || strings.ContainsAny(o.Template, "\r\n\x00"):
		bad("oauth.template %q: want one line with {secret} exactly once", o.Template)
	}
}

// SessionAPI is a gatekeeper's session API as Code Mode shows it: `env.NAME.method(...)` for
// each of Methods, typed by the TypeScript interface Type that the component's
// typescript-types declares.
type SessionAPI struct {
	// Methods are the session's method names (JavaScript identifiers).
	Methods []string `json:"methods"`
	// Type names the interface in typescript-types that declares them ("Notebook"); empty
	// declares each method as taking and returning unknown values.
	Type string `json:"type,omitempty"`
}

// maxSessionMethods bounds SessionAPI.Methods.
const maxSessionMethods = 256

// ComponentRef pins the package's component by content.
type ComponentRef struct {
	// SHA256 is the hex SHA-256 of gatekeeper.wasm.
	SHA256 string `json:"sha256"`
}

// Egress lists the schemes ("https", "http") and hosts ("api.example.com", "host:8443") the
// gatekeeper may reach.
type Egress struct {
	Schemes []string `json:"schemes"`
	Hosts   []string `json:"hosts"`
}

// Credential is one secret the user provides. The host adds Header with Template's
// "{secret}" replaced by the secret to every request; the guest never sees it.
type Credential struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Header      string `json:"header"`
	Template    string `json:"template"`
	// Optional credentials may be left out when connecting an account: no header is sent.
	Optional bool `json:"optional,omitempty"`
}

// ResourcePattern is one kind of resource. URLPattern is an absolute URL whose path segments
// are literals or parameters (":notebook"); a granted resource URL must match it. Egress are
// URL templates (using the same parameters) under which the gatekeeper may send requests for
// a resource of this kind.
type ResourcePattern struct {
	Kind       string   `json:"kind"`
	URLPattern string   `json:"urlPattern"`
	Egress     []string `json:"egress"`
}

var (
	namePattern  = regexp.MustCompile(`^[a-z][a-z0-9-]{0,63}$`)
	tokenPattern = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,64}$")
	hostPattern  = regexp.MustCompile(`^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?$|^\[[0-9a-f:.]+\](:[0-9]{1,5})?$`)
	hexSHA256    = regexp.MustCompile(`^[0-9a-f]{64}$`)
	identPattern = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]{0,63}$`)
	// A parameter's value in a resource URL: unreserved characters only, so that nothing
	// percent-encoded or path-like can slip into an egress prefix.
	paramValue = regexp.MustCompile(`^[A-Za-z0-9_~-][A-Za-z0-9._~-]*$`)
)

// Credential headers the host cannot let a vendor set.
var forbiddenCredentialHeaders = []string{"host", "connection", "content-length", "transfer-encoding", "te", "trailer", "upgrade", "cookie"}

// ParseManifest decodes and validates manifest.json.
func ParseManifest(data []byte) (*Manifest, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadManifest, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the JSON object", ErrBadManifest)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Validate checks every field; the error joins one ErrBadManifest error per problem.
func (m *Manifest) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%w: "+format, append([]any{ErrBadManifest}, args...)...))
	}
	if !namePattern.MatchString(m.Name) {
		bad("name %q: want lowercase letters, digits and dashes (1-64, starting with a letter)", m.Name)
	}
	if m.Version == "" || len(m.Version) > 64 || strings.ContainsAny(m.Version, " \t\r\n") {
		bad("version %q: want 1-64 characters without spaces", m.Version)
	}
	if strings.TrimSpace(m.Vendor) == "" || len(m.Vendor) > 200 {
		bad("vendor: want 1-200 characters")
	}
	if m.World != World && m.World != WorldWithHooks {
		bad("world %q: the host supports %s and %s", m.World, World, WorldWithHooks)
	}
	if m.Format != "" && m.Format != FormatComponent && m.Format != FormatExtism {
		bad("format %q: want %s or %s", m.Format, FormatComponent, FormatExtism)
	}
	if !hexSHA256.MatchString(m.Component.SHA256) {
		bad("component.sha256 %q: want 64 lowercase hex digits", m.Component.SHA256)
	}
	if len(m.Egress.Schemes) == 0 || len(m.Egress.Hosts) == 0 {
		bad("egress: needs at least one scheme and one host")
	}
	for _, s := range m.Egress.Schemes {
		if s != "https" && s != "http" {
			bad("egress.schemes: %q is not https or http", s)
		}
	}
	for _, h := range m.Egress.Hosts {
		if !hostPattern.MatchString(h) {
			bad("egress.hosts: %q is not a lowercase host name or IP with an optional port", h)
		}
	}
	names, headers := map[string]bool{}, map[string]bool{}
	for i, c := range m.Credentials {
		switch {
		case !namePattern.MatchString(c.Name) || names[c.Name]:
			bad("credentials[%d].name %q: want a unique lowercase name", i, c.Name)
		case !tokenPattern.MatchString(c.Header) || headers[strings.ToLower(c.Header)] ||
			slices.Contains(forbiddenCredentialHeaders, strings.ToLower(c.Header)):
			bad("credentials[%d].header %q: want a unique header name the transport does not manage", i, c.Header)
		case strings.Count(c.Template, "{secret}") != 1 || strings.ContainsAny(c.Template, "\r\n\x00"):
			bad("credentials[%d].template %q: want one line with {secret} exactly once", i, c.Template)
		}
		names[c.Name], headers[strings.ToLower(c.Header)] = true, true
	}
	if len(m.Resources) == 0 {
		bad("resources: needs at least one resource kind")
	}
	kinds := map[string]bool{}
	for i, r := range m.Resources {
		if !namePattern.MatchString(r.Kind) || kinds[r.Kind] {
			bad("resources[%d].kind %q: want a unique lowercase name", i, r.Kind)
		}
		kinds[r.Kind] = true
		if err := m.checkResource(r); err != nil {
			bad("resources[%d] (%s): %v", i, r.Kind, err)
		}
	}
	tags := map[string]bool{}
	for _, t := range m.AutoApprovable {
		if !namePattern.MatchString(t) || tags[t] {
			bad("autoApprovable: %q is not a unique action kind tag", t)
		}
		tags[t] = true
	}
	if m.OAuth != nil {
		m.validateOAuth(bad)
	}
	m.validateHooks(bad)
	if s := m.Session; s != nil {
		if len(s.Methods) == 0 || len(s.Methods) > maxSessionMethods {
			bad("session.methods: want 1 to %d method names", maxSessionMethods)
		}
		seen := map[string]bool{}
		for _, name := range s.Methods {
			if !identPattern.MatchString(name) || seen[name] {
				bad("session.methods: %q is not a unique JavaScript identifier (at most 64 characters)", name)
			}
			seen[name] = true
		}
		if s.Type != "" && !identPattern.MatchString(s.Type) {
			bad("session.type %q: want a TypeScript interface name", s.Type)
		}
	}
	return errors.Join(errs...)
}

// PackageFormat returns Format, or FormatComponent when it is empty.
func (m *Manifest) PackageFormat() string {
	if m.Format == "" {
		return FormatComponent
	}
	return m.Format
}

// pattern is a parsed URL pattern: scheme and canonical host, then path segments, where a
// segment starting with ':' is a parameter.
type pattern struct {
	scheme, host string
	segs         []string
}

func parsePattern(s string) (*pattern, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if !u.IsAbs() || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return nil, fmt.Errorf("%q: want scheme://host/path without user, query or fragment", s)
	}
	p := &pattern{scheme: u.Scheme, host: outboundhttp.CanonicalHost(u.Scheme, u.Host)}
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	if path == "" {
		return p, nil
	}
	for _, seg := range strings.Split(path, "/") {
		name, isParam := strings.CutPrefix(seg, ":")
		if isParam && !namePattern.MatchString(name) || !isParam && !paramValue.MatchString(seg) {
			return nil, fmt.Errorf("%q: path segment %q is neither a plain literal nor :name", s, seg)
		}
		p.segs = append(p.segs, seg)
	}
	return p, nil
}

func (p *pattern) params() []string {
	var out []string
	for _, s := range p.segs {
		if name, ok := strings.CutPrefix(s, ":"); ok {
			out = append(out, name)
		}
	}
	return out
}

// match returns the parameters of u, or false.
func (p *pattern) match(u *url.URL) (map[string]string, bool) {
	if u.Scheme != p.scheme || outboundhttp.CanonicalHost(u.Scheme, u.Host) != p.host {
		return nil, false
	}
	path := strings.TrimPrefix(u.EscapedPath(), "/")
	var segs []string
	if path != "" {
		segs = strings.Split(path, "/")
	}
	if len(segs) != len(p.segs) {
		return nil, false
	}
	params := map[string]string{}
	for i, s := range p.segs {
		if !paramValue.MatchString(segs[i]) {
			return nil, false
		}
		if name, ok := strings.CutPrefix(s, ":"); ok {
			params[name] = segs[i]
		} else if s != segs[i] {
			return nil, false
		}
	}
	return params, true
}

// expand fills p's parameters into a canonical scheme://host/path prefix.
func (p *pattern) expand(params map[string]string) string {
	var b strings.Builder
	b.WriteString(p.scheme + "://" + p.host)
	for _, s := range p.segs {
		b.WriteByte('/')
		if name, ok := strings.CutPrefix(s, ":"); ok {
			s = params[name]
		}
		b.WriteString(s)
	}
	return b.String()
}

func (m *Manifest) checkResource(r ResourcePattern) error {
	rp, err := parsePattern(r.URLPattern)
	if err != nil {
		return fmt.Errorf("urlPattern %w", err)
	}
	if len(r.Egress) == 0 {
		return errors.New("egress: needs at least one URL template")
	}
	for _, e := range r.Egress {
		ep, err := parsePattern(e)
		if err != nil {
			return fmt.Errorf("egress %w", err)
		}
		if !slices.Contains(m.Egress.Schemes, ep.scheme) {
			return fmt.Errorf("egress %q: scheme %s is not in egress.schemes", e, ep.scheme)
		}
		if !slices.ContainsFunc(m.Egress.Hosts, func(h string) bool { return outboundhttp.CanonicalHost(ep.scheme, h) == ep.host }) {
			return fmt.Errorf("egress %q: host %s is not in egress.hosts", e, ep.host)
		}
		for _, name := range ep.params() {
			if !slices.Contains(rp.params(), name) {
				return fmt.Errorf("egress %q: parameter :%s is not in urlPattern", e, name)
			}
		}
	}
	return nil
}

// Grant is what a granted resource URL allows, per the manifest.
type Grant struct {
	// Kind is the resource kind the URL matched.
	Kind string
	// Prefixes are the canonical URL prefixes requests for the resource may use.
	Prefixes []string
}

// GrantFor matches a resource URL against the manifest's resource patterns and returns the
// egress prefixes it allows. A URL that matches no pattern is refused.
func (m *Manifest) GrantFor(resourceURL string) (*Grant, error) {
	u, err := url.Parse(resourceURL)
	if err != nil {
		return nil, fmt.Errorf("resource URL: %w", err)
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("resource URL %q: no user, query or fragment allowed", resourceURL)
	}
	for _, r := range m.Resources {
		rp, err := parsePattern(r.URLPattern)
		if err != nil {
			return nil, fmt.Errorf("manifest resource %s: %w", r.Kind, err) // Validate ran: unreachable for opened packages
		}
		params, ok := rp.match(u)
		if !ok {
			continue
		}
		g := &Grant{Kind: r.Kind}
		for _, e := range r.Egress {
			ep, err := parsePattern(e)
			if err != nil {
				return nil, fmt.Errorf("manifest resource %s: %w", r.Kind, err)
			}
			g.Prefixes = append(g.Prefixes, ep.expand(params))
		}
		return g, nil
	}
	return nil, fmt.Errorf("resource URL %q matches none of the patterns of %s", resourceURL, m.Name)
}
