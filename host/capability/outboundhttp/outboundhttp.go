// Package outboundhttp implements atelier:gatekeeper/outbound-http: HTTP requests that the host
// performs for a gatekeeper. A request is sent only when it passes the Grant bound to the
// instance (runtime.InstanceConfig.Bind[outboundhttp.Grant]): its scheme and host are among
// the manifest's, its URL lies under one of the granted resource's prefixes, and it sets no
// credential or hop-by-hop header. The host then adds the credential headers, dials only
// public addresses (checked on the dialed IP, after DNS), refuses redirects and bodies over
// the limits, and removes the credentials from the response before the guest sees it
// (Policy.Secrets). An instance without a binding may reach nothing. Requests are HTTP/1.1 over
// kept-alive connections, sent and awaited on the calling thread (transport.go says why).
package outboundhttp

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"atelier/capnweb/ordered"
	"atelier/host/capability/outboundhttp/internal/scrub"
	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:gatekeeper/outbound-http@0.1.0"
	Grant     = "atelier:gatekeeper/outbound-http"
)

// CredentialMarker replaces the credentials that a response reflects (Policy.Secrets).
const CredentialMarker = scrub.Marker

// Options configure the capability for the whole runtime. Zero fields take the defaults.
type Options struct {
	// MaxRequestBody is the largest request body in bytes (default 1 MiB).
	MaxRequestBody int
	// MaxResponseBody is the largest response body in bytes (default 4 MiB).
	MaxResponseBody int
	// Timeout bounds one request, connection included (default 15 s); the call's own deadline
	// wins when it is earlier.
	Timeout time.Duration
	// AllowAddrs lists "ip:port" addresses that may be dialed although they are loopback or
	// private (a local test server, a service on the operator's own network). Each entry
	// allows exactly that address and port.
	AllowAddrs []string
	// RootCAs are the certificate authorities trusted for https (default: the system's).
	RootCAs *x509.CertPool
}

func (o Options) withDefaults() Options {
	if o.MaxRequestBody <= 0 {
		o.MaxRequestBody = 1 << 20
	}
	if o.MaxResponseBody <= 0 {
		o.MaxResponseBody = 4 << 20
	}
	if o.Timeout <= 0 {
		o.Timeout = 15 * time.Second
	}
	return o
}

// Policy is what one gatekeeper instance may reach and what the host adds to its requests.
// The kernel builds it from the package manifest, the resource the user granted and the
// user's decrypted credential.
type Policy struct {
	// Schemes and Hosts are the manifest's allowed schemes ("https") and hosts ("api.example.com"
	// or "api.example.com:8443"; compared case-insensitively, default ports omitted).
	Schemes []string
	Hosts   []string
	// Prefixes are the URLs the granted resource allows, as scheme://host/path in canonical
	// form (see CanonicalHost); a request's URL without its query must equal one or continue
	// it after a "/".
	Prefixes []string
	// Headers are added to every request (the credential, e.g. Authorization: Bearer ...).
	// The guest never sees them and may not set headers of these names.
	Headers []Header
	// Secrets are the raw credential values inside Headers. A response reaches the guest only
	// after every occurrence of them and of Headers' values (and of the user:password inside a
	// Basic one), raw or encoded (scrub.Needles), is replaced in its headers and body by
	// "[credential removed by atelier]": a service that reflects the request (an echo
	// endpoint) does not hand the credential to the guest. Values under 8 bytes are left. So
	// that the body can be searched, such requests ask for no content coding
	// (Accept-Encoding: identity, whatever the guest set) and an encoded response is refused.
	Secrets []string
	// Token, when set, supplies an OAuth access token that the host adds to every request as
	// TokenHeader (its Value with "{secret}" replaced by the token), like a credential of
	// Headers: the guest may not set that header, and the token is scrubbed from responses.
	// When the server answers 401, Token is asked once for a fresh token and a request that
	// is safe to repeat (see replayable) is sent once more with it.
	Token TokenSource
	// TokenHeader is the header name and template of Token.
	TokenHeader Header
	// Scrubbed, when set, is told of each response the host removed credentials from, with
	// the request's method and URL (without query) and the number of replacements; an error
	// fails the request.
	Scrubbed func(ctx context.Context, method, url string, n int) error

	// scrub is the matcher last built of the credential values, reused while they stay the
	// same: building it takes work in proportion to the credentials' length, which a request
	// should not pay again.
	scrub atomic.Pointer[scrubMatcher]
}

