// Command benchcmp compares the throughput and latency of the Go Cap'n Web conformance server
// with the official Node server, driving both with the same official client (node/bench.mjs,
// calls to add(1, 2) over WebSocket) in one run.
//
// Usage (from anywhere in the module):
//
//	go run ./tests/capnweb/benchcmp [--duration 3s] [--rounds 2] [--clients 2] [--json]
//
// One Node client process saturates before either server, so the 100-session rows run --clients
// bench.mjs processes side by side (the sessions spread over them) that measure the same
// wall-clock window; their calls and latency histograms are merged. The single-session rows
// have one client. Server CPU time per call (Linux /proc, over the measured windows) is the
// fairest column: on a small machine the client processes take CPU from the server, and the
// "limit" column says what bounded each run.
//
// Each of the four scenarios (sequential and pipelined, over 1 and 100 sessions) runs --rounds
// times against each server, alternating which server goes first so that a change in the
// machine's load affects both alike; the runs of a server are merged. With the defaults this
// takes about 80 seconds. The output is a table with one row per scenario, or with --json one
// JSON document.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"text/tabwriter"
	"time"

	"atelier/tests/capnweb"
)

// scenario is one row of the comparison.
type scenario struct {
	Name     string `json:"name"`
	Mode     string `json:"mode"`
	Sessions int    `json:"sessions"`
	Depth    int    `json:"depth"`
}

// scenarios keeps about a thousand calls in flight in the pipelined rows at most: deeper
// pipelines over 100 sessions only measure queueing in the clients.
var scenarios = []scenario{
	{Name: "seq, 1 session", Mode: "seq", Sessions: 1, Depth: 1},
	{Name: "pipelined x100, 1 session", Mode: "pipelined", Sessions: 1, Depth: 100},
	{Name: "seq, 100 sessions", Mode: "seq", Sessions: 100, Depth: 1},
	{Name: "pipelined x10, 100 sessions", Mode: "pipelined", Sessions: 100, Depth: 10},
}

// row is one scenario measured against both servers.
type row struct {
	scenario
	Clients int         `json:"clients"`
	Go      measurement `json:"go"`
	Node    measurement `json:"node"`
	Ratio   float64     `json:"go_over_node"`
}

// config holds the command-line settings.
type config struct {
	duration, warmup time.Duration
	clients, rounds  int
	asJSON           bool
}

