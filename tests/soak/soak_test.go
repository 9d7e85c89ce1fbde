// Package soak runs the hostile-tenant soak of docs/security.md ("A gadget", and "Quotas"):
// against one real `atelier serve`, hostile tenants run every resource attack at once (CPU
// spinners at their deadline, memory fillers at their budget, amplified results, a flood of
// sessions that never sign in, parallel logins and signups, snippet floods) while a
// well-behaved user keeps calling a gadget. Every
// well-behaved call must succeed, no acknowledged write may be lost, and the server's peak RSS
// (VmHWM) must stay under the host-wide guest memory budget plus a fixed margin. The
// well-behaved client's latency with and without the attack is printed (and reported by
// BenchmarkHostileSoak for tests/bench); nothing asserts on time.
package soak

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"atelier/capnweb"
	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/serveproc"
)

const (
	password = "correct horse battery staple"
	// hostMemory is the host-wide guest memory budget the soak sets (quota host_memory).
	hostMemory = 1 << 30
	// margin is what the server may use beyond the guest budget: its Go heap, the password
	// hashes in flight (4 x 64 MiB), compiled code and kept memories.
	margin = 1 << 30
)

var (
	// idleFor and attackFor are the phases' lengths: about a minute in all.
	idleFor   = 10 * time.Second
	attackFor = 45 * time.Second
	// tmpDir holds this run's binary and compiled-component cache.
	tmpDir string
)

func TestMain(m *testing.M) { serveproc.Main(m, "soak", &tmpDir) }

// The gadgets of the soak, as JS gadget sources.
const (
	counterJS = `export class Gadget {
  inc() { const n = (this.storage.get("n") ?? 0) + 1; this.storage.put("n", n); return n; }
  get() { return this.storage.get("n") ?? 0; }
}`
	// hostileJS spins, fills memory (kept after the call returns) and returns too much.
	hostileJS = `export class Gadget {
  spin() { for (;;) {} }
  fill(mib) { globalThis.kept = []; for (let i = 0; i < mib; i++) globalThis.kept.push(new Uint8Array(1 << 20).fill(1)); return mib; }
  big(mib) { return "x".repeat(mib << 20); }
  many(n) { return new Array(n).fill(true); }
}`
	// snippet allocates 60 MiB and returns a little.
	snippet = `export default () => { const a = []; for (let i = 0; i < 60; i++) a.push(new Uint8Array(1 << 20).fill(7)); return a.length; }`
)

// client is one session's authenticated API.
type client struct {
	s   *capnweb.Session
	api *capnweb.Stub
}

func dial(tb testing.TB, url string) *capnweb.Session {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), capnwebtests.CallTimeout)
	defer cancel()
	s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
	if err != nil {
		tb.Fatalf("dial %s: %v", url, err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// await and must are the shared test client's (tests/capnweb).
var (
	await = capnwebtests.Await
	must  = capnwebtests.Must
)

// signup makes user name and returns its authenticated API on a session of its own.
func signup(tb testing.TB, url, name string) client {
	tb.Helper()
	s := dial(tb, url)
	tok := must(tb, "signup "+name, s.Main().Call(context.Background(), "signup", name, password)).(string)
	return client{s: s, api: must(tb, "authenticate "+name, s.Main().Call(context.Background(), "authenticate", tok)).(*capnweb.Stub)}
}

// code returns the error's Cap'n Web code property ("" when it has none).
func code(err error) string {
	var e *capnweb.Error
	var refused refusedStatus
	if errors.As(err, &refused) {
		return strconv.Itoa(int(refused))
	}
	if errors.As(err, &e) {
		c, _ := e.Props["code"].(string)
		return c
	}
	return ""
}

// refusedStatus is the HTTP status of a refused WebSocket session.
type refusedStatus int

func (r refusedStatus) Error() string { return fmt.Sprintf("session refused: HTTP %d", int(r)) }

// gadget creates a JS gadget in a new workspace of c's and returns the workspace and the
// gadget's connected stub.
func (c client) gadget(tb testing.TB, ws, name, src string) (workspace, gadget *capnweb.Stub) {
	tb.Helper()
	bg := context.Background()
	workspace = must(tb, "createWorkspace "+ws, c.api.Call(bg, "createWorkspace", ws)).(*capnweb.Stub)
	must(tb, "createGadget "+name, workspace.Call(bg, "createGadget", name, map[string]any{"server.js": src}, []string{"atelier:host/kv", "atelier:host/log", "atelier:host/events", "atelier:host/bindings"}))
	return workspace, must(tb, "connect "+name, workspace.Call(bg, "gadget", name).Call(bg, "connect")).(*capnweb.Stub)
}

// good is the well-behaved user: it increments a counter about 50 times a second and keeps
// every latency and the last acknowledged value.
type good struct {
	counter *capnweb.Stub
	acked   atomic.Int64
	mu      sync.Mutex
	errs    []error
}

// run calls until ctx ends and returns the latencies.
func (g *good) run(ctx context.Context) []time.Duration {
	var lat []time.Duration
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return lat
		case <-tick.C:
		}
		start := time.Now()
		v, err := await(g.counter.Call(context.Background(), "inc"))
		lat = append(lat, time.Since(start))
		n, _ := v.(float64)
		switch {
		case err != nil:
			g.fail(fmt.Errorf("inc: %w", err))
		case int64(n) != g.acked.Load()+1:
			g.fail(fmt.Errorf("inc returned %v after %d acknowledged increments", v, g.acked.Load()))
		default:
			g.acked.Store(int64(n))
		}
	}
}

