package gateway

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Hosts is the allow-list of the names a server answers to: a request whose Host header is not
// on it gets 421 Misdirected Request before anything else runs, and a browser page may open a
// session only when its Origin is on it. It stops DNS rebinding: a page of evil.example whose
// name is made to resolve to 127.0.0.1 sends "Host: evil.example:8787", which no loopback
// server lists. Names compare case-insensitively, without a trailing dot, IPv6 addresses in
// canonical form; a Host without a port means port 80.
type Hosts struct {
	hosts map[hostPort]bool // names answered on one port
	names map[string]bool   // names answered on every port
	// wildcard is set when the listener takes every interface and nothing but loopback names
	// was configured (see Unconfigured).
	wildcard bool
}

// HostsConfig says which names a server answers to.
type HostsConfig struct {
	// Listen is the address the server listens on (the listener's, so a ":0" port is known).
	// A loopback address adds localhost, 127.0.0.1 and [::1] with its port; a wildcard one
	// (0.0.0.0, [::]) adds those too, since it takes loopback connections; any other address
	// adds itself.
	Listen string
	// PublicURL is the URL clients use (e.g. behind a reverse proxy): its host is answered with
	// its port (the scheme's default when it names none) and without one.
	PublicURL *url.URL
	// Allowed lists further names, as "name" (any port) or "name:port".
	Allowed []string
}

// NewHosts builds the allow-list of cfg. It fails on an address or name it cannot parse,
// naming it.
func NewHosts(cfg HostsConfig) (*Hosts, error) {
	h := &Hosts{hosts: map[hostPort]bool{}, names: map[string]bool{}}
	host, port, err := net.SplitHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("listen address %q: %w", cfg.Listen, err)
	}
	ip, err := netip.ParseAddr(host)
	switch {
	case host == "" || err == nil && (ip.IsUnspecified() || ip.IsLoopback()):
		h.wildcard = !ip.IsLoopback() && cfg.PublicURL == nil && len(cfg.Allowed) == 0
		if p, err := strconv.ParseUint(port, 10, 16); err == nil && p != 0 { // else no Host could match
			for _, n := range loopbackNames {
				h.hosts[hostPort{n, uint16(p)}] = true
			}
		}
	default:
		if err := h.add(cfg.Listen); err != nil {
			return nil, fmt.Errorf("listen address: %w", err)
		}
	}
	if u := cfg.PublicURL; u != nil {
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("public URL %q: want http://HOST[:PORT] or https://HOST[:PORT]", u)
		}
		name, port, ok := split(u.Host, defaultPort(u.Scheme))
		if !ok {
			return nil, fmt.Errorf("public URL %q: bad host", u)
		}
		h.hosts[hostPort{name, port}] = true
		h.hosts[hostPort{name, 80}] = true // a proxy that keeps the Host header, which names no port
	}
	for _, a := range cfg.Allowed {
		if err := h.add(a); err != nil {
			return nil, fmt.Errorf("allowed host: %w", err)
		}
	}
	return h, nil
}

// LoopbackHosts answers localhost, 127.0.0.1 and [::1] on every port: the allow-list of a
// Gateway whose Config names none (a test server, an embedded one).
func LoopbackHosts() *Hosts {
	h := &Hosts{hosts: map[hostPort]bool{}, names: map[string]bool{}}
	for _, n := range loopbackNames {
		h.names[n] = true
	}
	return h
}

var loopbackNames = []string{"localhost", "127.0.0.1", "[::1]"}

// add adds "name" (every port) or "name:port".
func (h *Hosts) add(v string) error {
	if name, port, ok := split(v, 0); ok {
		if port == 0 {
			h.names[name] = true
		} else {
			h.hosts[hostPort{name, port}] = true
		}
		return nil
	}
	return fmt.Errorf("%q: want NAME or NAME:PORT (an IPv6 address in brackets)", v)
}

// Unconfigured reports whether the server listens on every interface but answers only the
// loopback names, since neither a public URL nor allowed hosts were given: serve warns then.
func (h *Hosts) Unconfigured() bool { return h.wildcard }

// Allows reports whether the Host header value host is on the list.
func (h *Hosts) Allows(host string) bool {
	name, port, ok := split(host, 80)
	return ok && h.answers(name, port)
}

// answers reports whether the canonical name is answered on port.
func (h *Hosts) answers(name string, port uint16) bool {
	return h.hosts[hostPort{name, port}] || h.names[name]
}

// CheckOrigin is the gateway's Cap'n Web origin check: a request without an Origin header (not
// from a browser page) passes, and a page passes when its origin is http or https on a host
// of the list. The request's own Host header plays no part.
func (h *Hosts) CheckOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	name, port, ok := split(u.Host, defaultPort(u.Scheme))
	return ok && h.answers(name, port)
}

// Wrap returns next behind the allow-list: a request for a host not on it gets 421
// Misdirected Request with a one-line plain-text body naming the flag that allows it.
func (h *Hosts) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !h.Allows(r.Host) {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusMisdirectedRequest)
			fmt.Fprintf(w, "this server does not answer for host %q: start atelier serve with --allowed-host NAME[:PORT] (or --public-url URL) to allow it\n", r.Host)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// hostPort is a canonical name (see split) and a port.
type hostPort struct {
	name string
	port uint16
}

// split parses a Host value into a canonical name (lowercase, no trailing dot, an IPv6
// address bracketed in canonical form) and a port, defaultPort when it names none (0 only
// then: a named port 0 is refused).
func split(hostport string, defaultPort uint16) (name string, port uint16, ok bool) {
	hostport = strings.ToLower(hostport) // no copy when already lowercase
	name, port = hostport, defaultPort
	if i := strings.LastIndexByte(hostport, ':'); i >= 0 && !strings.HasSuffix(hostport, "]") {
		n, err := strconv.ParseUint(hostport[i+1:], 10, 16)
		if err != nil || n == 0 {
			return "", 0, false
		}
		name, port = hostport[:i], uint16(n)
	}
	if strings.HasPrefix(name, "[") {
		ip, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(name, "["), "]"))
		if err != nil || !strings.HasSuffix(name, "]") || !ip.Is6() {
			return "", 0, false
		}
		if s := ip.String(); len(s) != len(name)-2 || s != name[1:len(name)-1] {
			name = "[" + s + "]" // not canonical yet
		}
		return name, port, true
	}
	name = strings.TrimSuffix(name, ".")
	if name == "" || strings.ContainsAny(name, "[]:/@ \t") {
		return "", 0, false
	}
	return name, port, true
}

// defaultPort is the port of an http or https URL that names none.
func defaultPort(scheme string) uint16 {
	if scheme == "https" {
		return 443
	}
	return 80
}
