package kernel

import (
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"atelier/host/capability/outboundhttp"
)

// modelRefusal says why the agent's egress will refuse its requests to baseURL: its host is a
// literal address (or "localhost") that is not public and not in Config.ModelAllowAddrs. It is
// "" otherwise; a host name is checked when a request dials it, on the address it resolves to.
func (k *Kernel) modelRefusal(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil {
		return ""
	}
	host := u.Hostname()
	addr, err := netip.ParseAddr(host)
	if strings.EqualFold(host, "localhost") {
		addr, err = netip.MustParseAddr("127.0.0.1"), nil
	}
	if err != nil || outboundhttp.Public(addr) {
		return ""
	}
	port := 443
	if u.Scheme == "http" {
		port = 80
	}
	if p, err := strconv.ParseUint(u.Port(), 10, 16); err == nil {
		port = int(p)
	}
	ap := netip.AddrPortFrom(addr.Unmap(), uint16(port))
	allowed := slices.ContainsFunc(k.cfg.ModelAllowAddrs, func(a string) bool {
		b, err := netip.ParseAddrPort(a)
		return err == nil && netip.AddrPortFrom(b.Addr().Unmap(), b.Port()) == ap
	})
	if allowed {
		return ""
	}
	return fmt.Sprintf("the server refuses the agent's requests to %s, which is not a public address, until the admin allows it with `atelier serve --model-allow-addr %s`", ap, ap)
}
