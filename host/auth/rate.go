package auth

import (
	"sync"
	"time"
)

// RateConfig configures a Rate. Zero fields take the defaults named.
type RateConfig struct {
	// Every is how often a key gains one more action (6 minutes: ten an hour).
	Every time.Duration
	// Burst is the most actions a key may have saved up (10).
	Burst int
	// MaxKeys bounds the keys tracked (100,000): past it, keys whose allowance is full again
	// are pruned first, then arbitrary ones are dropped.
	MaxKeys int
}

// Rate limits how often each key (a remote address) may act, as a token bucket: a key may
// act Burst times at once, then once per Every. Memory is bounded by MaxKeys. It is safe for
// concurrent use.
type Rate struct {
	cfg RateConfig
	now func() time.Time

	mu   sync.Mutex // guards keys
	keys map[string]time.Time
}

// NewRate returns a Rate reading the time from now (time.Now when nil).
func NewRate(cfg RateConfig, now func() time.Time) *Rate {
	if cfg.Every <= 0 {
		cfg.Every = 6 * time.Minute
	}
	if cfg.Burst <= 0 {
		cfg.Burst = 10
	}
	if cfg.MaxKeys <= 0 {
		cfg.MaxKeys = 100_000
	}
	if now == nil {
		now = time.Now
	}
	return &Rate{cfg: cfg, now: now, keys: map[string]time.Time{}}
}

// Take spends one of key's actions and returns 0, or, when key has none left, returns how
// long until it has one (and spends nothing).
func (r *Rate) Take(key string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	// A key is the time at which its allowance is full again; a missing key is full.
	full, ok := r.keys[key]
	if !ok || full.Before(now) {
		full = now
	}
	next := full.Add(r.cfg.Every)
	if wait := next.Sub(now) - time.Duration(r.cfg.Burst)*r.cfg.Every; wait > 0 {
		return wait
	}
	if !ok && len(r.keys) >= r.cfg.MaxKeys {
		prune(r.keys, r.cfg.MaxKeys, func(full time.Time) bool { return !full.After(now) }, nil)
	}
	r.keys[key] = next
	return 0
}

// Refund gives key back one action it took (one that came to nothing).
func (r *Rate) Refund(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if full, ok := r.keys[key]; ok {
		r.keys[key] = full.Add(-r.cfg.Every)
	}
}

// Len returns the number of keys tracked.
func (r *Rate) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.keys)
}
