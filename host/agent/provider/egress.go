package provider

import (
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"

	"atelier/host/capability/outboundhttp"
)

// EgressOptions configure NewHTTPClient. Zero fields take the defaults.
type EgressOptions struct {
	// AllowAddrs lists "ip:port" addresses that may be dialed although they are loopback,
	// private or link-local (the admin's --model-allow-addr, e.g. 127.0.0.1:11434 for a local
	// Ollama). Each entry allows exactly that address and port.
	AllowAddrs []string
	// DialTimeout bounds connecting (default 10 s).
	DialTimeout time.Duration
	// TLSHandshakeTimeout bounds the TLS handshake (default 10 s).
	TLSHandshakeTimeout time.Duration
	// What names the endpoint in refusals (default "the model endpoint") and Flag the serve
	// flag that allows an address (default "--model-allow-addr"): other users of these rules
	// (the MCP gatekeeper) name their own.
	What, Flag string
}

// NewHTTPClient returns the HTTP client that model calls go out through, under the host's
// egress rules: every address it dials, checked after DNS on the IP actually dialed, must be
// public (outboundhttp.Public) or listed in AllowAddrs; no proxy from the environment is used
// (a proxy would dial for it); redirects are not followed (the 3xx response is returned). It
// sets no overall timeout: a reply streams for as long as it streams, and Config.IdleTimeout
// ends one that stalls. It fails when an AllowAddrs entry is not an ip:port.
func NewHTTPClient(o EgressOptions) (*http.Client, error) {
	allowed, err := allowMap(o.AllowAddrs)
	if err != nil {
		return nil, err
	}
	if o.What == "" {
		o.What = "the model endpoint"
	}
	if o.Flag == "" {
		o.Flag = "--model-allow-addr"
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.TLSHandshakeTimeout <= 0 {
		o.TLSHandshakeTimeout = 10 * time.Second
	}
	dialer := &net.Dialer{
		Timeout: o.DialTimeout,
		Control: func(_, address string, _ syscall.RawConn) error {
			return checkAddr(address, allowed, o.What, o.Flag)
		},
	}
	return &http.Client{
		Transport: &http.Transport{
			DialContext:         dialer.DialContext,
			TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
			TLSHandshakeTimeout: o.TLSHandshakeTimeout,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        64,
			MaxIdleConnsPerHost: 8,
			IdleConnTimeout:     90 * time.Second,
			// A response's head is bounded here; its body by Config.MaxReply (counted after
			// the transparent gzip decoding, so a compressed bomb stops at the bound too).
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}, nil
}

// allowMap parses the allowed "ip:port" entries.
func allowMap(addrs []string) (map[netip.AddrPort]bool, error) {
	allowed := make(map[netip.AddrPort]bool, len(addrs))
	for _, a := range addrs {
		ap, err := netip.ParseAddrPort(a)
		if err != nil {
			return nil, fmt.Errorf("provider: allowed model address %q is not an ip:port (like 127.0.0.1:11434): %w", a, err)
		}
		allowed[unmap(ap)] = true
	}
	return allowed, nil
}

// checkAddr allows address (the "ip:port" being dialed) when it is public or allowed.
func checkAddr(address string, allowed map[netip.AddrPort]bool, what, flag string) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return &egressError{fmt.Sprintf("refusing to dial %q: not an ip:port", address)}
	}
	if ap = unmap(ap); outboundhttp.Public(ap.Addr()) || allowed[ap] {
		return nil
	}
	return &egressError{fmt.Sprintf("%s's address %s is not public, so it is refused; an admin may allow it with %s %s", what, ap, flag, ap)}
}

func unmap(ap netip.AddrPort) netip.AddrPort {
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port())
}

// egressError is an address the egress rules refuse.
type egressError struct{ msg string }

func (e *egressError) Error() string { return e.msg }

// Is makes an egressError match ErrEgress.
func (e *egressError) Is(target error) bool { return target == ErrEgress }
