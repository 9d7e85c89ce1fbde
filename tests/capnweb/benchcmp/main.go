// Command benchcmp compares the throughput and latency of the Go Cap'n Web conformance server
// with the official Node server, driving both with the same official client (node/bench.mjs,
// calls to add(1, 2) over WebSocket).
//
// Usage (from anywhere in the module):
//
//	go run ./tests/capnweb/benchcmp [--duration 6s] [--json]
//
// The server CPU time per call (Linux /proc) shows server efficiency even where the single
// Node client process, not the server, limits the call rate.
//
// Each of the four scenarios (sequential and pipelined, over 1 and 100 sessions) runs for
// --duration against each server, so the default takes about a minute. The output is a table
// with one row per scenario, or with --json one JSON document.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
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
// pipelines over 100 sessions only measure queueing in the single-threaded client.
var scenarios = []scenario{
	{Name: "seq, 1 session", Mode: "seq", Sessions: 1, Depth: 1},
	{Name: "pipelined x100, 1 session", Mode: "pipelined", Sessions: 1, Depth: 100},
	{Name: "seq, 100 sessions", Mode: "seq", Sessions: 100, Depth: 1},
	{Name: "pipelined x10, 100 sessions", Mode: "pipelined", Sessions: 100, Depth: 10},
}

// measurement is the JSON line printed by bench.mjs.
type measurement struct {
	Calls     int     `json:"calls"`
	CallsPerS float64 `json:"calls_per_s"`
	P50Millis float64 `json:"p50_ms"`
	P99Millis float64 `json:"p99_ms"`
	DurationS float64 `json:"duration_s"`
	ErrorText string  `json:"error,omitempty"`
	// ServerCPUPerCall is the server's CPU time per call in microseconds, measured over the
	// whole bench.mjs run (connecting and warm-up included, so it slightly overstates).
	ServerCPUPerCall float64 `json:"server_cpu_us_per_call"`
}

// row is one scenario measured against both servers.
type row struct {
	scenario
	Go    measurement `json:"go"`
	Node  measurement `json:"node"`
	Ratio float64     `json:"go_over_node"`
}

func main() {
	duration := flag.Duration("duration", 6*time.Second, "measured time per scenario and server")
	warmup := flag.Duration("warmup", 500*time.Millisecond, "unmeasured warm-up per run")
	asJSON := flag.Bool("json", false, "print JSON instead of a table")
	flag.Parse()
	if err := run(os.Stdout, *duration, *warmup, *asJSON); err != nil {
		fmt.Fprintln(os.Stderr, "benchcmp:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, duration, warmup time.Duration, asJSON bool) error {
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
		r := row{scenario: sc}
		if r.Go, err = measure(nodeDir, goSrv, sc, duration, warmup); err != nil {
			return fmt.Errorf("%s against the Go server: %w\nserver output:\n%s", sc.Name, err, goSrv.Output())
		}
		if r.Node, err = measure(nodeDir, nodeSrv, sc, duration, warmup); err != nil {
			return fmt.Errorf("%s against the Node server: %w\nserver output:\n%s", sc.Name, err, nodeSrv.Output())
		}
		if r.Node.CallsPerS > 0 {
			r.Ratio = r.Go.CallsPerS / r.Node.CallsPerS
		}
		rows = append(rows, r)
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"duration_s": duration.Seconds(), "rows": rows})
	}
	return printTable(w, rows)
}

// measure runs bench.mjs for one scenario against one server.
func measure(nodeDir string, srv *capnweb.Server, sc scenario, duration, warmup time.Duration) (measurement, error) {
	ctx, cancel := context.WithTimeout(context.Background(), duration+warmup+time.Minute)
	defer cancel()
	cpuBefore, err := srv.CPUTime()
	if err != nil {
		return measurement{}, err
	}
	out, err := capnweb.RunNode(ctx, nodeDir, "bench.mjs", "--url", srv.URL,
		"--mode", sc.Mode, "--sessions", strconv.Itoa(sc.Sessions), "--depth", strconv.Itoa(sc.Depth),
		"--duration", strconv.FormatFloat(duration.Seconds(), 'f', -1, 64),
		"--warmup", strconv.FormatFloat(warmup.Seconds(), 'f', -1, 64))
	var m measurement
	if jsonErr := json.Unmarshal(out, &m); jsonErr != nil {
		return m, fmt.Errorf("bench.mjs output %q: %w (run: %v)", out, jsonErr, err)
	}
	if m.ErrorText != "" {
		return m, fmt.Errorf("bench.mjs: %s", m.ErrorText)
	}
	if err != nil {
		return m, err
	}
	cpuAfter, err := srv.CPUTime()
	if err != nil {
		return m, err
	}
	if m.Calls > 0 {
		m.ServerCPUPerCall = float64((cpuAfter - cpuBefore).Microseconds()) / float64(m.Calls)
	}
	return m, nil
}

// printTable writes the rows as a table with a left-aligned scenario column and right-aligned
// numbers.
func printTable(w io.Writer, rows []row) error {
	width := len("scenario")
	for _, r := range rows {
		width = max(width, len(r.Name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tGo calls/s\tNode calls/s\tGo/Node\tGo p99 ms\tNode p99 ms\tGo CPU µs/call\tNode CPU µs/call\t\n",
		width, "scenario")
	for _, r := range rows {
		fmt.Fprintf(tw, "%-*s\t%.0f\t%.0f\t%.2f\t%.3f\t%.3f\t%.1f\t%.1f\t\n",
			width, r.Name, r.Go.CallsPerS, r.Node.CallsPerS, r.Ratio, r.Go.P99Millis, r.Node.P99Millis,
			r.Go.ServerCPUPerCall, r.Node.ServerCPUPerCall)
	}
	return tw.Flush()
}
