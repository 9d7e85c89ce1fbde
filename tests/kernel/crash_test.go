package kernel_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"atelier/sdk/guesttest"
)

const (
	// crashGadgets is the number of counters a burst increments; crashWorkers sessions call
	// them, crashWorkers/crashGadgets per counter, so calls to one counter queue up.
	crashGadgets = 4
	crashWorkers = 12
)

func counterName(i int) string { return fmt.Sprintf("counter-%d", i) }

// TestCrashSafety SIGKILLs `atelier serve` in the middle of a burst of increment(1) calls (and
// of gadget creations), at different moments, and restarts it on the same data file each time:
// the file must open, every acknowledged increment and gadget must be there, and nothing may
// appear that was never sent. Then it stops the server with SIGTERM during a burst and once more
// when idle (where the counts must be exact).
func TestCrashSafety(t *testing.T) {
	bin := atelierBinary(t)
	code := guesttest.Bytes(t, counterGo)
	data := filepath.Join(t.TempDir(), "atelier.db")
	srv := startServe(t, bin, data)
	acc := newAccount(t, srv.URL, "crash")
	setup := mustDial(t, srv.URL)
	for i := range crashGadgets {
		acc.createGadget(t, setup, counterName(i), code)
	}
	bp := mustString(t, "publishBlueprint", acc.workspaceOn(setup).Call(bg, "publishBlueprint", counterName(0), "counter", "crash test"))
	base := make([]uint64, crashGadgets)

	// Kill after this many acknowledged calls (the first kill lands while the instances load).
	for round, after := range []int64{1, 40, 250, 900} {
		what := fmt.Sprintf("SIGKILL %d (after %d acks)", round+1, after)
		b := startBurst(t, srv.URL, acc, base, bp, fmt.Sprintf("extra-%d-", round))
		b.waitAcked(after)
		b.killed.Store(true)
		srv.Kill(t)
		b.wait()
		srv = startServe(t, bin, data)
		base = b.check(t, what, readCounts(t, srv.URL, acc))
		b.checkCreated(t, what, srv.URL, acc)
	}

	// SIGTERM during a burst: a clean exit, and the same guarantees.
	b := startBurst(t, srv.URL, acc, base, bp, "extra-term-")
	b.waitAcked(300)
	b.killed.Store(true)
	srv.Terminate(t)
	b.wait()
	srv = startServe(t, bin, data)
	base = b.check(t, "SIGTERM during a burst", readCounts(t, srv.URL, acc))
	b.checkCreated(t, "SIGTERM during a burst", srv.URL, acc)

	// SIGTERM when idle: every call was acknowledged, so the counts are exact.
	s := mustDial(t, srv.URL)
	const n = 25
	for i := range crashGadgets {
		conn := mustStub(t, "connect", acc.connect(s, counterName(i)))
		for range n {
			must(t, "increment", conn.Call(bg, "increment", 1))
		}
	}
	srv.Terminate(t)
	srv = startServe(t, bin, data)
	got := readCounts(t, srv.URL, acc)
	for i := range crashGadgets {
		if got[i] != base[i]+n {
			t.Errorf("SIGTERM when idle: %s = %d after restart, want exactly %d", counterName(i), got[i], base[i]+n)
		}
	}
	srv.Terminate(t)
}

// readCounts returns every counter's value, read with get() on a fresh session.
func readCounts(t *testing.T, url string, acc account) []uint64 {
	t.Helper()
	s := mustDial(t, url)
	if got := must(t, "ping after restart", s.root.Call(bg, "ping")); got != "pong" {
		t.Fatalf("ping after restart = %v, want pong", got)
	}
	out := make([]uint64, crashGadgets)
	for i := range out {
		v := must(t, "get "+counterName(i), acc.connect(s, counterName(i)).Call(bg, "get"))
		n, err := count(v)
		if err != nil {
			t.Fatalf("get %s after restart: %v", counterName(i), err)
		}
		out[i] = n
	}
	return out
}

// burst is crashWorkers sessions calling increment(1) until their session breaks, and one more
// creating gadgets from a blueprint. Per counter it records how many calls were sent and how
// many were acknowledged, and every value the acknowledged calls returned; of the creations,
// how many were sent and the names acknowledged.
type burst struct {
	base []uint64

	killed  atomic.Bool // set just before the server is stopped: errors are expected from then on
	total   atomic.Int64
	target  atomic.Int64
	reached chan struct{}
	once    sync.Once
	wg      sync.WaitGroup

	mu       sync.Mutex
	sent     []uint64
	acked    []uint64
	returned [][]uint64
	failures []error // errors before the stop

	prefix       string // of the names of the gadgets the burst creates
	createsSent  int
	createsAcked []string
}

