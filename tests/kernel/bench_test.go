package kernel_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/capability/kv"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/quota"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/loadgen"
	"atelier/tests/serveproc"
	"atelier/tests/smaps"
)

// inProcess is a kernel over a real bbolt file served by the real gateway on a loopback
// WebSocket (httptest), so that benchmarks can be profiled with -cpuprofile and -memprofile.
type inProcess struct {
	rt  *runtime.Runtime
	db  *store.Bolt
	k   *kernel.Kernel
	srv *httptest.Server
	url string

	mu       sync.Mutex
	ended    *sync.Cond // signalled when a request (a whole WebSocket session) ends
	requests int
}

// serve wraps the gateway to count the requests in progress: a WebSocket request lasts as
// long as its session.
func (p *inProcess) serve(gw http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests++
		p.mu.Unlock()
		defer func() {
			p.mu.Lock()
			p.requests--
			p.ended.Broadcast()
			p.mu.Unlock()
		}()
		gw.ServeHTTP(w, r)
	})
}

// quiet waits until the server has ended every session, so that nothing it held for them is
// still reachable.
func (p *inProcess) quiet() {
	p.mu.Lock()
	for p.requests > 0 {
		p.ended.Wait()
	}
	p.mu.Unlock()
}

// startInProcess starts a kernel with its data file in dir, its configuration changed by
// opts; it stops when tb ends.
func startInProcess(tb testing.TB, dir string, opts ...func(*kernel.Config)) *inProcess {
	tb.Helper()
	db, err := store.Open(filepath.Join(dir, "atelier.db"))
	if err != nil {
		tb.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(tmpDir, "cache"), Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		tb.Fatal(err)
	}
	// Benchmarks measure how many calls a workspace can make: no calls_per_second quota, and
	// room for one live instance per client (BenchmarkPath runs 100, one gadget each).
	cfg := kernel.Config{Runtime: rt, Store: db, Password: auth.TestParams, Quotas: benchQuotas}
	for _, o := range opts {
		o(&cfg)
	}
	k := kernel.New(cfg)
	p := &inProcess{rt: rt, db: db, k: k}
	p.ended = sync.NewCond(&p.mu)
	p.srv = httptest.NewServer(p.serve(gateway.New(gateway.Config{Kernel: k})))
	p.url = "ws" + strings.TrimPrefix(p.srv.URL, "http") + "/api"
	tb.Cleanup(func() {
		p.srv.CloseClientConnections()
		p.srv.Close()
		p.k.Close()
		p.rt.Close()
		p.db.Close()
	})
	return p
}

// benchQuotas are the quotas of the benchmarks' kernels: no calls_per_second limit (they
// measure how many calls a workspace can make) and no live_instances or workspace_memory limit
// (BenchmarkPath keeps one live instance per client, 100 of them, in one workspace: more than the
// default 32 instances and 2 GiB of guest memory).
var benchQuotas = quota.Limits{CallsPerSecond: quota.Unlimited, LiveInstances: quota.Unlimited, WorkspaceMemory: quota.Unlimited}

// counterFleet creates n counter gadgets named counter-0... in acc's workspace: the first from
// code, the others from a blueprint of it (so the code travels once).
func counterFleet(tb testing.TB, s *session, acc account, code []byte, n int) {
	tb.Helper()
	bp := counterBlueprint(tb, s, acc, code)
	fromBlueprint(tb, s, acc, bp, 1, n)
}

// counterBlueprint creates counter-0 from code and publishes it as a blueprint.
func counterBlueprint(tb testing.TB, s *session, acc account, code []byte) string {
	tb.Helper()
	acc.createGadget(tb, s, counterName(0), code)
	return mustString(tb, "publishBlueprint", acc.workspaceOn(s).Call(bg, "publishBlueprint", counterName(0), "counter", "benchmark fleet"))
}

// fromBlueprint creates the gadgets counter-from to counter-(to-1) from blueprint bp, all
// calls pipelined on one workspace stub.
func fromBlueprint(tb testing.TB, s *session, acc account, bp string, from, to int) {
	tb.Helper()
	ws := mustStub(tb, "openWorkspace", acc.workspaceOn(s))
	defer ws.Dispose()
	ps := make([]*capnweb.Promise, 0, to-from)
	for i := from; i < to; i++ {
		ps = append(ps, ws.Call(bg, "createGadgetFromBlueprint", bp, counterName(i)).Call(bg, "info"))
	}
	for _, p := range ps {
		must(tb, "createGadgetFromBlueprint", p)
	}
}

