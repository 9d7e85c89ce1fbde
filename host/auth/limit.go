package auth

import (
	"sync"
	"time"
)

// LimiterConfig configures a Limiter. Zero fields take the defaults named.
type LimiterConfig struct {
	// Free is the number of failures a key may have without waiting (5).
	Free int
	// Base is the wait after the first failure beyond Free (1s); each further failure doubles
	// it, up to Max (5 minutes).
	Base, Max time.Duration
	// Window forgets a key whose last failure is this old and whose wait is over (15 minutes).
	Window time.Duration
	// MaxKeys bounds the keys tracked (100,000): past it, forgotten keys are pruned first,
	// then arbitrary ones are dropped.
	MaxKeys int
}

// Limiter slows down guessing. It counts the recent failures of each key (a username, a
// remote address) and, past a free allowance, makes the key wait before its next attempt,
// doubling the wait with each further failure. A success clears the key. Memory is bounded by
// MaxKeys. It is safe for concurrent use.
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
	e := l.entry(key, now)
	if e == nil || !now.Before(e.until) {
		return 0
	}
	return e.until.Sub(now)
}

// Fail records a failed attempt of key.
func (l *Limiter) Fail(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	e := l.entry(key, now)
	if e == nil {
		if len(l.keys) >= l.cfg.MaxKeys {
			l.prune(now)
		}
		e = &limitEntry{}
		l.keys[key] = e
	}
	e.failures++
	e.last = now
	if over := e.failures - l.cfg.Free; over > 0 {
		wait := l.cfg.Max
		if over <= 32 && l.cfg.Base<<(over-1) < l.cfg.Max {
			wait = l.cfg.Base << (over - 1)
		}
		e.until = now.Add(wait)
	}
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