func main() {
	var cfg config
	flag.DurationVar(&cfg.duration, "duration", 3*time.Second, "measured window per run")
	flag.DurationVar(&cfg.warmup, "warmup", time.Second, "calls before the window, after every client has connected")
	flag.IntVar(&cfg.clients, "clients", 2, "client processes for the 100-session rows")
	flag.IntVar(&cfg.rounds, "rounds", 2, "runs per scenario and server, alternating the servers")
	flag.BoolVar(&cfg.asJSON, "json", false, "print JSON instead of a table")
	flag.Parse()
	if cfg.clients < 1 || cfg.rounds < 1 {
		fmt.Fprintln(os.Stderr, "benchcmp: --clients and --rounds must be at least 1")
		os.Exit(2)
	}
	if err := run(os.Stdout, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, cfg config) error {
	root, err := capnweb.ModuleRoot()
	if err != nil {
		return err
	}
	nodeDir := capnweb.NodeDir(root)
	if err := capnweb.CheckNode(nodeDir); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "benchcmp-")
	if err != nil {
		return fmt.Errorf("temp dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	bin, err := capnweb.BuildGoServer(root, tmp)
	if err != nil {
		return err
	}
	goSrv, err := capnweb.StartGoServer(bin)
	if err != nil {
		return err
	}
	defer goSrv.Close()
	nodeSrv, err := capnweb.StartNodeServer(nodeDir)
	if err != nil {
		return err
	}
	defer nodeSrv.Close()

	var rows []row
	for _, sc := range scenarios {
		r := row{scenario: sc, Clients: min(cfg.clients, sc.Sessions)}
		b := bench{nodeDir: nodeDir, sc: sc, clients: r.Clients, duration: cfg.duration, warmup: cfg.warmup}
		var goRuns, nodeRuns []runResult
		for round := range cfg.rounds {
			// Alternate the order (Go, Node, Node, Go, ...) so that a drift in the machine's
			// load affects both servers alike.
			order := []bool{true, false}
			if round%2 == 1 {
				order = []bool{false, true}
			}
			for _, isGo := range order {
				srv, name, runs := goSrv, "Go", &goRuns
				if !isGo {
					srv, name, runs = nodeSrv, "Node", &nodeRuns
				}
				res, err := b.measure(srv)
				if err != nil {
					return fmt.Errorf("%s against the %s server: %w\nserver output:\n%s", sc.Name, name, err, srv.Output())
				}
				*runs = append(*runs, res)
			}
		}
		r.Go = b.merge(goRuns, float64(runtime.NumCPU()))
		r.Node = b.merge(nodeRuns, 1) // JavaScript runs on one thread
		if r.Node.CallsPerS > 0 {
			r.Ratio = r.Go.CallsPerS / r.Node.CallsPerS
		}
		rows = append(rows, r)
	}
	if cfg.asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{
			"duration_s": cfg.duration.Seconds(), "rounds": cfg.rounds, "clients": cfg.clients,
			"cpus": runtime.NumCPU(), "rows": rows,
		})
	}
	return printTable(w, rows, cfg)
}

// printTable writes the rows as a table with a left-aligned scenario column and right-aligned
// numbers, under a header that explains the limit column.
func printTable(w io.Writer, rows []row, cfg config) error {
	fmt.Fprintf(w, "%d CPUs; per scenario %d runs per server (%v windows, servers alternating); single-session\n",
		runtime.NumCPU(), cfg.rounds, cfg.duration)
	fmt.Fprintf(w, "rows 1 client process, 100-session rows %d.\n", cfg.clients)
	fmt.Fprintln(w, "limit (Go/Node): what bounded the run: client = a client process used >= 90% of a core,")
	fmt.Fprintln(w, "server = the server used >= 90% of what it can (Node one core, Go every core), cpu = all")
	fmt.Fprintln(w, "cores >= 90% busy (server, clients and other processes share them), latency = none: calls")
	fmt.Fprintln(w, "wait on round trips. kernel = the part of the CPU per call spent in the kernel (system time).")
	var other float64
	for _, r := range rows {
		other += r.Go.OtherCPU + r.Node.OtherCPU
	}
	fmt.Fprintf(w, "Other processes used %.2f cores on average during the runs.\n", other/float64(2*len(rows)))
	width := len("scenario")
	for _, r := range rows {
		width = max(width, len(r.Name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tGo calls/s\tNode calls/s\tGo/Node\tGo p50 ms\tNode p50 ms\tGo p99 ms\tNode p99 ms\t"+
		"Go CPU µs/call\tNode CPU µs/call\tGo kernel\tNode kernel\tlimit\t\n", width, "scenario")
	for _, r := range rows {
		fmt.Fprintf(tw, "%-*s\t%.0f\t%.0f\t%.2f\t%.3f\t%.3f\t%.3f\t%.3f\t%.1f\t%.1f\t%.1f\t%.1f\t%s/%s\t\n",
			width, r.Name, r.Go.CallsPerS, r.Node.CallsPerS, r.Ratio, r.Go.P50Millis, r.Node.P50Millis,
			r.Go.P99Millis, r.Node.P99Millis, r.Go.ServerCPUPerCall, r.Node.ServerCPUPerCall,
			r.Go.ServerSysPerCall, r.Node.ServerSysPerCall,
			r.Go.Limit, r.Node.Limit)
	}
	return tw.Flush()
}
