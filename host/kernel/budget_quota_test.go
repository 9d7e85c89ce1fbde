package kernel_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/host/quota"
	"atelier/host/runtime"
)

// hogJS is a JS gadget that fills memory on demand and keeps it, or spins until its deadline.
var hogJS = map[string]any{"server.js": `export class Gadget {
  fill(mib) {
    this.keep = [];
    for (let i = 0; i < mib; i++) { const b = new Uint8Array(1 << 20); b.fill(1); this.keep.push(b); }
    return mib;
  }
  spin() { for (;;) {} }
  ping() { return "pong"; }
}`}

const mib = 1 << 20

// withQuotas sets the kernel's quotas, a long GadgetIdle (only the quotas evict) and a short
// call timeout (spin ends soon).
func withQuotas(l quota.Limits) option {
	return func(c *kernel.Config) {
		c.Quotas = l
		c.GadgetIdle = time.Hour
		c.Limits = runtime.Limits{Timeout: 3 * time.Second}
	}
}

// unlimitedCalls lifts calls_per_second for benchmarks, which measure how many calls a
// workspace can make.
func unlimitedCalls(c *kernel.Config) { c.Quotas.CallsPerSecond = quota.Unlimited }

// hogs creates hog gadgets in ws and connects to each, one after the other (each creation and
// connection over before the next: connecting loads the gadget's instance, so a connection
// still loading when a test's calls begin would be neither idle nor evictable).
func hogs(t *testing.T, ws *capnweb.Promise, names ...string) map[string]*capnweb.Promise {
	t.Helper()
	out := map[string]*capnweb.Promise{}
	for _, n := range names {
		g := ws.Call(ctx, "createGadget", n, hogJS, jsGrants)
		await(t, g.Call(ctx, "info"))
		out[n] = g.Call(ctx, "connect")
		await(t, out[n])
	}
	return out
}

// spinning starts a spin call on app and returns a func that waits for its end (its deadline).
func spinning(t *testing.T, app *capnweb.Promise) func() {
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_, _ = app.Call(ctx, "spin").Await(ctx)
	}()
	time.Sleep(500 * time.Millisecond) // the spin call reaches its instance
	return wg.Wait
}

func TestLiveInstancesQuota(t *testing.T) {
	s := startServer(t, t.TempDir()+"/a.db", withQuotas(quota.Limits{LiveInstances: 2}))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	apps := hogs(t, ws, "a", "b", "c")
	for _, n := range []string{"a", "b", "c"} { // c evicts a, the least recently used
		if got := await(t, apps[n].Call(ctx, "ping")); got != "pong" {
			t.Fatalf("%s.ping = %v", n, got)
		}
		if live := s.k.WorkspaceUsage("home")["live_instances"]; live > 2 {
			t.Fatalf("after %s: %d live instances, quota 2", n, live)
		}
	}
	// b and c busy: a new instance for a finds nothing idle to evict.
	waitB, waitC := spinning(t, apps["b"]), spinning(t, apps["c"])
	refused(t, apps["a"].Call(ctx, "ping"), "RESOURCE_EXHAUSTED", "quota live_instances exceeded: workspace home has 2 of 2")
	waitB()
	waitC()
	if got := await(t, apps["a"].Call(ctx, "ping")); got != "pong" {
		t.Fatalf("a.ping once b and c are idle = %v", got)
	}
}

// fillAll fills mib MiB in each app in order, checking that the workspace's or host's memory
// stays within limit after each.
func fillAll(t *testing.T, usage func() int64, limit int64, apps ...*capnweb.Promise) {
	t.Helper()
	for i, app := range apps {
		if got := await(t, app.Call(ctx, "fill", 40)); got != float64(40) {
			t.Fatalf("fill %d = %v", i, got)
		}
		used := usage()
		t.Logf("after fill %d: %.1f MiB", i, float64(used)/mib)
		if used > limit || used < 40*mib {
			t.Fatalf("after fill %d: %d MiB used, limit %d MiB", i, used/mib, limit/mib)
		}
	}
}

func TestWorkspaceMemoryQuota(t *testing.T) {
	const limit = 200 * mib
	s := startServer(t, t.TempDir()+"/a.db", withQuotas(quota.Limits{WorkspaceMemory: limit}))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	apps := hogs(t, ws, "a", "b", "c", "d")
	usage := func() int64 { return s.k.WorkspaceUsage("home")["workspace_memory"] }
	// Each holds about 50 MiB after filling 40 and may grow to its 104 MiB budget during a
	// call: three fit, the fourth evicts the first.
	fillAll(t, usage, limit, apps["a"], apps["b"], apps["c"], apps["d"])
	if live := s.k.WorkspaceUsage("home")["live_instances"]; live != 3 {
		t.Errorf("%d live instances after the fourth fill, want 3 (the first evicted)", live)
	}
	fillAll(t, usage, limit, apps["a"]) // a again: evicts the idle b
	// b busy, then the quota is lowered below what b holds: a new instance finds nothing idle
	// to evict and is refused (the change applies at once).
	wait := spinning(t, apps["b"])
	s.k.SetQuotas(quota.Limits{WorkspaceMemory: 4 * mib})
	refused(t, apps["c"].Call(ctx, "ping"), "RESOURCE_EXHAUSTED", "quota workspace_memory exceeded: workspace home has")
	wait()
	s.k.SetQuotas(quota.Limits{WorkspaceMemory: limit})
	if got := await(t, apps["c"].Call(ctx, "ping")); got != "pong" {
		t.Fatalf("c.ping after b's call = %v", got)
	}
}