// TokenSource supplies an account's current OAuth access token (Policy.Token).
type TokenSource interface {
	// Token returns the access token to send, refreshed first when it expires soon. refused,
	// when not empty, is the token the server just answered 401 to: return a fresh one, or
	// an error that says what the user must do (reconnect the account).
	Token(ctx context.Context, refused string) (string, error)
}

// scrubMatcher is a scrub matcher and the credential values it was built of.
type scrubMatcher struct {
	values []string
	m      *scrub.Matcher
}

// matcher returns the scrub matcher of p's credential values, nil when it has none.
func (p *Policy) matcher(extra ...string) *scrub.Matcher {
	values := append(p.credentialValues(), extra...)
	if c := p.scrub.Load(); c != nil && slices.Equal(c.values, values) {
		return c.m
	}
	m := scrub.New(scrub.Needles(values...))
	p.scrub.Store(&scrubMatcher{values: values, m: m})
	return m
}

// credentialValues returns the values a response is scrubbed of: Secrets, Headers' values and
// the user:password and password of a Basic one.
func (p *Policy) credentialValues() []string {
	values := slices.Clone(p.Secrets)
	for _, h := range p.Headers {
		values = append(values, h.Value)
		scheme, token, _ := strings.Cut(h.Value, " ")
		if !strings.EqualFold(scheme, "Basic") {
			continue
		}
		if pair, err := base64.StdEncoding.DecodeString(strings.TrimSpace(token)); err == nil {
			_, password, _ := strings.Cut(string(pair), ":")
			values = append(values, string(pair), password)
		}
	}
	return values
}

// Header is one header line.
type Header struct {
	Name, Value string
}

// New returns the host interface, with a Client of its own (see NewClient).
func New(opts Options) (runtime.HostInterface, error) {
	c, err := NewClient(opts)
	if err != nil {
		return runtime.HostInterface{}, err
	}
	return c.Interface(), nil
}

// Client performs gatekeeper requests under a Policy: the one implementation of the egress
// rules, used by the WIT interface (Interface) and by other package formats. It is safe for
// concurrent use.
type Client struct {
	opts      Options
	transport *transport
}

// NewClient returns a Client. It fails when an AllowAddrs entry is not an ip:port.
func NewClient(opts Options) (*Client, error) {
	o := opts.withDefaults()
	allowed := make(map[netip.AddrPort]bool)
	for _, a := range o.AllowAddrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return nil, fmt.Errorf("outbound-http: AllowAddrs entry %q: %w", a, err)
		}
		allowed[unmapAddrPort(ap)] = true
	}
	c := &Client{opts: o}
	c.transport = newTransport(o, func(network, address string, _ syscall.RawConn) error {
		return checkDial(address, allowed)
	})
	return c, nil
}

// Interface returns the WIT host interface backed by c. Each instance's Policy is its binding
// (runtime.InstanceConfig.Bind[Grant]); an instance without one may reach nothing.
func (c *Client) Interface() runtime.HostInterface {
	return runtime.HostInterface{
		Name:  Interface,
		Funcs: []runtime.HostFunc{{Name: "fetch", Func: c.fetch}},
		NewState: func(info runtime.InstanceInfo) (any, error) {
			if info.Bind == nil {
				return &Policy{}, nil
			}
			p, ok := info.Bind.(*Policy)
			if !ok {
				return nil, fmt.Errorf("outbound-http: binding is %T, want *outboundhttp.Policy", info.Bind)
			}
			return p, nil
		},
	}
}