// BenchmarkPath measures increment(1) on the counter gadget (a kv get and set) with 1 and 100
// concurrent clients, each with its own WebSocket session and its own gadget, through the whole
// path and directly, back to back:
//
//   - full: the atelier binary in its own process (WebSocket -> gateway -> kernel -> gadget
//     actor -> kv commit to bbolt with fsync -> reply); server-cpu-ns/op is its CPU time per
//     call.
//   - inproc: the same path with the kernel in this process (so -cpuprofile and
//     ATELIER_BENCH_LOOP_PROFILE see it); cpu-ns/op counts clients and server together,
//     commits/fsync is the mean number of calls' commits the store wrote per transaction.
//   - inproc_read: get() on that path, which commits nothing, to split the cost.
//   - full_read and full_rpc split full's cost the same way: get() (the gadget's call without
//     a commit) and the read of a property the connection does not have (the Cap'n Web round
//     trip alone: no kernel, no gadget), on the same server and sessions.
//   - direct: the export called on a host/runtime instance with an in-memory kv.
//
// ns/op is wall time per call over all clients, cpu-ns/op this process's CPU time per call,
// server-sys-ns/op the part of server-cpu-ns/op spent in the kernel, p50-ns and p99-ns the
// latency of one call.
func BenchmarkPath(b *testing.B) {
	code := guesttest.Bytes(b, counterGo)
	ctx := runContext(b)
	increment := func(conns []*capnweb.Stub) func(int) error {
		return func(c int) error {
			_, err := conns[c].Call(ctx, "increment", 1).Await(ctx)
			return err
		}
	}
	for _, clients := range []int{1, 100} {
		b.Run(fmt.Sprintf("%dclients", clients), func(b *testing.B) {
			p := startInProcess(b, b.TempDir())
			inproc := connectFleet(b, p.url, code, clients)
			// It measures how many calls a workspace can make: the quotas of startInProcess.
			srv := serveproc.Launch(b, atelierBinary(b), filepath.Join(b.TempDir(), "atelier.db"), filepath.Join(tmpDir, "cache"),
				"--quota", "calls_per_second=unlimited", "--quota", "live_instances=unlimited", "--quota", "workspace_memory=unlimited").Wait(b)
			full := connectFleet(b, srv.URL, code, clients)
			b.Run("inproc", func(b *testing.B) {
				defer reportGrouping(b, p.db)()
				loadgen.Run(b, clients, increment(inproc))
			})
			b.Run("inproc_read", func(b *testing.B) {
				loadgen.Run(b, clients, func(c int) error {
					_, err := inproc[c].Call(ctx, "get").Await(ctx)
					return err
				})
			})
			b.Run("full", func(b *testing.B) {
				serverRun(b, srv.Pid(), clients, increment(full))
			})
			b.Run("full_read", func(b *testing.B) {
				serverRun(b, srv.Pid(), clients, func(c int) error {
					_, err := full[c].Call(ctx, "get").Await(ctx)
					return err
				})
			})
			b.Run("full_rpc", func(b *testing.B) {
				serverRun(b, srv.Pid(), clients, func(c int) error {
					_, err := full[c].Get("none").Await(ctx)
					return err
				})
			})
			b.Run("direct", func(b *testing.B) {
				comp, err := p.rt.Compile(bg, code)
				if err != nil {
					b.Fatal(err)
				}
				defer comp.Close()
				insts := make([]*runtime.Instance, clients)
				for i := range insts {
					insts[i], err = p.rt.Instantiate(bg, comp, runtime.InstanceConfig{
						Name:   counterName(i),
						Grants: append(runtime.WASIBaseline(), counterGrants...),
						Bind:   map[string]any{kv.Grant: kv.NewMemory(0)},
					})
					if err != nil {
						b.Fatal(err)
					}
					defer insts[i].Close()
				}
				loadgen.Run(b, clients, func(c int) error {
					_, err := insts[c].Call(bg, "increment", uint32(1))
					return err
				})
			})
		})
	}
}

// runContext bounds a whole benchmark: a server that stops answering fails it after
// runTimeout. (A timeout per call, as await sets, would add a timer to the client's side of
// every call.)
func runContext(b *testing.B) context.Context {
	ctx, cancel := context.WithTimeout(bg, runTimeout)
	b.Cleanup(cancel)
	return ctx
}

