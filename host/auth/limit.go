package auth

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// LimiterConfig configures a Limiter. Zero fields take the defaults named.
type LimiterConfig struct {
	// Free is the number of failures a key may have without waiting (5): the attempt after
	// the Free-th failure waits Base.
	Free int
	// Base is the wait after the Free-th failure (1s); each further failure doubles it, up to
	// Max (5 minutes). A wait counts from the key's last failure.
	Base, Max time.Duration
	// Window forgets a key whose last failure is this old and whose wait is over (15 minutes).
	Window time.Duration
	// MaxKeys bounds the keys tracked (100,000): past it, forgotten keys are pruned first,
	// then arbitrary ones are dropped.
	MaxKeys int
}

// Limiter slows down guessing. It counts the recent failures of each key (a username, a
// remote address) and, past a free allowance, makes the key wait before its next attempt,
// doubling the wait with each further failure. An attempt whose outcome takes time (a
// password hash) is reserved first and ended with Failed, Succeed or Cancel: attempts in
// progress take their share of the free allowance, so that parallel guesses count as they
// start, and an attempt that finds the allowance taken by attempts in progress waits for
// their outcome. A success clears the key. Memory is bounded by MaxKeys. It is safe for
// concurrent use.
type Limiter struct {
	cfg LimiterConfig
	now func() time.Time

	mu   sync.Mutex // guards keys
	keys map[string]*limitEntry
}

type limitEntry struct {
	failures int
	pending  int           // reserved attempts in progress
	last     time.Time     // of the last failure
	until    time.Time     // no attempt before this
	ended    chan struct{} // closed when an attempt in progress ends; nil: nobody waits
}

// NewLimiter returns a Limiter reading the time from now (time.Now when nil).
func NewLimiter(cfg LimiterConfig, now func() time.Time) *Limiter {
	if cfg.Free <= 0 {
		cfg.Free = 5
	}
	if cfg.Base <= 0 {
		cfg.Base = time.Second
	}
	if cfg.Max <= 0 {
		cfg.Max = 5 * time.Minute
	}
	if cfg.Window <= 0 {
		cfg.Window = 15 * time.Minute
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 100_000
	}
	if now == nil {
		now = time.Now
	}
	return &Limiter{cfg: cfg, now: now, keys: map[string]*limitEntry{}}
}

// Wait returns how long key must wait before its next attempt (0: it may try now).
func (l *Limiter) Wait(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	return waitOf(l.entry(key, now), now)
}

// Reserve starts an attempt of key and returns key's failures before it; end it with Failed,
// Succeed or Cancel. While key must wait, it returns the wait instead and starts nothing.
// Within the free allowance, attempts in progress count as failures; past it, one attempt at
// a time may run. An attempt that finds no room waits (while ctx lasts) for one in progress
// to end, then decides again.
func (l *Limiter) Reserve(ctx context.Context, key string) (prior int, wait time.Duration, err error) {
	for {
		l.mu.Lock()
		now := l.now()
		e := l.entry(key, now)
		if wait := waitOf(e, now); wait > 0 {
			prior := e.failures
			l.mu.Unlock()
			return prior, wait, nil
		}
		if e == nil {
			e = l.add(key, now)
		}
		if e.pending == 0 || e.failures+e.pending < l.cfg.Free {
			e.pending++
			prior := e.failures
			l.mu.Unlock()
			return prior, 0, nil
		}
		if e.ended == nil {
			e.ended = make(chan struct{})
		}
		ended := e.ended
		l.mu.Unlock()
		select {
		case <-ended:
		case <-ctx.Done():
			return 0, 0, fmt.Errorf("wait for the outcome of other attempts: %w", ctx.Err())
		}
	}
}

// Fail records a failed attempt of key that was not reserved.
func (l *Limiter) Fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	e := l.entry(key, now)
	if e == nil {
		e = l.add(key, now)
	}
	l.fail(e, now)
}

// Failed ends a reserved attempt of key that failed.
func (l *Limiter) Failed(key string) {
	l.end(key, func(e *limitEntry) { l.fail(e, l.now()) })
}

// Succeed ends a reserved attempt of key that succeeded: it clears key's failures.
func (l *Limiter) Succeed(key string) {
	l.end(key, func(e *limitEntry) { e.failures, e.until = 0, time.Time{} })
}

// Cancel ends a reserved attempt of key that the server could not check: it counts nothing.
func (l *Limiter) Cancel(key string) {
	l.end(key, func(*limitEntry) {})
}

// end ends a reserved attempt of key, applies outcome to its entry, wakes the attempts
// waiting for it and forgets an entry left empty.
func (l *Limiter) end(key string, outcome func(*limitEntry)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil { // dropped while full: the attempt counts for nothing
		return
	}
	e.pending = max(0, e.pending-1)
	outcome(e)
	e.wake()
	if e.pending == 0 && e.failures == 0 {
		delete(l.keys, key)
	}
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// wake wakes the attempts waiting for one in progress to end; l.mu is held.
func (e *limitEntry) wake() {
	if e.ended != nil {
		close(e.ended)
		e.ended = nil
	}
}

// add tracks a new key, pruning first when the map is full; l.mu is held.
func (l *Limiter) add(key string, now time.Time) *limitEntry {
	if len(l.keys) >= l.cfg.MaxKeys {
		prune(l.keys, l.cfg.MaxKeys, func(e *limitEntry) bool { return l.expired(e, now) },
			(*limitEntry).wake) // a dropped entry's waiters decide again, on a new entry
	}
	e := &limitEntry{}
	l.keys[key] = e
	return e
}

// fail counts a failure in e; l.mu is held.
func (l *Limiter) fail(e *limitEntry, now time.Time) {
	e.failures++
	e.last = now
	e.until = l.until(e)
}

// until is when e's wait ends: its last failure plus Base, doubled for each failure beyond
// Free, up to Max (zero within the free allowance).
func (l *Limiter) until(e *limitEntry) time.Time {
	over := e.failures - l.cfg.Free
	if over < 0 {
		return time.Time{}
	}
	wait := l.cfg.Max
	if over < 32 && l.cfg.Base<<over < l.cfg.Max {
		wait = l.cfg.Base << over
	}
	return e.last.Add(wait)
}

// waitOf is how long an entry (nil: none) must wait at now.
func waitOf(e *limitEntry, now time.Time) time.Duration {
	if e == nil || !now.Before(e.until) {
		return 0
	}
	return e.until.Sub(now)
}

// entry returns key's live entry, forgetting it when it expired; l.mu is held.
func (l *Limiter) entry(key string, now time.Time) *limitEntry {
	e := l.keys[key]
	if e != nil && l.expired(e, now) {
		delete(l.keys, key)
		return nil
	}
	return e
}

// expired reports whether e, without attempts in progress, may be forgotten.
func (l *Limiter) expired(e *limitEntry, now time.Time) bool {
	return e.pending == 0 && !now.Before(e.until) && now.Sub(e.last) >= l.cfg.Window
}

// prune bounds a map of at most max keys before a key is added: it forgets the entries that
// stale reports and, if the map is still nearly full, arbitrary ones (calling dropped, if set,
// on each) until a tenth of it is free, so that pruning is rare.
func prune[V any](m map[string]V, max int, stale func(V) bool, dropped func(V)) {
	for k, v := range m {
		if stale(v) {
			delete(m, k)
		}
	}
	for k, v := range m {
		if len(m) < max-max/10 {
			break
		}
		if dropped != nil {
			dropped(v)
		}
		delete(m, k)
	}
}
