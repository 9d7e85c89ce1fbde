package auth

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldHasher returns a Hasher of limit slots whose hashes block until release is closed, and
// counters of the hashes started and running.
func heldHasher(limit int, wait time.Duration) (h *Hasher, release chan struct{}, started, peak *atomic.Int64) {
	release = make(chan struct{})
	started, peak = new(atomic.Int64), new(atomic.Int64)
	var running atomic.Int64
	h = NewHasher(HasherConfig{Params: TestParams, Limit: limit, Wait: wait, Hook: func() {
		started.Add(1)
		n := running.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		<-release
		running.Add(-1)
	}})
	return h, release, started, peak
}

func TestHasherBoundsHashesAndWaiters(t *testing.T) {
	h, release, started, peak := heldHasher(2, 20*time.Millisecond)
	var wg sync.WaitGroup
	var busy atomic.Int64
	for range 20 {
		wg.Go(func() {
			if _, err := h.Hash(context.Background(), "", "password"); errors.Is(err, ErrBusy) {
				busy.Add(1)
			} else if err != nil {
				t.Error(err)
			}
		})
	}
	for busy.Load() < 18 { // the 2 in slots are held; 8 wait 20 ms, 10 are refused at once
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if started.Load() != 2 || peak.Load() != 2 || busy.Load() != 18 {
		t.Fatalf("%d hashes started (at most %d at once), %d busy; want 2, 2, 18", started.Load(), peak.Load(), busy.Load())
	}
}

func TestHasherWaitEndsWithContext(t *testing.T) {
	h, release, _, _ := heldHasher(1, time.Hour)
	defer close(release)
	go h.Hash(context.Background(), "", "password")
	for len(h.slots) == 0 {
		time.Sleep(time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Verify(ctx, "", PasswordHash{}, "password"); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled wait: %v", err)
	}
}

func TestHasherVerifiesUnknownWithOneHash(t *testing.T) {
	var hashes atomic.Int64
	h := NewHasher(HasherConfig{Params: TestParams, Hook: func() { hashes.Add(1) }})
	ctx := context.Background()
	stored, err := h.Hash(ctx, "", "password")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		stored   PasswordHash
		password string
		want     bool
	}{{stored, "password", true}, {stored, "wrong", false}, {PasswordHash{}, "password", false}, {PasswordHash{}, "", false}} {
		hashes.Store(0)
		ok, err := h.Verify(ctx, "", c.stored, c.password)
		if err != nil || ok != c.want || hashes.Load() != 1 {
			t.Fatalf("Verify(%v, %q) = %v, %v with %d hashes; want %v with 1", c.stored.Key != nil, c.password, ok, err, hashes.Load(), c.want)
		}
	}
}

func TestHashLimit(t *testing.T) {
	if n := HashLimit(DefaultParams); n < 1 || n > 16 {
		t.Fatalf("HashLimit(DefaultParams) = %d, want 1 to 16", n)
	}
	if n := HashLimit(Params{Time: 1, MemoryKiB: 1 << 31, Threads: 1}); n != 1 {
		t.Fatalf("hashes of 2 TiB: limit %d, want 1", n)
	}
}

func TestHasherSharesSlotsAmongClients(t *testing.T) {
	h, release, started, _ := heldHasher(4, time.Minute)
	var wg sync.WaitGroup
	var busy atomic.Int64
	for range 10 { // one client floods: 2 (its share) run, the others are refused at once
		wg.Go(func() {
			if _, err := h.Hash(context.Background(), "198.51.100.7", "password"); errors.Is(err, ErrBusy) {
				busy.Add(1)
			}
		})
	}
	for busy.Load() < 8 || started.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	done := make(chan error, 1)
	go func() { // another client still finds a slot
		_, err := h.Verify(context.Background(), "203.0.113.9", PasswordHash{}, "password")
		done <- err
	}()
	for started.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	close(release)
	wg.Wait()
	if err := <-done; err != nil {
		t.Fatalf("the other client's check: %v", err)
	}
	if busy.Load() != 8 || started.Load() != 3 {
		t.Fatalf("%d busy, %d hashes; want 8 (past the flooding client's share of 2), 3", busy.Load(), started.Load())
	}
	if n := len(h.clients); n != 0 {
		t.Fatalf("%d clients still counted after their hashes ended", n)
	}
}
