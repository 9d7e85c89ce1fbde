// Package membudget bounds what requests of many clients hold at once (bytes of memory, or
// places for work): a Budget has a limit in all and a share per client network
// (ClientNetwork), so that no single client can take all of it from the others. Bytes are
// reserved as they arrive (ReadAll, ReadBody), never from what a client announces.
package membudget

import (
	"io"
	"net/netip"
	"sync"
)

// Budget is a number of bytes that many clients' requests hold at once: in all (its limit)
// and per client network (its per-address share).
type Budget struct {
	limit, perAddress int64

	mu        sync.Mutex
	used      int64
	byAddress map[netip.Prefix]int64
}

// New returns a budget of limit bytes, of which one client network may hold perAddress (0: a
// quarter of limit).
func New(limit, perAddress int64) *Budget {
	if perAddress <= 0 {
		perAddress = limit / 4
	}
	return &Budget{limit: limit, perAddress: min(perAddress, limit), byAddress: map[netip.Prefix]int64{}}
}

// Share is one client's use of a Budget. A nil Share takes everything.
type Share struct {
	b     *Budget
	key   netip.Prefix
	inAll bool // bounded by the limit in all only (SharedShare)
}

// Share returns the share of b of the client at remoteAddr (an http.Request's RemoteAddr).
func (b *Budget) Share(remoteAddr string) *Share {
	return &Share{b: b, key: ClientNetwork(remoteAddr)}
}

// SharedShare returns a share of b bounded by its limit in all only, for an address that many
// clients share (a trusted reverse proxy's).
func (b *Budget) SharedShare() *Share { return &Share{b: b, inAll: true} }

// Refusal says why a reservation did not fit.
type Refusal int

// The outcomes of Share.Reserve.
const (
	Fits    Refusal = iota // the bytes are reserved
	Address                // the client's network holds its share
	Server                 // the budget holds its limit
)

// Reserve takes n bytes and reports whether they fit, or why not; bytes that did not fit are
// not taken. The limit in all is checked first.
func (s *Share) Reserve(n int64) Refusal {
	if s == nil {
		return Fits
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	switch {
	case b.used+n > b.limit:
		return Server
	case !s.inAll && b.byAddress[s.key]+n > b.perAddress:
		return Address
	}
	b.used += n
	if !s.inAll {
		b.byAddress[s.key] += n
	}
	return Fits
}

// Release gives back n reserved bytes.
func (s *Share) Release(n int64) {
	if s == nil || n == 0 {
		return
	}
	b := s.b
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if s.inAll {
		return
	}
	if b.byAddress[s.key] -= n; b.byAddress[s.key] <= 0 {
		delete(b.byAddress, s.key)
	}
}

// RefusedError is ReadAll's error when the body did not fit in the share.
type RefusedError struct{ Refusal Refusal }

func (e *RefusedError) Error() string {
	if e.Refusal == Address {
		return "the body does not fit in the memory the server gives one client address"
	}
	return "the body does not fit in the memory the server gives such requests"
}

// chunk is how much of a body is reserved and read first.
const chunk = 64 << 10

// ReadAll reads a body of at most maxBody bytes (r must fail past it, as an
// http.MaxBytesReader does), reserving its bytes in s as its buffer grows with what arrived
// (a Content-Length is not taken on trust). It returns the bytes reserved, which the caller
// releases when it is done with the body, also after an error; a body that does not fit fails
// with a *RefusedError.
func ReadAll(r io.Reader, maxBody int, s *Share) (body []byte, held int64, err error) {
	for {
		if len(body) == cap(body) {
			// Doubling, as append would, up to one byte past the largest body (to read its end).
			grow := min(max(chunk, cap(body)), maxBody+1-cap(body))
			if refused := s.Reserve(int64(grow)); refused != Fits {
				return nil, held, &RefusedError{refused}
			}
			held += int64(grow)
			body = append(make([]byte, 0, cap(body)+grow), body...)
		}
		n, err := r.Read(body[len(body):cap(body)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, held, nil
		}
		if err != nil {
			return nil, held, err
		}
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
