package capnweb

import (
	"net/netip"
	"sync"
)

// byteBudget bounds bytes that many sessions hold at once: in all (limit) and per client
// network (perAddress, see ClientNetwork), so that one client cannot take all of it (see
// Server.BatchMemory and Server.MessageMemory).
type byteBudget struct {
	limit, perAddress int64

	mu        sync.Mutex
	used      int64
	byAddress map[netip.Prefix]int64
}

// newByteBudget returns a budget of limit bytes, of which one client network may hold
// perAddress (0: a quarter of limit).
func newByteBudget(limit, perAddress int64) *byteBudget {
	if perAddress <= 0 {
		perAddress = limit / 4
	}
	return &byteBudget{limit: limit, perAddress: min(perAddress, limit), byAddress: map[netip.Prefix]int64{}}
}

// budgetShare is one client's use of a byteBudget. A nil share takes everything.
type budgetShare struct {
	b   *byteBudget
	key netip.Prefix
}

// share returns the share of b of the client at remoteAddr (an http.Request's RemoteAddr).
func (b *byteBudget) share(remoteAddr string) *budgetShare {
	return &budgetShare{b: b, key: ClientNetwork(remoteAddr)}
}

// budgetRefusal says why a reservation did not fit.
type budgetRefusal int

const (
	budgetFits    budgetRefusal = iota
	budgetAddress               // the client's network holds its share
	budgetServer                // the server holds its limit
)

// reserve takes n bytes and reports whether they fit, or why not; bytes that did not fit are
// not taken.
func (s *budgetShare) reserve(n int64) budgetRefusal {
	if s == nil {
		return budgetFits
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.used+n > b.limit:
		return budgetServer
	case b.byAddress[s.key]+n > b.perAddress:
		return budgetAddress
	}
	b.used += n
	b.byAddress[s.key] += n
	return budgetFits
}

// release gives back n reserved bytes.
func (s *budgetShare) release(n int64) {
	if s == nil || n == 0 {
		return
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byAddress[s.key] -= n; b.byAddress[s.key] <= 0 {
		delete(b.byAddress, s.key)
	}
}

// ClientNetwork is what the client at remoteAddr (an http.Request's RemoteAddr, or an IP
// address without a port) counts under in per-client bounds: an IPv4 address alone, an IPv6
// address by its /64 (one host's share). An address that is not an IP one (a test's pipe)
// counts under one shared key.
func ClientNetwork(remoteAddr string) netip.Prefix {
	a, err := netip.ParseAddr(remoteAddr)
	if err != nil {
		ap, err := netip.ParseAddrPort(remoteAddr)
		if err != nil {
			return netip.Prefix{}
		}
		a = ap.Addr()
	}
	a = a.Unmap()
	if a.Is4() {
		return netip.PrefixFrom(a, 32)
	}
	p, _ := a.Prefix(64)
	return p
}
