package auth

import (
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
// password hash) is reserved first, counted as a failure until it succeeds, so that parallel
// attempts count as they start. Memory is bounded by MaxKeys. It is safe for concurrent use.
type Limiter struct {
	cfg LimiterConfig
	now func() time.Time

	mu   sync.Mutex // guards keys
	keys map[string]*limitEntry
}

type limitEntry struct {
	failures int
	last     time.Time // of the last failure
	until    time.Time // no attempt before this
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

// Reserve starts an attempt of key: while key must wait it returns the wait and counts
// nothing; otherwise it counts the attempt as a failure at once (Succeed or Cancel take it
// back) and returns key's failures before it. Parallel attempts are thus counted as they
// start, not as they end.
func (l *Limiter) Reserve(key string) (prior int, wait time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	e := l.entry(key, now)
	if wait := waitOf(e, now); wait > 0 {
		return e.failures, wait
	}
	if e != nil {
		prior = e.failures
	}
	l.fail(key, e, now)
	return prior, 0
}

// Fail records a failed attempt of key.
func (l *Limiter) Fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	l.fail(key, l.entry(key, now), now)
}

// Cancel takes back one attempt that Reserve counted, for an attempt that neither failed nor
// succeeded (the server could not check it).
func (l *Limiter) Cancel(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.keys[key]
	if e == nil {
		return
	}
	if e.failures--; e.failures <= 0 {
		delete(l.keys, key)
		return
	}
	e.until = l.until(e)
}

// Succeed clears key.
func (l *Limiter) Succeed(key string) {
	l.mu.Lock()
	delete(l.keys, key)
	l.mu.Unlock()
}

// Len returns the number of keys tracked.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.keys)
}

// fail counts a failure of key, whose live entry is e (nil: none); l.mu is held.
func (l *Limiter) fail(key string, e *limitEntry, now time.Time) {
	if e == nil {
		if len(l.keys) >= l.cfg.MaxKeys {
			l.prune(now)
		}
		e = &limitEntry{}
		l.keys[key] = e
	}
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

func (l *Limiter) expired(e *limitEntry, now time.Time) bool {
	return !now.Before(e.until) && now.Sub(e.last) >= l.cfg.Window
}

// prune forgets expired keys and, if the map is still nearly full, arbitrary keys until a
// tenth of it is free (so that pruning is rare); l.mu is held.
func (l *Limiter) prune(now time.Time) {
	for k, e := range l.keys {
		if l.expired(e, now) {
			delete(l.keys, k)
		}
	}
	for k := range l.keys {
		if len(l.keys) < l.cfg.MaxKeys-l.cfg.MaxKeys/10 {
			break
		}
		delete(l.keys, k)
	}
}