func unmapAddrPort(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// Address ranges that are not public although netip does not classify them so.
var reserved = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64: may translate to any IPv4 address
	netip.MustParsePrefix("2001:db8::/32"),
}

// Public reports whether addr is a public unicast address.
func Public(addr netip.Addr) bool {
	a := addr.Unmap()
	if !a.IsValid() || a.IsLoopback() || a.IsPrivate() || a.IsUnspecified() || a.IsMulticast() ||
		a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() || a.IsInterfaceLocalMulticast() {
		return false
	}
	for _, p := range reserved {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// checkDial runs for every connection, on the IP:port actually dialed (after DNS).
func checkDial(address string, allowed map[netip.AddrPort]bool) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("refusing to dial %q: %w", address, err)
	}
	if ap = unmapAddrPort(ap); Public(ap.Addr()) || allowed[ap] {
		return nil
	}
	return &deniedError{fmt.Sprintf("refusing to dial %s: not a public address", ap)}
}

// deniedError is a policy refusal found while dialing.
type deniedError struct{ msg string }

func (e *deniedError) Error() string { return e.msg }

// Error kinds: the cases of the WIT error variant.
const (
	Denied   = "denied"    // the policy refused the request
	Invalid  = "invalid"   // the request is malformed
	TooLarge = "too-large" // a body exceeds the limits
	Failed   = "failed"    // the network failed or the request timed out
)

// Error is why a request was not answered. Kind is one of Denied, Invalid, TooLarge, Failed.
type Error struct {
	Kind, Message string
}

// Error implements error: the kind, then the message.
func (e *Error) Error() string { return e.Kind + ": " + e.Message }

func fail(kind, format string, args ...any) *Error {
	return &Error{Kind: kind, Message: fmt.Sprintf(format, args...)}
}

// Request is a request a guest asks the host to send. URL is absolute.
type Request struct {
	Method, URL string
	Headers     []Header
	Body        []byte
}

// Response is the answer, with the whole body.
type Response struct {
	Status  int
	Headers []Header
	Body    []byte
}

var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}

// Headers a guest may not set: the transport manages them, or they would change where or how
// the request goes.
var reservedHeaders = []string{
	"host", "connection", "content-length", "transfer-encoding", "te", "trailer", "upgrade",
	"keep-alive", "proxy-authorization", "proxy-connection", "expect",
}

