package kernel

import (
	"context"
	"net"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
)

// guards rate-limit credential guessing and signups (docs/security.md, "Login limits"):
//   - pairs count failed password checks per (username, address): 5 free, then a wait that
//     doubles with each further failure;
//   - accounts count them per username from anywhere: 20 free, then a doubling wait that
//     holds back only the addresses that have failed for that username, so that guesses from
//     one address never lock the owner out at another;
//   - addrs count failed token checks per address: 20 free, then bad tokens wait; a valid
//     token never does;
//   - signups allow each address a burst of signups, then one per interval.
//
// Password checks are keyed by the username as typed, so that an unknown username is limited
// exactly like an existing one.
type guards struct {
	pairs, accounts, addrs *auth.Limiter
	signups                *auth.Rate
}

func newGuards(cfg Config) guards {
	return guards{
		pairs:    auth.NewLimiter(auth.LimiterConfig{Free: 5}, cfg.Now),
		accounts: auth.NewLimiter(auth.LimiterConfig{Free: 20}, cfg.Now),
		addrs:    auth.NewLimiter(auth.LimiterConfig{Free: 20}, cfg.Now),
		signups:  auth.NewRate(auth.RateConfig{Every: cfg.SignupEvery, Burst: cfg.SignupBurst}, cfg.Now),
	}
}

// attempt is one password check under the guards.
type attempt struct {
	g                guards
	user, addr, pair string // addr: the caller's, "" when unknown
}

// begin starts a password check of user's account by the caller, or refuses it (UNAUTHORIZED,
// saying how long to wait) while the caller's (user, address) pair must wait, or, once the
// pair has failed before, while the account must wait. Checks of the pair in progress count
// against its free allowance; one that finds it taken waits for their outcome first.
func (g guards) begin(ctx context.Context, what, user string) (attempt, error) {
	addr := remoteHost(ctx)
	at := attempt{g: g, user: user, addr: addr, pair: user + " " + addr} // usernames have no spaces
	prior, wait, err := g.pairs.Reserve(ctx, at.pair)
	if err != nil {
		return attempt{}, wrapErr(err, "%s", what)
	}
	if wait == 0 && prior > 0 {
		if wait = g.accounts.Wait(user); wait > 0 {
			g.pairs.Cancel(at.pair)
		}
	}
	if wait > 0 {
		return attempt{}, tooMany(what, wait)
	}
	return at, nil
}

// failed counts the failure against the pair and the account.
func (at attempt) failed() {
	at.g.pairs.Failed(at.pair)
	at.g.accounts.Fail(at.user)
}

// succeeded clears the pair's failures (the account's, from anywhere, stay counted).
func (at attempt) succeeded() { at.g.pairs.Succeed(at.pair) }

// cancel ends an attempt the server could not check, counting nothing.
func (at attempt) cancel() { at.g.pairs.Cancel(at.pair) }

// badToken counts a refused token (err) against addr ("" when unknown: not counted) and
// returns err, or, while addr must wait, the wait.
func (g guards) badToken(addr string, err error) error {
	if addr == "" {
		return err
	}
	if wait := g.addrs.Wait(addr); wait > 0 {
		return tooMany("authenticate", wait)
	}
	g.addrs.Fail(addr)
	return err
}

// signup spends one of the caller's signups, or refuses (UNAVAILABLE, saying how long to
// wait) when its address has none left.
func (g guards) signup(ctx context.Context) error {
	addr := remoteHost(ctx)
	if addr == "" {
		return nil
	}
	if wait := g.signups.Take(addr); wait > 0 {
		return fail(CodeUnavailable, "signup: too many signups from your address; try again in %v", wholeSeconds(wait))
	}
	return nil
}

// refundSignup gives the caller's address back the signup it spent on a signup that the
// server could not make (too busy to hash its password).
func (g guards) refundSignup(ctx context.Context) {
	if addr := remoteHost(ctx); addr != "" {
		g.signups.Refund(addr)
	}
}

// tooMany is the refusal of an attempt that must wait.
func tooMany(what string, wait time.Duration) error {
	return fail(CodeUnauthorized, "%s: too many failed attempts; try again in %v", what, wholeSeconds(wait))
}

// wholeSeconds rounds d up to whole seconds.
func wholeSeconds(d time.Duration) time.Duration {
	return (d + time.Second - 1).Truncate(time.Second)
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