func TestHostMemoryQuota(t *testing.T) {
	const limit = 200 * mib
	s := startServer(t, t.TempDir()+"/a.db", withQuotas(quota.Limits{HostMemory: limit}))
	home := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	other := s.user(t, "bob").Call(ctx, "createWorkspace", "other")
	mine, theirs := hogs(t, home, "a", "b"), hogs(t, other, "x", "y", "z", "w")
	// Every instance is started, and its first call over, before the fills: an instance
	// starting meanwhile holds a reservation of its whole budget.
	for _, app := range []*capnweb.Promise{mine["a"], mine["b"], theirs["x"], theirs["y"], theirs["z"], theirs["w"]} {
		await(t, app.Call(ctx, "ping"))
	}
	usage := func() int64 { return s.k.HostUsage()["host_memory"] }
	fillAll(t, usage, limit, mine["a"], mine["b"], theirs["x"])
	// bob goes on filling past his fair share (half the host each): his own idle instances
	// give way, or his calls are refused; ada's, within her share, are never pushed out.
	refusals := 0
	for _, n := range []string{"y", "z", "w", "x"} {
		if _, err := theirs[n].Call(ctx, "fill", 40).Await(ctx); err != nil {
			var e *capnweb.Error
			if !errors.As(err, &e) || e.Props["code"] != "RESOURCE_EXHAUSTED" {
				t.Fatalf("bob's fill %s: %v, want success or RESOURCE_EXHAUSTED", n, err)
			}
			refusals++
		}
		if used := usage(); used > limit {
			t.Fatalf("after bob's fill %s: %d MiB used, limit %d MiB", n, used/mib, limit/mib)
		}
		if live := s.k.WorkspaceUsage("home")["live_instances"]; live != 2 {
			t.Fatalf("home has %d live instances after bob's fill %s, want 2 (ada is within her fair share)", live, n)
		}
	}
	if live := s.k.WorkspaceUsage("other")["live_instances"]; live == 4 && refusals == 0 {
		t.Errorf("bob kept 4 instances of 40 MiB and more on a %d MiB host", limit/mib)
	}
	for _, n := range []string{"a", "b"} {
		if got := await(t, mine[n].Call(ctx, "ping")); got != "pong" {
			t.Fatalf("%s.ping = %v", n, got)
		}
	}
	wait := spinning(t, theirs["z"])
	s.k.SetQuotas(quota.Limits{HostMemory: 4 * mib})
	refused(t, mine["b"].Call(ctx, "fill", 1), "RESOURCE_EXHAUSTED", "quota host_memory exceeded: this server has")
	wait()
	s.k.SetQuotas(quota.Limits{HostMemory: limit})
	if got := await(t, mine["b"].Call(ctx, "ping")); got != "pong" {
		t.Fatalf("b.ping after z's call = %v", got)
	}
}

func TestCodeRunsQuota(t *testing.T) {
	s := startServer(t, t.TempDir()+"/a.db", withQuotas(quota.Limits{CodeRuns: 2}))
	ada := s.user(t, "ada")
	ws := ada.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() { // each on its own stub: calls on one stub run one after the other
			defer wg.Done()
			_, _ = ada.Call(ctx, "openWorkspace", id).Call(ctx, "executeCode", `export default async () => { for (;;) {} }`, map[string]any{"timeoutMs": 3000}).Await(ctx)
		}()
	}
	time.Sleep(500 * time.Millisecond) // both snippets are running
	refused(t, ws.Call(ctx, "executeCode", `export default async () => 1`), "RESOURCE_EXHAUSTED", "quota code_runs exceeded: workspace home has 2 of 2")
	if runs := s.k.WorkspaceUsage("home")["code_runs"]; runs != 2 {
		t.Errorf("code_runs in use = %d, want 2", runs)
	}
	wg.Wait()
	if got := await(t, ws.Call(ctx, "executeCode", `export default async () => 1`)).(map[string]any)["value"]; got != float64(1) {
		t.Fatalf("a snippet after the others ended = %v", got)
	}
}