// Do sends r if p allows it, with p's headers added, and returns the response. Every error
// is an *Error; none contains p's header values.
func (c *Client) Do(ctx context.Context, p *Policy, r Request) (*Response, error) {
	if !slices.Contains(methods, r.Method) {
		return nil, fail(Invalid, "method %q is not one of %s", r.Method, strings.Join(methods, ", "))
	}
	u, err := p.Check(r.URL)
	if err != nil {
		return nil, fail(Denied, "%v", err)
	}
	if len(r.Body) > c.opts.MaxRequestBody {
		return nil, fail(TooLarge, "request body of %d bytes exceeds %d", len(r.Body), c.opts.MaxRequestBody)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(r.Body))
	if err != nil {
		return nil, fail(Invalid, "%v", err)
	}
	for _, h := range r.Headers {
		if err := p.checkHeader(h.Name, h.Value); err != nil {
			return nil, err
		}
		req.Header.Add(h.Name, h.Value)
	}
	for _, h := range p.Headers {
		req.Header.Set(h.Name, h.Value)
	}
	var token string
	if p.Token != nil {
		if token, err = p.Token.Token(ctx, ""); err != nil {
			return nil, fail(Denied, "%s %s: %v", r.Method, u.Redacted(), err)
		}
	}
	resp, body, m, err := c.send(ctx, p, req, token)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && p.Token != nil {
		fresh, terr := p.Token.Token(ctx, token)
		if terr != nil {
			return nil, fail(Denied, "%s %s: the service answered 401 Unauthorized: %v", r.Method, u.Redacted(), terr)
		}
		if fresh != token && replayable(req) {
			req, err = http.NewRequestWithContext(ctx, r.Method, u.String(), bytes.NewReader(r.Body))
			if err != nil {
				return nil, fail(Invalid, "%v", err)
			}
			for _, h := range r.Headers {
				req.Header.Add(h.Name, h.Value)
			}
			for _, h := range p.Headers {
				req.Header.Set(h.Name, h.Value)
			}
			resp, body, m, err = c.send(ctx, p, req, fresh)
		}
	}
	if err != nil {
		var de *deniedError
		switch {
		case errors.As(err, &de):
			return nil, fail(Denied, "%s", de.msg)
		case errors.Is(err, errHeaderTooLarge):
			return nil, fail(TooLarge, "%s %s: %v", r.Method, u.Redacted(), err)
		}
		return nil, fail(Failed, "%s %s: %v", r.Method, u.Redacted(), err)
	}
	if loc := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && loc != "" {
		return nil, fail(Denied, "%s %s: redirect (HTTP %d) to %q refused", r.Method, u.Redacted(), resp.StatusCode, loc)
	}
	if ce := resp.Header.Get("Content-Encoding"); m != nil && ce != "" && !strings.EqualFold(ce, "identity") {
		return nil, fail(Failed, "%s %s: the response is encoded (Content-Encoding %s) although the host asked for none; it is refused because the host cannot check it for credentials", r.Method, u.Redacted(), ce)
	}
	if body.size > int64(c.opts.MaxResponseBody) {
		return nil, fail(TooLarge, "%s %s: response body exceeds %d bytes", r.Method, u.Redacted(), c.opts.MaxResponseBody)
	}
	out := &Response{Status: resp.StatusCode, Headers: make([]Header, 0, len(resp.Header)), Body: body.data}
	scrubbed := body.scrubbed
	for name, vals := range resp.Header {
		for _, v := range vals {
			v, n := m.String(v)
			scrubbed += n
			out.Headers = append(out.Headers, Header{Name: name, Value: v})
		}
	}
	if scrubbed > 0 && p.Scrubbed != nil {
		plain := *u
		plain.RawQuery, plain.ForceQuery = "", false
		if err := p.Scrubbed(ctx, r.Method, plain.String(), scrubbed); err != nil {
			return nil, fail(Failed, "%s %s: recording that credentials were removed from the response: %v", r.Method, plain.String(), err)
		}
	}
	return out, nil
}

// send adds the OAuth token (when not empty) to req, asks for no content coding when there
// is anything to scrub, and sends it, returning the matcher the body was scrubbed with.
func (c *Client) send(ctx context.Context, p *Policy, req *http.Request, token string) (*http.Response, body, *scrub.Matcher, error) {
	var m *scrub.Matcher
	if token != "" {
		value := strings.Replace(p.TokenHeader.Value, "{secret}", token, 1)
		req.Header.Set(p.TokenHeader.Name, value)
		m = p.matcher(token, value)
	} else {
		m = p.matcher()
	}
	if m != nil { // a compressed body would hide the credentials from the scrubber
		req.Header.Set("Accept-Encoding", "identity")
	}
	resp, b, err := c.transport.roundTrip(ctx, req, c.opts.MaxResponseBody, m)
	return resp, b, m, err
}

// fetch is the WIT function: it converts the request record, calls Do and converts back.
func (c *Client) fetch(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
	r := args[0].(ordered.Object) // a record, as wit.Lift makes it
	req := Request{Method: r.Value("method").(string), URL: r.Value("url").(string), Body: r.Value("body").([]byte)}
	for _, h := range r.Value("headers").([]any) {
		h := h.(ordered.Object)
		req.Headers = append(req.Headers, Header{Name: h.Value("name").(string), Value: h.Value("value").(string)})
	}
	resp, err := c.Do(ctx, call.State().(*Policy), req)
	if err != nil {
		e := err.(*Error)
		return nil, runtime.Fail(map[string]any{"tag": e.Kind, "val": e.Message})
	}
	headers := make([]any, len(resp.Headers))
	for i, h := range resp.Headers {
		headers[i] = map[string]any{"name": h.Name, "value": h.Value}
	}
	return map[string]any{"status": uint16(resp.Status), "headers": headers, "body": resp.Body}, nil
}

