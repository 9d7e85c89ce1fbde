// Command bench runs the repository's Go benchmarks and prints them as tables: the runtime's
// operations on a WAT component and on the Go and JS gadgets next to the same operations done as
// bare Wasmtime C-API calls (with the ratio between them, measured back to back in the same run),
// then the other benchmarks (Cap'n Web, kernel).
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
var packages = []string{"./host/runtime", "./tests/runtime", "./capnweb"}

func main() {
	benchtime := flag.String("benchtime", "1s", "value passed to go test -benchtime")
	filter := flag.String("bench", ".", "regexp passed to go test -bench")
	count := flag.Int("count", 1, "value passed to go test -count; the median is reported")
	flag.Parse()
	os.Unsetenv("RUST_BACKTRACE")

	results := map[string][]float64{}
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
		}
	}
	printTables(os.Stdout, order, results)
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
	name    string
	nsPerOp float64
}

var benchLine = regexp.MustCompile(`^(Benchmark\S+?)(?:-\d+)?\s+\d+\s+([0-9.]+) ns/op`)

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
		rs = append(rs, result{name: strings.TrimPrefix(m[1], "Benchmark"), nsPerOp: ns})
	}
	return rs
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	return s[len(s)/2]
}

// printTables prints the runtime/bare pairs (X/runtime next to X/bare, see package
// runtimebench) with their ratio first, then everything else.
func printTables(w io.Writer, order []string, results map[string][]float64) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "\nRuntime overhead against bare Wasmtime C-API calls (same run):")
	fmt.Fprintln(tw, "operation\truntime\tbare C API\tratio\t")
	paired := map[string]bool{}
	for _, name := range order {
		op, ok := strings.CutSuffix(name, "/runtime")
		if !ok {
			continue
		}
		bare, ok := results[op+"/bare"]
		if !ok {
			continue
		}
		rt := median(results[name])
		b := median(bare)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2fx\t\n", op, human(rt), human(b), rt/b)
		paired[name], paired[op+"/bare"] = true, true
	}
	tw.Flush()
	fmt.Fprintln(w, "\nOther benchmarks:")
	fmt.Fprintln(tw, "benchmark\ttime/op\tops/s\t")
	for _, name := range order {
		if paired[name] {
			continue
		}
		ns := median(results[name])
		fmt.Fprintf(tw, "%s\t%s\t%.0f\t\n", name, human(ns), 1e9/ns)
	}
	tw.Flush()
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