// startBurst connects every worker (before any call) and starts them; the creator creates
// gadgets prefix0, prefix1, ... from blueprint bp.
func startBurst(t *testing.T, url string, acc account, base []uint64, bp, prefix string) *burst {
	t.Helper()
	b := &burst{base: base, reached: make(chan struct{}), prefix: prefix,
		sent: make([]uint64, crashGadgets), acked: make([]uint64, crashGadgets), returned: make([][]uint64, crashGadgets)}
	b.target.Store(-1)
	ws := mustStub(t, "openWorkspace", acc.workspaceOn(mustDial(t, url)))
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		for i := 0; ; i++ {
			name := fmt.Sprintf("%s%d", prefix, i)
			b.mu.Lock()
			b.createsSent++
			b.mu.Unlock()
			if _, err := await(ws.Call(bg, "createGadgetFromBlueprint", bp, name).Call(bg, "info")); err != nil {
				if !b.killed.Load() {
					b.fail(fmt.Errorf("createGadgetFromBlueprint %s before the stop: %w", name, err))
				}
				return
			}
			b.mu.Lock()
			b.createsAcked = append(b.createsAcked, name)
			b.mu.Unlock()
		}
	}()
	for w := range crashWorkers {
		g := w % crashGadgets
		s := mustDial(t, url)
		conn := mustStub(t, "connect", acc.connect(s, counterName(g)))
		b.wg.Add(1)
		go func() {
			defer b.wg.Done()
			for {
				b.mu.Lock()
				b.sent[g]++
				b.mu.Unlock()
				v, err := await(conn.Call(bg, "increment", 1))
				var n uint64
				if err == nil {
					n, err = count(v)
				}
				if err != nil {
					if !b.killed.Load() {
						b.fail(fmt.Errorf("%s: increment before the stop: %w", counterName(g), err))
					}
					return
				}
				b.mu.Lock()
				b.acked[g]++
				b.returned[g] = append(b.returned[g], n)
				b.mu.Unlock()
				if b.total.Add(1) == b.target.Load() {
					b.once.Do(func() { close(b.reached) })
				}
			}
		}()
	}
	return b
}

func (b *burst) fail(err error) {
	b.mu.Lock()
	b.failures = append(b.failures, err)
	b.mu.Unlock()
	b.once.Do(func() { close(b.reached) })
}

// waitAcked returns once n calls were acknowledged (or a call failed).
func (b *burst) waitAcked(n int64) {
	b.target.Store(n)
	if b.total.Load() >= n {
		b.once.Do(func() { close(b.reached) })
	}
	<-b.reached
}

// wait waits for every worker to stop (their sessions break when the server goes).
func (b *burst) wait() { b.wg.Wait() }

// check compares the counts read after the restart with what the burst saw and returns them.
func (b *burst) check(t *testing.T, what string, got []uint64) []uint64 {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, err := range b.failures {
		t.Errorf("%s: %v", what, err)
	}
	for g := range crashGadgets {
		name := counterName(g)
		lo, hi := b.base[g]+b.acked[g], b.base[g]+b.sent[g]
		if got[g] < lo || got[g] > hi {
			t.Errorf("%s: %s = %d after restart, want %d (before) + between %d (acknowledged) and %d (sent)",
				what, name, got[g], b.base[g], b.acked[g], b.sent[g])
		}
		rs := slices.Sorted(slices.Values(b.returned[g]))
		for i, r := range rs {
			if r <= b.base[g] || r > got[g] || i > 0 && rs[i-1] == r {
				t.Errorf("%s: %s: an acknowledged increment returned %d: want it unique and in (%d, %d]", what, name, r, b.base[g], got[g])
				break
			}
		}
	}
	t.Logf("%s: before %v, sent %v, acknowledged %v, after restart %v", what, b.base, b.sent, b.acked, got)
	return got
}

// checkCreated checks that every acknowledged creation survived the restart (and its gadget
// answers), and that no more gadgets appeared than creations were sent.
func (b *burst) checkCreated(t *testing.T, what, url string, acc account) {
	t.Helper()
	s := mustDial(t, url)
	list, _ := must(t, "listGadgets", acc.workspaceOn(s).Call(bg, "listGadgets")).([]any)
	present := map[string]bool{}
	for _, g := range list {
		name, _ := g.(map[string]any)["name"].(string)
		if strings.HasPrefix(name, b.prefix) {
			present[name] = true
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, name := range b.createsAcked {
		if !present[name] {
			t.Errorf("%s: gadget %s was acknowledged but is gone after the restart", what, name)
		}
	}
	if len(present) > b.createsSent {
		t.Errorf("%s: %d gadgets %s* after the restart, but only %d creations were sent", what, len(present), b.prefix, b.createsSent)
	}
	if n := len(b.createsAcked); n > 0 {
		last := b.createsAcked[n-1]
		if v := must(t, "get "+last, acc.connect(s, last).Call(bg, "get")); v != float64(0) {
			t.Errorf("%s: the new gadget %s has count %v, want 0", what, last, v)
		}
	}
	t.Logf("%s: creations sent %d, acknowledged %d, present %d", what, b.createsSent, len(b.createsAcked), len(present))
}
