// Command bench runs the repository's Go benchmarks and prints them as tables: the runtime's
// operations on a WAT component and on the Go and JS gadgets next to the same operations done as
// bare Wasmtime C-API calls, the kernel's whole call path next to the same gadget call made
// directly through host/runtime (each with the ratio between them, measured back to back in the
// same run), a dry run of a snippet with its commit next to the same snippet run for real,
// the MCP gatekeeper's tool call next to the same call made directly with the MCP Go SDK
// client, cluster mode next to one node (three nodes on JetStream R3, one on R1, against one
// node with its bbolt file, with the same load), the gatekeeper hop (a gatekeeper's HTTP call
// next to the same plain Go HTTP call, with the difference), then the other benchmarks (Cap'n
// Web, kernel, cluster failover, the host bytes a lifted result costs per byte, the private
// dirty memory of a live gadget instance and its resident memory before and after it is
// trimmed (InstanceRSS), 100 parallel logins, the model provider client's delay per token,
// the hostile-tenant soak) with their extra metrics.
//
//	go run ./tests/bench                  # all benchmarks, 1s each
//	go run ./tests/bench -benchtime 200ms # quicker, noisier
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

// packages are the benchmarked packages, in the order their tables are printed.
var packages = []string{"./host/runtime", "./tests/runtime", "./capnweb", "./tests/kernel", "./tests/gatekeeper", "./tests/cluster", "./host/cluster", "./tests/bench", "./tests/soak"}

// pairs are the tables of benchmarks measured back to back: X<slow> next to X<fast>.
var pairs = []struct{ title, slow, fast, slowName, fastName string }{
	{"Runtime overhead against bare Wasmtime C-API calls (same run):", "/runtime", "/bare", "runtime", "bare C API"},
	{"Whole path (WebSocket, kernel, commit) against direct host/runtime calls (same run):", "/full", "/direct", "full path", "direct"},
	{"Cluster of three nodes (JetStream R3) against one node with its bbolt file, 100 clients (same run):", "/jetstream-R3", "/bbolt", "3 nodes R3", "bbolt"},
	{"One cluster node (JetStream R1) against one node with its bbolt file, 100 clients (same run):", "/jetstream-R1", "/bbolt", "1 node R1", "bbolt"},
	{"Dry run of a snippet and its commit against the same snippet run for real (same run):", "/dry-run+commit", "/real", "dry run + commit", "real run"},
	{"MCP gatekeeper: a tool call through it against the same call made directly with the MCP Go SDK client (same run; goal at most 1.5x):", "/mcp-gatekeeper", "/mcp-direct", "gatekeeper", "direct"},
}