// checkHeader refuses malformed headers, transport headers and the credential headers.
func (p *Policy) checkHeader(name, value string) *Error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) }) >= 0 {
		return fail(Invalid, "header name %q is not a token", name)
	}
	if strings.ContainsAny(value, "\r\n\x00") {
		return fail(Invalid, "header %s: value contains CR, LF or NUL", name)
	}
	if slices.Contains(reservedHeaders, strings.ToLower(name)) {
		return fail(Denied, "header %s is set by the host", name)
	}
	for _, h := range p.Headers {
		if strings.EqualFold(h.Name, name) {
			return fail(Denied, "header %s carries the credential and is set by the host", name)
		}
	}
	if p.Token != nil && strings.EqualFold(p.TokenHeader.Name, name) {
		return fail(Denied, "header %s carries the OAuth access token and is set by the host", name)
	}
	return nil
}

// Check parses rawURL and reports whether the policy allows a request to it.
func (p *Policy) Check(rawURL string) (*url.URL, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("bad URL: %w", err)
	}
	if !u.IsAbs() || u.Opaque != "" || u.Host == "" {
		return nil, fmt.Errorf("URL %q is not absolute", rawURL)
	}
	if u.User != nil {
		return nil, fmt.Errorf("URL %q carries user information", u.Redacted())
	}
	u.Fragment, u.RawFragment = "", ""
	host := CanonicalHost(u.Scheme, u.Host)
	if !slices.Contains(p.Schemes, strings.ToLower(u.Scheme)) {
		return nil, fmt.Errorf("scheme %q is not allowed by the manifest (allowed: %s)", u.Scheme, strings.Join(p.Schemes, ", "))
	}
	if !slices.ContainsFunc(p.Hosts, func(h string) bool { return CanonicalHost(u.Scheme, h) == host }) {
		return nil, fmt.Errorf("host %q is not allowed by the manifest (allowed: %s)", u.Host, strings.Join(p.Hosts, ", "))
	}
	if err := checkPath(u.EscapedPath()); err != nil {
		return nil, fmt.Errorf("URL %q: %w", u.Redacted(), err)
	}
	target := strings.ToLower(u.Scheme) + "://" + host + u.EscapedPath()
	for _, pre := range p.Prefixes {
		if underPrefix(target, pre) {
			return u, nil
		}
	}
	return nil, fmt.Errorf("URL %q is outside the granted resource", u.Redacted())
}

// checkPath refuses paths that could step out of a prefix: dot segments, encoded slashes,
// backslashes and dots, empty segments.
func checkPath(escaped string) error {
	lower := strings.ToLower(escaped)
	for _, bad := range []string{"%2f", "%5c", "%2e", "\\", "//"} {
		if strings.Contains(lower, bad) {
			return fmt.Errorf("path contains %q", bad)
		}
	}
	for _, seg := range strings.Split(escaped, "/") {
		if seg == "." || seg == ".." {
			return fmt.Errorf("path contains a %q segment", seg)
		}
	}
	return nil
}

// underPrefix reports whether target (scheme://host/path, canonical) is prefix or below it.
func underPrefix(target, prefix string) bool {
	if !strings.HasPrefix(target, prefix) {
		return false
	}
	rest := target[len(prefix):]
	return rest == "" || strings.HasSuffix(prefix, "/") || rest[0] == '/'
}

// CanonicalHost lowercases host and drops the scheme's default port.
func CanonicalHost(scheme, host string) string {
	host = strings.ToLower(host)
	if port := defaultPort(strings.ToLower(scheme)); port != "" {
		host = strings.TrimSuffix(host, ":"+port)
	}
	return host
}

// defaultPort is the port of scheme (lowercase) when a URL names none ("" for a scheme other
// than http and https).
func defaultPort(scheme string) string {
	switch scheme {
	case "https":
		return "443"
	case "http":
		return "80"
	}
	return ""
}
