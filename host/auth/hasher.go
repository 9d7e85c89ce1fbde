package auth

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ErrBusy is returned by a Hasher that found no free slot in time.
var ErrBusy = errors.New("the server is busy checking other passwords; try again in a few seconds")

// HasherConfig configures a Hasher. Zero fields take the defaults named.
type HasherConfig struct {
	// Params are the argon2id parameters of new hashes (DefaultParams).
	Params Params
	// Limit is the most hashes that run at once (HashLimit(Params)).
	Limit int
	// Wait is the longest a hash waits for a slot (2 s); at most 4×Limit hashes wait at once,
	// the others are refused at once.
	Wait time.Duration
	// Share is the most hashes one client (a remote address) may have running or waiting at
	// once (half the Limit, rounded up): past it its next hash is refused at once, so that one
	// client cannot take every slot from the others.
	Share int
	// Hook, if set, is called in each hash's slot just before the hash runs (tests count and
	// hold hashes with it).
	Hook func()
}

// Hasher runs every argon2id hash of a server under a concurrency limit, so that the memory
// that password checks take is bounded (Limit × Params.MemoryKiB) however many arrive at once:
// a check that finds no slot within Wait fails with ErrBusy instead of queueing without end.
// Checking a password of no stored hash (an unknown user) costs one hash, like a wrong
// password. It is safe for concurrent use.
type Hasher struct {
	cfg     HasherConfig
	slots   chan struct{} // one per running hash
	waiting chan struct{} // one per hash waiting for a slot
	dummy   PasswordHash  // checked when there is no stored hash

	mu      sync.Mutex     // guards clients
	clients map[string]int // hashes running or waiting, by client (an entry lives while its client has one)
}

// NewHasher returns a Hasher.
func NewHasher(cfg HasherConfig) *Hasher {
	if cfg.Params == (Params{}) {
		cfg.Params = DefaultParams
	}
	if cfg.Limit <= 0 {
		cfg.Limit = HashLimit(cfg.Params)
	}
	if cfg.Wait <= 0 {
		cfg.Wait = 2 * time.Second
	}
	if cfg.Share <= 0 {
		cfg.Share = (cfg.Limit + 1) / 2
	}
	dummy := PasswordHash{Params: cfg.Params, Salt: make([]byte, saltLen), Key: make([]byte, keyLen)}
	_, _ = rand.Read(dummy.Salt) // never fails (crypto/rand)
	_, _ = rand.Read(dummy.Key)
	return &Hasher{cfg: cfg, slots: make(chan struct{}, cfg.Limit), waiting: make(chan struct{}, 4*cfg.Limit), dummy: dummy, clients: map[string]int{}}
}

// Hash hashes password with a fresh salt and the Hasher's parameters, for client (a remote
// address; "" when unknown, which no share bounds).
func (h *Hasher) Hash(ctx context.Context, client, password string) (PasswordHash, error) {
	var out PasswordHash
	err := h.run(ctx, client, h.cfg.Params, func() error {
		var err error
		out, err = HashPassword(password, h.cfg.Params)
		return err
	})
	return out, err
}

// Verify reports whether password matches stored, for client (as for Hash). Without a stored
// hash (zero: an unknown user, or one without a password) it checks password against a random
// hash of the current parameters, which matches nothing, so that it costs the same one hash.
func (h *Hasher) Verify(ctx context.Context, client string, stored PasswordHash, password string) (bool, error) {
	known := len(stored.Key) > 0 && len(stored.Salt) > 0
	if !known {
		stored = h.dummy
	}
	ok := false
	err := h.run(ctx, client, stored.Params, func() error {
		ok = stored.Verify(password)
		return nil
	})
	return ok && known, err
}

// bigHash is the memory cost (KiB) from which a finished hash's memory is collected at once.
const bigHash = 1 << 10

// run runs f, a hash of parameters p, in a slot. After a big hash it collects the garbage and
// returns the freed memory to the system at once: left to the collector's pace (GOGC), the
// finished hashes' garbage could double the memory the slots take, and freed memory that
// other allocations split up could not hold the next hash.
func (h *Hasher) run(ctx context.Context, client string, p Params, f func() error) error {
	if !h.enter(client) {
		return ErrBusy
	}
	defer h.leave(client)
	if err := h.acquire(ctx); err != nil {
		return err
	}
	defer func() { <-h.slots }()
	if h.cfg.Hook != nil {
		h.cfg.Hook()
	}
	err := f()
	if p.MemoryKiB >= bigHash {
		debug.FreeOSMemory()
	}
	return err
}

// enter counts a hash of client against its Share, refusing it past the share.
func (h *Hasher) enter(client string) bool {
	if client == "" {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients[client] >= h.cfg.Share {
		return false
	}
	h.clients[client]++
	return true
}

// leave ends what enter counted.
func (h *Hasher) leave(client string) {
	if client == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.clients[client]--; h.clients[client] <= 0 {
		delete(h.clients, client)
	}
}

// acquire takes a slot, waiting at most cfg.Wait (and while ctx lasts) in a bounded queue.
func (h *Hasher) acquire(ctx context.Context) error {
	select {
	case h.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case h.waiting <- struct{}{}:
	default:
		return ErrBusy
	}
	defer func() { <-h.waiting }()
	t := time.NewTimer(h.cfg.Wait)
	defer t.Stop()
	select {
	case h.slots <- struct{}{}:
		return nil
	case <-t.C:
		return ErrBusy
	case <-ctx.Done():
		return fmt.Errorf("wait to check a password: %w", ctx.Err())
	}
}

// HashLimit is the default Limit of a Hasher for hashes of parameters p: two per CPU (a hash
// keeps two lanes busy, so more do not finish sooner), at most as many as fit in a quarter of
// the memory available now, and between 1 and 16.
func HashLimit(p Params) int {
	n := 2 * runtime.GOMAXPROCS(0)
	if avail := availableMemory(); avail > 0 && p.MemoryKiB > 0 {
		n = min(n, int(avail/4/(uint64(p.MemoryKiB)<<10)))
	}
	return max(1, min(n, 16))
}

// availableMemory is the memory available for new allocations (MemAvailable of
// /proc/meminfo), or 0 where that is unknown.
func availableMemory() uint64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "MemAvailable:"); ok {
			kib, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0
			}
			return kib << 10
		}
	}
	return 0
}