func (g *good) fail(err error) {
	g.mu.Lock()
	g.errs = append(g.errs, err)
	g.mu.Unlock()
}

// attacks counts the hostile calls by outcome code ("ok" for successes).
type attacks struct {
	mu     sync.Mutex
	count  map[string]map[string]int
	sample map[string]string // one error message of each kind and outcome
}

func (a *attacks) record(kind string, err error) {
	c := "ok"
	if err != nil {
		if c = code(err); c == "" {
			c = "other"
		}
	}
	a.mu.Lock()
	if a.count[kind] == nil {
		a.count[kind] = map[string]int{}
	}
	a.count[kind][c]++
	if err != nil {
		a.sample[kind+" "+c] = err.Error()
	}
	a.mu.Unlock()
}

// loop runs fn on n goroutines until ctx ends, recording each outcome under kind.
func (a *attacks) loop(ctx context.Context, wg *sync.WaitGroup, kind string, n int, fn func(i int) error) {
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				a.record(kind, fn(i))
			}
		}()
	}
}

// result is what one soak measured.
type result struct {
	idle, attack []time.Duration
	hwm          int64 // the server's VmHWM, bytes
	acked        int64
	attacks      map[string]map[string]int
	samples      map[string]string
}

// soak runs the whole scenario against a fresh server.
func soak(tb testing.TB) result {
	bin := serveproc.Binary(tb, tmpDir)
	data := filepath.Join(tb.TempDir(), "atelier.db")
	srv := serveproc.Launch(tb, bin, data, filepath.Join(tmpDir, "cache"), "--call-timeout", "2s").Wait(tb)
	defer srv.Terminate(tb)
	bg := context.Background()

	admin := dial(tb, srv.URL).Main().Call(bg, "authenticate", srv.AdminToken(tb))
	must(tb, "setQuota host_memory", admin.Call(bg, "setQuota", "host_memory", hostMemory))

	g := &good{}
	_, g.counter = signup(tb, srv.URL, "good").gadget(tb, "home", "counter", counterJS)
	var hostile, workspaces []*capnweb.Stub
	for i := range 3 {
		c := signup(tb, srv.URL, "hostile"+strconv.Itoa(i))
		for j := range 4 {
			ws, h := c.gadget(tb, fmt.Sprintf("ws%d", j), "h", hostileJS)
			hostile, workspaces = append(hostile, h), append(workspaces, ws)
		}
	}

	ctx, stop := context.WithTimeout(bg, idleFor)
	idle := g.run(ctx)
	stop()

	ctx, stop = context.WithTimeout(bg, attackFor)
	defer stop()
	a := &attacks{count: map[string]map[string]int{}, sample: map[string]string{}}
	var wg sync.WaitGroup
	call := func(i int, method string, args ...any) error {
		_, err := await(hostile[i%len(hostile)].Call(bg, method, args...))
		return err
	}
	a.loop(ctx, &wg, "spin", 2, func(i int) error { return call(i, "spin") })
	a.loop(ctx, &wg, "fill", 8, func(i int) error { return call(2+i, "fill", 150) })
	a.loop(ctx, &wg, "big string", 2, func(i int) error { return call(10+i, "big", 20) })
	a.loop(ctx, &wg, "big list", 1, func(i int) error { return call(11, "many", 8<<20) })
	a.loop(ctx, &wg, "snippet", 20, func(i int) error {
		v, err := await(workspaces[i%len(workspaces)].Call(bg, "executeCode", snippet))
		if m, _ := v.(map[string]any); m != nil && m["error"] != nil && err == nil {
			e, _ := m["error"].(map[string]any)
			err = fmt.Errorf("the snippet threw: %v", e["message"])
		}
		return err
	})
	var anonymous []*capnweb.Stub // a session of its own for each login and signup loop
	for range 44 {
		anonymous = append(anonymous, dial(tb, srv.URL).Main())
	}
	a.loop(ctx, &wg, "login", 40, func(i int) error {
		_, err := await(anonymous[i].Call(bg, "login", fmt.Sprintf("victim%d", i%5), "wrong password "+strconv.Itoa(i)))
		return err
	})
	a.loop(ctx, &wg, "signup", 4, func(i int) error {
		_, err := await(anonymous[40+i].Call(bg, "signup", fmt.Sprintf("spam%d-%d", i, time.Now().UnixNano()%1e9), password))
		return err
	})
	// Sessions that never sign in nor read, held until the server refuses more from this
	// address (every client of the soak shares it, so the others opened theirs before).
	var flood []*websocket.Conn
	a.loop(ctx, &wg, "session flood", 1, func(int) error {
		c, resp, err := websocket.DefaultDialer.DialContext(ctx, srv.URL, nil)
		if err == nil {
			flood = append(flood, c)
			return nil
		}
		if resp != nil {
			time.Sleep(50 * time.Millisecond)
			return refusedStatus(resp.StatusCode)
		}
		return err
	})
	attack := g.run(ctx)
	wg.Wait()
	for _, c := range flood {
		c.Close()
	}

	hwm := vmHWM(tb, srv.Pid())
	if v := must(tb, "ping after the attack", dial(tb, srv.URL).Main().Call(bg, "ping")); v != "pong" {
		tb.Fatalf("ping = %v", v)
	}
	for _, err := range g.errs {
		tb.Errorf("well-behaved call failed: %v", err)
	}
	if got := must(tb, "get", g.counter.Call(bg, "get")); got != float64(g.acked.Load()) {
		tb.Errorf("the counter holds %v after %d acknowledged increments", got, g.acked.Load())
	}
	return result{idle: idle, attack: attack, hwm: hwm, acked: g.acked.Load(), attacks: a.count, samples: a.sample}
}