const runTimeout = 10 * time.Minute

// connectFleet signs up a user on the server at url, creates n counters and returns a
// connection to each, every one on its own session and warmed up by one increment.
func connectFleet(b *testing.B, url string, code []byte, n int) []*capnweb.Stub {
	acc := newAccount(b, url, "bench")
	withSession(b, url, func(s *session) { counterFleet(b, s, acc, code, n) })
	conns := make([]*capnweb.Stub, n)
	// The sessions' goroutines inherit the label, so that a profile splits into client and
	// server: go tool pprof -tagignore side=client shows the server (and the load generator's
	// loadgen.Run goroutines, which call and await).
	pprof.Do(bg, pprof.Labels("side", "client"), func(context.Context) {
		for i := range conns {
			conns[i] = mustStub(b, "connect", acc.connect(mustDial(b, url), counterName(i)))
			must(b, "warm-up increment", conns[i].Call(bg, "increment", 1))
		}
	})
	return conns
}

// serverRun runs the load generator with clients callers of call and reports the CPU time
// the server process pid spent per call, and the part of it spent in the kernel.
func serverRun(b *testing.B, pid, clients int, call func(int) error) {
	user0, sys0 := processCPU(b, pid)
	loadgen.Run(b, clients, call)
	user1, sys1 := processCPU(b, pid)
	b.ReportMetric(float64(user1-user0+sys1-sys0)/float64(b.N), "server-cpu-ns/op")
	b.ReportMetric(float64(sys1-sys0)/float64(b.N), "server-sys-ns/op")
}

// processCPU returns the user and the system CPU time process pid has used so far, from
// /proc/PID/stat (clock ticks of 10ms, so measure runs of a second or more).
func processCPU(b *testing.B, pid int) (user, system time.Duration) {
	user, system, err := capnwebtests.ProcessCPUTimes(pid)
	if err != nil {
		b.Fatal(err)
	}
	return user, system
}