func main() {
	benchtime := flag.String("benchtime", "1s", "value passed to go test -benchtime")
	filter := flag.String("bench", ".", "regexp passed to go test -bench")
	count := flag.Int("count", 1, "value passed to go test -count; the median is reported")
	flag.Parse()
	os.Unsetenv("RUST_BACKTRACE")

	results := map[string][]float64{}
	metrics := map[string]string{}
	cpu := map[string][]float64{} // cpu-ns/op, of the benchmarks that report it
	var order []string
	for _, pkg := range packages {
		fmt.Fprintf(os.Stderr, "==> benchmarking %s\n", pkg)
		out, err := runBench(pkg, *filter, *benchtime, *count)
		if err != nil {
			fmt.Fprintf(os.Stderr, "bench: %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
		for _, r := range parse(out) {
			if _, seen := results[r.name]; !seen {
				order = append(order, r.name)
			}
			results[r.name] = append(results[r.name], r.nsPerOp)
			metrics[r.name] = r.metrics
			if r.cpuPerOp > 0 {
				cpu[r.name] = append(cpu[r.name], r.cpuPerOp)
			}
		}
	}
	printTables(os.Stdout, order, results, cpu, metrics)
}

func runBench(pkg, filter, benchtime string, count int) ([]byte, error) {
	cmd := exec.Command("go", "test", "-run", "^$", "-bench", filter, "-benchtime", benchtime,
		"-count", strconv.Itoa(count), pkg)
	var buf bytes.Buffer
	cmd.Stdout = io.MultiWriter(&buf, os.Stderr)
	cmd.Stderr = os.Stderr
	err := cmd.Run()
	return buf.Bytes(), err
}

type result struct {
	name     string
	nsPerOp  float64
	cpuPerOp float64 // the cpu-ns/op metric, 0 when the benchmark reports none
	metrics  string  // the benchmark's own metrics (b.ReportMetric), as printed
}

var (
	benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op(.*)`)
	// metric is one "value unit" pair after ns/op; B/op and allocs/op are left out.
	metric = regexp.MustCompile(`([0-9.e+]+) (\S+)`)
)

// ownMetrics keeps the metrics a benchmark reported itself from the rest of its line.
func ownMetrics(rest string) string {
	var out []string
	for _, m := range metric.FindAllStringSubmatch(rest, -1) {
		if m[2] != "B/op" && m[2] != "allocs/op" {
			out = append(out, m[1]+" "+m[2])
		}
	}
	return strings.Join(out, ", ")
}

func parse(out []byte) []result {
	var rs []result
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := benchLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		ns, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			continue
		}
		r := result{name: strings.TrimPrefix(m[1], "Benchmark"), nsPerOp: ns, metrics: ownMetrics(m[3])}
		for _, mm := range metric.FindAllStringSubmatch(m[3], -1) {
			if mm[2] == "cpu-ns/op" {
				r.cpuPerOp, _ = strconv.ParseFloat(mm[1], 64)
			}
		}
		rs = append(rs, r)
	}
	return rs
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// printTables prints each table of pairs (X<slow> next to X<fast>, see pairs) that has rows,
// with their ratio of wall time and, when both report cpu-ns/op, of this process's CPU time
// (steadier on a shared machine), the tables of hops (see hops), then everything else;
// metrics are those of a benchmark's last run.
func printTables(w io.Writer, order []string, results, cpu map[string][]float64, metrics map[string]string) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	paired := map[string]bool{}
	for _, p := range pairs {
		var rows []string
		for _, name := range order {
			op, ok := strings.CutSuffix(name, p.slow)
			if !ok {
				continue
			}
			fast, ok := results[op+p.fast]
			if !ok {
				continue
			}
			slow, f := median(results[name]), median(fast)
			cpuRatio := "-"
			if cs, cf := cpu[name], cpu[op+p.fast]; len(cs) > 0 && len(cf) > 0 {
				cpuRatio = fmt.Sprintf("%.2fx", median(cs)/median(cf))
			}
			rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%.2fx\t%s\t\t%s\n", op, human(slow), human(f), slow/f, cpuRatio, metrics[name]))
			paired[name], paired[op+p.fast] = true, true
		}
		if len(rows) == 0 {
			continue
		}
		fmt.Fprintln(w, "\n"+p.title)
		fmt.Fprintf(tw, "operation\t%s\t%s\tratio\tCPU ratio\t\tmetrics of %s\n", p.slowName, p.fastName, p.slowName)
		for _, r := range rows {
			fmt.Fprint(tw, r)
		}
		tw.Flush()
	}
	for name := range printHops(w, results) {
		paired[name] = true
	}
	fmt.Fprintln(w, "\nOther benchmarks:")
	fmt.Fprintln(tw, "benchmark\ttime/op\tops/s\t\tmetrics")
	for _, name := range order {
		if paired[name] {
			continue
		}
		ns := median(results[name])
		fmt.Fprintf(tw, "%s\t%s\t%s\t\t%s\n", name, human(ns), opsPerSecond(ns), metrics[name])
	}
	tw.Flush()
}

// opsPerSecond formats 1e9/ns with two decimals when it is small (slow operations).
func opsPerSecond(ns float64) string {
	ops := 1e9 / ns
	if ops < 100 {
		return fmt.Sprintf("%.2f", ops)
	}
	return fmt.Sprintf("%.0f", ops)
}

func human(ns float64) string {
	switch {
	case ns >= 1e6:
		return fmt.Sprintf("%.2f ms", ns/1e6)
	case ns >= 1e3:
		return fmt.Sprintf("%.2f µs", ns/1e3)
	default:
		return fmt.Sprintf("%.0f ns", ns)
	}
}
