package kernel

import (
	"context"
	"net"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
)

// guards rate-limit credential guessing: failed logins count against the username and the
// remote address, failed signups (taken names) and authentications against the address. Past
// a free allowance each further failure doubles the wait before the next attempt.
type guards struct {
	users, addrs *auth.Limiter
}

func newGuards(now func() time.Time) guards {
	return guards{
		users: auth.NewLimiter(auth.LimiterConfig{Free: 5}, now),
		addrs: auth.NewLimiter(auth.LimiterConfig{Free: 20}, now),
	}
}

// attempt is one credential check under the guards.
type attempt struct {
	g          guards
	user, addr string // "" when not counted
}

// begin refuses the attempt (UNAUTHORIZED, saying how long to wait) while its username or
// remote address must wait.
func (g guards) begin(ctx context.Context, what, user string) (attempt, error) {
	return g.beginAt(remoteHost(ctx), what, user)
}

// beginAt is begin for a caller at addr (host without port; "" when unknown).
func (g guards) beginAt(addr, what, user string) (attempt, error) {
	at := attempt{g: g, user: user, addr: addr}
	wait := time.Duration(0)
	if at.user != "" {
		wait = g.users.Wait(at.user)
	}
	if at.addr != "" {
		wait = max(wait, g.addrs.Wait(at.addr))
	}
	if wait > 0 {
		wait = (wait + time.Second - 1).Truncate(time.Second) // whole seconds, rounded up
		return at, fail(CodeUnauthorized, "%s: too many failed attempts; try again in %v", what, wait)
	}
	return at, nil
}

// failed counts a failure against the attempt's keys.
func (at attempt) failed() {
	if at.user != "" {
		at.g.users.Fail(at.user)
	}
	if at.addr != "" {
		at.g.addrs.Fail(at.addr)
	}
}

// succeeded clears the username's failures (the address keeps its own).
func (at attempt) succeeded() {
	if at.user != "" {
		at.g.users.Succeed(at.user)
	}
}

// remoteHost is the caller's address without the port ("" when unknown).
func remoteHost(ctx context.Context) string {
	s := capnweb.SessionFrom(ctx)
	if s == nil {
		return ""
	}
	addr := s.Peer().RemoteAddr
	if host, _, err := net.SplitHostPort(addr); err == nil {
		return host
	}
	return addr
}
