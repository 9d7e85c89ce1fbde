package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/loadgen"
	"atelier/tests/serveproc"
)

// benchClients and benchWorkspaces are the load of BenchmarkCalls: 100 clients spread over
// the nodes, calling counters in 10 workspaces spread over the nodes.
const (
	benchClients    = 100
	benchWorkspaces = 10
)

// BenchmarkCalls measures gadget calls that write (a counter's increment: one commit each)
// with 100 clients, on one node with its bbolt file, on one cluster node (JetStream R1) and
// on three nodes (JetStream R3, clients and workspaces spread over the nodes, so most calls
// also cross from the client's node to the workspace's). ns/op is wall time per call over all
// clients; p50-ns and p99-ns the latency of one call.
func BenchmarkCalls(b *testing.B) {
	code, err := os.ReadFile(guesttest.Path(b, "gadgets/counter-go"))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name  string
		nodes int
	}{{"bbolt", 0}, {"jetstream-R1", 1}, {"jetstream-R3", 3}} {
		b.Run(mode.name, func(b *testing.B) {
			procs := []*serveproc.Process{}
			if mode.nodes == 0 {
				procs = append(procs, serveproc.Launch(b, serveproc.Binary(b, tmpDir), filepath.Join(b.TempDir(), "atelier.db"), filepath.Join(tmpDir, "cache"), unlimitedCalls...).Wait(b))
			} else {
				procs = startCluster(b, mode.nodes, unlimitedCalls...).nodes
			}
			var urls []string
			for _, p := range procs {
				urls = append(urls, p.URL)
			}
			conns := counterFleet(b, urls, code)
			cpu0 := serversCPU(b, procs)
			loadgen.Run(b, len(conns), func(c int) error {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_, err := conns[c].Call(ctx, "increment", 1).Await(ctx)
				return err
			})
			b.ReportMetric(float64(serversCPU(b, procs)-cpu0)/float64(b.N), "server-cpu-ns/op")
		})
	}
}

// serversCPU is the CPU time the server processes have used so far, together.
func serversCPU(b *testing.B, procs []*serveproc.Process) time.Duration {
	var sum time.Duration
	for _, p := range procs {
		d, err := capnwebtests.ProcessCPU(p.Pid())
		if err != nil {
			b.Fatal(err)
		}
		sum += d
	}
	return sum
}

// counterFleet signs a user up, creates benchWorkspaces workspaces (workspace j on node
// j mod nodes) each with a counter, and connects benchClients clients (client c on node c mod
// nodes, to workspace c mod benchWorkspaces), each warmed up by one call.
func counterFleet(b *testing.B, urls []string, code []byte) []*capnweb.Stub {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := capnweb.DialWebSocket(ctx, urls[0], capnweb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	token, err := capnweb.AwaitAs[string](ctx, s.Main().Call(ctx, "signup", "bench", "a long enough password"))
	s.Close()
	if err != nil {
		b.Fatalf("signup: %v", err)
	}
	grants := []string{"atelier:host/kv", "atelier:host/log"}
	var wss []string
	for j := range benchWorkspaces {
		c := dial(b, urls[j%len(urls)], token)
		w := c.api.Call(ctx, "createWorkspace", fmt.Sprintf("bench-%d", j))
		info, err := capnweb.AwaitAs[struct{ ID string }](ctx, w.Get("info"))
		if err != nil {
			b.Fatalf("create workspace: %v", err)
		}
		if _, err := w.Call(ctx, "createGadget", "counter", code, grants).Await(ctx); err != nil {
			b.Fatalf("create gadget: %v", err)
		}
		wss = append(wss, info.ID)
	}
	conns := make([]*capnweb.Stub, benchClients)
	for c := range conns {
		cl := dial(b, urls[c%len(urls)], token)
		w := cl.api.Call(ctx, "openWorkspace", wss[c%benchWorkspaces])
		conn, err := capnweb.AwaitAs[*capnweb.Stub](ctx, w.Call(ctx, "gadget", "counter").Call(ctx, "connect"))
		if err != nil {
			b.Fatalf("connect client %d: %v", c, err)
		}
		if _, err := conn.Call(ctx, "increment", 1).Await(ctx); err != nil {
			b.Fatalf("warm-up call of client %d: %v", c, err)
		}
		conns[c] = conn
	}
	return conns
}

// BenchmarkFailover measures the stall of a busy workspace whose node is killed (-9): the
// time from the kill to the first write acknowledged by its new node, with the test lease TTL
// (most of the stall: the lease must expire before another node may take over). Each
// iteration starts a cluster and kills a node (half a minute): run it with -benchtime 1x.
func BenchmarkFailover(b *testing.B) {
	var total time.Duration
	for range b.N {
		b.StopTimer()
		tc := startCluster(b, 3)
		_, _, w := tc.busyWorkspace(b)
		b.StartTimer()
		killed := time.Now()
		tc.nodes[0].Kill(b)
		total += w.waitStall(b, killed, 60*time.Second)
		b.StopTimer()
		w.finish()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "stall-ms") // ns/op also counts the last writes' wait
	b.ReportMetric(leaseTTL.Seconds()*1000, "lease-ttl-ms")
}

// unlimitedCalls are the serve flags of the benchmarks' servers: they measure how many calls a
// workspace can make, so no calls_per_second quota.
var unlimitedCalls = []string{"--quota", "calls_per_second=unlimited"}