func TestCallsPerSecondQuota(t *testing.T) {
	s := startServer(t, t.TempDir()+"/a.db", withQuotas(quota.Limits{CallsPerSecond: 20}))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	app := hogs(t, ws, "a")["a"]
	await(t, app.Call(ctx, "ping"))
	time.Sleep(time.Second) // the bucket is full again
	// A burst of 100 calls at once: about one second's worth (20) pass.
	ps := make([]*capnweb.Promise, 100)
	for i := range ps {
		ps[i] = app.Call(ctx, "ping")
	}
	ok, refusals := 0, 0
	var refusal *capnweb.Error
	for _, p := range ps {
		if _, err := p.Await(ctx); err != nil {
			refusals++
			if !errors.As(err, &refusal) || refusal.Props["code"] != "RESOURCE_EXHAUSTED" || !strings.Contains(refusal.Message, "quota calls_per_second exceeded: workspace home has 20 of 20") {
				t.Fatalf("refusal: %v, want RESOURCE_EXHAUSTED for calls_per_second", err)
			}
		} else {
			ok++
		}
	}
	// About one second's worth passes; the bucket refills while the burst is served (slowly
	// under the race detector), so only the bounds are checked.
	if refusals == 0 || ok < 20 {
		t.Fatalf("burst of 100: %d passed, %d refused; want about 20 to pass", ok, refusals)
	}
	// A well-behaved rate (10 a second, half the quota) is never refused.
	time.Sleep(time.Second)
	for i := range 10 {
		if _, err := app.Call(ctx, "ping").Await(ctx); err != nil {
			t.Fatalf("call %d at 10 a second: %v", i, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestHostMemoryLiftQuota: a call whose result is a list reserves host_memory for what
// Wasmtime allocates lifting it (81 times the instance's allowance for list<bool>). A small
// list fits a 2 GiB host; once the instance holds more than that reservation allows, a list
// call is refused before the guest runs (RESOURCE_EXHAUSTED, naming host_memory), and the
// instance lives on for calls without lists.
func TestHostMemoryLiftQuota(t *testing.T) {
	s := startServer(t, t.TempDir()+"/a.db", withQuotas(quota.Limits{HostMemory: 2 << 30}))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	wat, err := os.ReadFile("../runtime/testdata/bigresult.wat")
	if err != nil {
		t.Fatal(err)
	}
	app := ws.Call(ctx, "createGadget", "big", wat, []string{}).Call(ctx, "connect")
	if got := await(t, app.Call(ctx, "bools", 1000)).([]any); len(got) != 1000 {
		t.Fatalf("bools(1000) = %d values", len(got))
	}
	if got := await(t, app.Call(ctx, "text", 12<<20)).(string); len(got) != 12<<20 { // its memory grows
		t.Fatalf("text(12 Mi) = %d bytes", len(got))
	}
	refused(t, app.Call(ctx, "bools", 10), "RESOURCE_EXHAUSTED", "quota host_memory exceeded")
	refused(t, app.Call(ctx, "bools", 10), "RESOURCE_EXHAUSTED", "may cost the host up to 80 × the instance's memory while Wasmtime lifts it: return less per call")
	if got := await(t, app.Call(ctx, "count")); got != float64(1) {
		t.Fatalf("count after the refusals = %v, want 1 (the same instance)", got)
	}
	if used := s.k.HostUsage()["host_memory"]; used < 12<<20 || used > 64<<20 {
		t.Errorf("host_memory used after the calls: %d MiB, want what the instance holds", used/mib)
	}
}

// TestGatekeeperInstancesShareHostMemory: a gatekeeper instance started for a gadget's binding
// is charged to host_memory like the gadget's own: with the host's memory too small for it,
// starting it is refused naming host_memory; with room, the instance runs and its memory shows
// in the host's use.
func TestGatekeeperInstancesShareHostMemory(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, filepath.Join(dir, "a.db"), withGatekeepers(t, dir))
	tok, err := s.k.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	gk := await(t, s.dial(t).Call(ctx, "authenticate", tok).Call(ctx, "installGatekeeper", probeArchive(t))).(map[string]any)["id"].(string)
	ada := s.user(t, "ada")
	acct := await(t, ada.Call(ctx, "connectAccount", gk, "http://127.0.0.1:9/notebooks/work", map[string]any{"token": "secret-1"})).(map[string]any)["id"].(string)
	ws := ada.Call(ctx, "createWorkspace", "home")
	src := map[string]any{"server.js": `export class Gadget { ping() { return 1; } observe() { return this.env.notes.observe("seen"); } }`}
	app := ws.Call(ctx, "createGadget", "app", src, jsGrants).Call(ctx, "connect")
	await(t, app.Call(ctx, "ping")) // loads the gadget's instance alone
	gadgetOnly := s.k.HostUsage()["host_memory"]
	await(t, ws.Call(ctx, "bindGatekeeper", "app", "notes", acct))
	s.k.SetQuotas(quota.Limits{HostMemory: gadgetOnly})
	// The gadget sees its binding refused (and throws it on: a gadget error).
	refused(t, app.Call(ctx, "observe"), "GADGET_ERROR", "start probe: quota host_memory exceeded")
	s.k.SetQuotas(quota.Limits{})
	await(t, app.Call(ctx, "observe"))
	if used := s.k.HostUsage()["host_memory"]; used <= gadgetOnly {
		t.Fatalf("host_memory use %d with the gatekeeper's instance live, want more than %d", used, gadgetOnly)
	}
}
