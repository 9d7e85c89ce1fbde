package gateway

import (
	"net/http"
	"net/netip"
	"strings"
)

// TrustedProxy says where reverse proxies in front of the server pass on the client's
// address. Behind a proxy every request comes from the proxy's address, so the login limits
// (docs/security.md, "Login limits") would count all clients as one; with a TrustedProxy the
// gateway takes the client's address from the header instead, for requests from the proxies
// only (from anyone else the header could be forged).
type TrustedProxy struct {
	// Header holds the client's address, e.g. "X-Forwarded-For" (a comma-separated list each
	// proxy appends to) or "X-Real-IP"; empty: the connection's address is the client's.
	Header string
	// Proxies are the addresses of the trusted proxies (nil: loopback only).
	Proxies []netip.Prefix
}

// loopback is the default TrustedProxy.Proxies.
var loopback = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}

// wrap returns h seeing, in each request from a trusted proxy, the client's address from the
// header as the request's RemoteAddr (port 0), so that every edge (Cap'n Web sessions, MCP,
// /metrics) counts the client's address. Without a header it returns h.
func (tp TrustedProxy) wrap(h http.Handler) http.Handler {
	if tp.Header == "" {
		return h
	}
	if tp.Proxies == nil {
		tp.Proxies = loopback
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if client, ok := tp.clientAddr(r); ok {
			r = r.WithContext(r.Context()) // a copy: the server's request stays as it came
			r.RemoteAddr = netip.AddrPortFrom(client, 0).String()
		}
		h.ServeHTTP(w, r)
	})
}

// clientAddr is the client's address that a trusted proxy passed on in r's header: walking
// the header's list from the right (the entry the nearest proxy added), the first address
// that is not itself a trusted proxy, or the leftmost when all are. Entries left of it can
// be forged by the client. It reports false when r does not come from a trusted proxy or the
// header holds no address.
func (tp TrustedProxy) clientAddr(r *http.Request) (netip.Addr, bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !tp.trusts(peer.Addr()) {
		return netip.Addr{}, false
	}
	// The entries are walked from the right in place, without copying the header, and the
	// walk stops at the first entry that is not a trusted proxy's: a long forged list costs
	// nothing more.
	var client netip.Addr
	values := r.Header.Values(tp.Header)
	for i := len(values) - 1; i >= 0; i-- {
		for v := values[i]; ; {
			j := strings.LastIndexByte(v, ',')
			a, ok := parseAddr(v[j+1:])
			if !ok {
				return client, client.IsValid()
			}
			if client = a; !tp.trusts(a) {
				return client, true
			}
			if j < 0 {
				break
			}
			v = v[:j]
		}
	}
	return client, client.IsValid()
}

// trusts reports whether a is one of the trusted proxies.
func (tp TrustedProxy) trusts(a netip.Addr) bool {
	a = a.Unmap()
	for _, p := range tp.Proxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// parseAddr parses one entry of a forwarding header: an IP address, or IP:port.
func parseAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}