// BenchmarkKV measures the kernel's kv storage, a workspace's store.WorkspaceStore over bbolt:
// get (a read transaction), set (one Commit of one SetKV, durable before it returns), and set
// from 100 concurrent writers (one gadget each; the store commits everything queued in one
// transaction: commits/fsync is their mean number per transaction).
func BenchmarkKV(b *testing.B) {
	db, err := store.Open(filepath.Join(b.TempDir(), "atelier.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	id := store.WorkspaceID(store.NewID("ws"))
	if err := db.CreateWorkspace(bg, store.Workspace{ID: id, Name: "bench", Owner: "u_bench", Created: time.Now()}); err != nil {
		b.Fatal(err)
	}
	lease, err := db.Acquire(bg, id)
	if err != nil {
		b.Fatal(err)
	}
	ws, err := db.Open(bg, id, lease)
	if err != nil {
		b.Fatal(err)
	}
	defer ws.Close()
	value := bytes.Repeat([]byte("v"), 64)
	gadget := func(c int) store.GadgetID { return store.GadgetID(fmt.Sprintf("g_bench%d", c)) }
	set := func(c int) error {
		return ws.Commit(bg, []store.Mutation{store.SetKV(gadget(c), []byte("count"), value)})
	}
	if err := set(0); err != nil {
		b.Fatal(err)
	}
	b.Run("get", func(b *testing.B) {
		loadgen.Run(b, 1, func(int) error {
			_, ok, err := ws.Get(gadget(0), []byte("count"))
			if err == nil && !ok {
				err = fmt.Errorf("count of %s is missing", gadget(0))
			}
			return err
		})
	})
	b.Run("set", func(b *testing.B) { loadgen.Run(b, 1, set) })
	b.Run("set_100writers", func(b *testing.B) {
		defer reportGrouping(b, db)()
		loadgen.Run(b, 100, set)
	})
}

// BenchmarkFootprint measures memory: per idle workspace (created, its overseer running, no
// gadget), per idle gadget (created in a running workspace, never called: no instance), per
// live instance (a gadget called once, so its instance stays until evicted) of the Go and of
// the JavaScript counter, and per trimmed instance (100 of them, called once and left idle
// until the kernel trimmed them: Config.GadgetTrim, here 100 ms). One op builds a fresh kernel and creates the batch; heap-B/<item> is
// the Go heap growth after GC, rss-B/<item> the process's resident memory growth (which
// includes Wasmtime's allocations, and pages of files such as compiled code that the batch
// made resident, and a page of a shared image once per instance that maps it),
// dirty-KiB/<item> its private dirty memory growth (package smaps: the RAM that is the items'
// own) and pss-KiB/<item> its proportional set size growth (shared pages counted once), all
// divided by the batch size. The live instances are fewer
// than the live_instances quota (so none is evicted, and its memory recycled, while they are
// measured), and one instance of the gadget is called before (so the component's code, loaded
// once for all its instances, is not counted per instance). ns/op is the time of one whole measurement (a fresh kernel,
// the batch, and waiting for the heap to settle), so that b.N stays at 1 or 2.
func BenchmarkFootprint(b *testing.B) {
	b.Run("idle_workspace", func(b *testing.B) {
		const n = 500
		for range b.N {
			p := startInProcess(b, b.TempDir())
			acc := newAccount(b, p.url, "bench")
			measureFootprint(b, p, "workspace", n, func(s *session) {
				api := mustStub(b, "authenticate", s.root.Call(bg, "authenticate", acc.token))
				ps := make([]*capnweb.Promise, n)
				for i := range ps {
					ps[i] = api.Call(bg, "createWorkspace", fmt.Sprintf("ws-%d", i)).Call(bg, "info")
				}
				for _, p := range ps {
					must(b, "createWorkspace", p)
				}
			})
			b.ReportMetric(float64(p.k.Stats().Workspaces), "overseers")
		}
	})
	b.Run("idle_gadget", func(b *testing.B) {
		const n = 1000
		code := guesttest.Bytes(b, counterGo)
		for range b.N {
			p := startInProcess(b, b.TempDir())
			acc := newAccount(b, p.url, "bench")
			var bp string // the workspace's overseer and the code are not counted
			withSession(b, p.url, func(s *session) { bp = counterBlueprint(b, s, acc, code) })
			measureFootprint(b, p, "gadget", n, func(s *session) { fromBlueprint(b, s, acc, bp, 1, n+1) })
			b.ReportMetric(float64(p.k.Stats().Actors), "actors")
		}
	})
	for _, g := range []struct{ name, dir string }{{"go", counterGo}, {"js", counterJS}} {
		b.Run("live_instance/"+g.name, func(b *testing.B) {
			const n = 30 // with counter-0's, below the default live_instances quota of 32
			code := guesttest.Bytes(b, g.dir)
			for range b.N {
				p := startInProcess(b, b.TempDir())
				acc := newAccount(b, p.url, "bench")
				withSession(b, p.url, func(s *session) {
					counterFleet(b, s, acc, code, n+1)
					must(b, "get", acc.connect(s, counterName(0)).Call(bg, "get"))
				})
				measureFootprint(b, p, "instance", n, func(s *session) {
					for i := 1; i <= n; i++ {
						must(b, "get", acc.connect(s, counterName(i)).Call(bg, "get"))
					}
				})
				b.ReportMetric(float64(p.k.Stats().Actors), "actors")
			}
		})
	}
	for _, g := range []struct{ name, dir string }{{"go", counterGo}, {"js", counterJS}} {
		b.Run("trimmed_instance/"+g.name, func(b *testing.B) {
			const n = 100
			code := guesttest.Bytes(b, g.dir)
			for range b.N {
				p := startInProcess(b, b.TempDir(), func(c *kernel.Config) { c.GadgetTrim, c.GadgetIdle = 100*time.Millisecond, time.Hour })
				acc := newAccount(b, p.url, "bench")
				withSession(b, p.url, func(s *session) {
					counterFleet(b, s, acc, code, n+1)
					must(b, "get", acc.connect(s, counterName(0)).Call(bg, "get"))
					waitTrimmed(b, p.k, 1)
				})
				measureFootprint(b, p, "instance", n, func(s *session) {
					for i := 1; i <= n; i++ {
						must(b, "get", acc.connect(s, counterName(i)).Call(bg, "get"))
					}
					waitTrimmed(b, p.k, n+1)
				})
				b.ReportMetric(float64(p.k.Stats().Actors), "actors")
			}
		})
	}
}

// waitTrimmed waits until k holds n trimmed instances (kernel.Stats.Trimmed).
func waitTrimmed(b *testing.B, k *kernel.Kernel, n int) {
	deadline := time.Now().Add(time.Minute)
	for k.Stats().Trimmed < n {
		if time.Now().After(deadline) {
			b.Fatalf("%d instances trimmed after a minute, want %d", k.Stats().Trimmed, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// measureFootprint runs create (which makes n items) on a session of its own, closes it, and
// reports the heap and RSS growth per item; so what the server keeps for the session itself is
// not counted.
func measureFootprint(b *testing.B, p *inProcess, item string, n int, create func(*session)) {
	p.quiet()
	m0 := settledMemory(b)
	withSession(b, p.url, create)
	p.quiet()
	m1 := settledMemory(b)
	b.ReportMetric((m1.heap-m0.heap)/float64(n), "heap-B/"+item)
	b.ReportMetric((m1.rss-m0.rss)/float64(n), "rss-B/"+item)
	b.ReportMetric(float64(m1.dirty.Sub(m0.dirty).Total())/float64(n), "dirty-KiB/"+item)
	b.ReportMetric(float64(m1.dirty.Pss-m0.dirty.Pss)/float64(n), "pss-KiB/"+item)
}

// settledMemory returns memoryNow once the heap has stopped shrinking: after a createGadget,
// for example, the 8 MB compiled-artifact buffer read to check its code stays reachable for
// about a second (probably through an idle capnweb worker's last handler).
func settledMemory(b *testing.B) memory {
	m := memoryNow(b)
	for range 5 {
		time.Sleep(1200 * time.Millisecond)
		next := memoryNow(b)
		if m.heap-next.heap < 64<<10 {
			return next
		}
		m = next
	}
	return m
}

// memory is what memoryNow reads: the live Go heap and the resident set size in bytes, and
// the private dirty memory.
type memory struct {
	heap, rss float64
	dirty     smaps.Dirty
}

// memoryNow reads the process's memory after a full GC that returns freed memory to the OS.
func memoryNow(b *testing.B) memory {
	debug.FreeOSMemory()
	var ms goruntime.MemStats
	goruntime.ReadMemStats(&ms)
	dirty, err := smaps.Self()
	if err != nil {
		b.Fatal(err)
	}
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatalf("read RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kib, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			if err != nil {
				b.Fatalf("parse VmRSS %q: %v", v, err)
			}
			return memory{heap: float64(ms.HeapAlloc), rss: kib * 1024, dirty: dirty}
		}
	}
	b.Fatal("no VmRSS in /proc/self/status")
	return memory{}
}

// BenchmarkStartup starts the atelier binary on a data file holding a user and a counter
// gadget (with the compiled-component cache warm) and times how long until ping() answers
// ("ping") and until a first gadget call answers ("first_call", which opens the workspace,
// loads the component from the cache and instantiates it). Stopping is not timed.
func BenchmarkStartup(b *testing.B) {
	bin := atelierBinary(b)
	code := guesttest.Bytes(b, counterGo)
	data := filepath.Join(b.TempDir(), "atelier.db")
	srv := startServe(b, bin, data)
	acc := newAccount(b, srv.URL, "bench")
	withSession(b, srv.URL, func(s *session) {
		acc.createGadget(b, s, counterName(0), code)
		must(b, "get", acc.connect(s, counterName(0)).Call(bg, "get")) // fills the component cache
	})
	srv.Terminate(b)
	for _, bm := range []struct {
		name      string
		firstCall bool
	}{{"ping", false}, {"first_call", true}} {
		b.Run(bm.name, func(b *testing.B) {
			for range b.N {
				b.StartTimer()
				srv := startServe(b, bin, data)
				c, err := dial(bg, srv.URL)
				if err != nil {
					b.Fatal(err)
				}
				must(b, "ping", c.root.Call(bg, "ping"))
				if bm.firstCall {
					must(b, "get", acc.connect(c, counterName(0)).Call(bg, "get"))
				}
				b.StopTimer()
				c.s.Close()
				srv.Terminate(b)
			}
		})
	}
}

// reportGrouping reports, when the returned function runs, the mean number of commits db
// wrote per transaction (per fsync) since reportGrouping was called, as commits/fsync.
func reportGrouping(b *testing.B, db *store.Bolt) func() {
	c0, g0 := db.CommitGroups()
	return func() {
		c1, g1 := db.CommitGroups()
		b.ReportMetric(float64(c1-c0)/float64(max(g1-g0, 1)), "commits/fsync")
	}
}