// vmHWM reads the peak resident set size of process pid.
func vmHWM(tb testing.TB, pid int) int64 {
	tb.Helper()
	n, err := capnwebtests.ProcessStatus(pid, "VmHWM")
	if err != nil {
		tb.Fatal(err)
	}
	return n
}

// percentile returns the p-th percentile (0-100) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p/100))]
}

// TestHostileTenantSoak: every well-behaved call succeeds and is kept while the attacks run,
// and the server stays within its memory budget.
func TestHostileTenantSoak(t *testing.T) {
	r := soak(t)
	t.Logf("well-behaved calls: %d idle (p50 %v, p99 %v), %d under attack (p50 %v, p99 %v); p99 ratio %.1f",
		len(r.idle), percentile(r.idle, 50), percentile(r.idle, 99), len(r.attack), percentile(r.attack, 50), percentile(r.attack, 99),
		float64(percentile(r.attack, 99))/float64(percentile(r.idle, 99)))
	t.Logf("attacks by outcome: %v", r.attacks)
	for k, msg := range r.samples {
		t.Logf("  %s: %.300s", k, msg)
	}
	t.Logf("server peak RSS %d MiB (budget %d MiB + margin %d MiB)", r.hwm>>20, hostMemory>>20, margin>>20)
	if r.hwm > hostMemory+margin {
		t.Errorf("server peak RSS %d MiB passed the host memory budget of %d MiB plus %d MiB", r.hwm>>20, hostMemory>>20, margin>>20)
	}
}

// BenchmarkHostileSoak reports the well-behaved client's latency under attack against idle
// (one soak whatever b.N is).
func BenchmarkHostileSoak(b *testing.B) {
	var r result
	for range b.N {
		if r.acked == 0 {
			r = soak(b)
		}
	}
	b.ReportMetric(float64(percentile(r.idle, 99).Microseconds())/1000, "idle-p99-ms")
	b.ReportMetric(float64(percentile(r.attack, 99).Microseconds())/1000, "attack-p99-ms")
	b.ReportMetric(float64(percentile(r.attack, 99))/float64(percentile(r.idle, 99)), "p99-ratio")
	b.ReportMetric(float64(r.hwm>>20), "peak-RSS-MiB")
}
