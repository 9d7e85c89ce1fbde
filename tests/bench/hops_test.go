package main

import (
	"strings"
	"testing"
)

// TestHops checks that a hop is printed as the difference from its base measured in the same
// run, that the base and its hops leave the other benchmarks, and that a missing base prints
// no table.
func TestHops(t *testing.T) {
	out := []byte(`BenchmarkFetch/raw-2                	    2000	     80000 ns/op
BenchmarkFetch/gatekeeper-2         	    2000	    125500 ns/op
BenchmarkFetch/gatekeeper-refused-2 	    2000	     20000 ns/op
BenchmarkFetch/notes-list-2         	    2000	    180000 ns/op
BenchmarkFormats/component-2        	    2000	    300000 ns/op
`)
	results := map[string][]float64{}
	var order []string
	for _, r := range parse(out) {
		order = append(order, r.name)
		results[r.name] = append(results[r.name], r.nsPerOp)
	}
	var b strings.Builder
	printTables(&b, order, results, nil, map[string]string{})
	got := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"Fetch/gatekeeper 125.50 µs 80.00 µs 45.50 µs",
		"Fetch/notes-list 180.00 µs 80.00 µs 100.00 µs",
		"Other benchmarks: benchmark time/op ops/s metrics Fetch/gatekeeper-refused 20.00 µs 50000 Formats/component 300.00 µs 3333",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "Gatekeeper formats") {
		t.Errorf("a hop table without its base was printed:\n%s", got)
	}
}

// TestSigned checks that a negative hop keeps its sign.
func TestSigned(t *testing.T) {
	if got := signed(-1500); got != "-1.50 µs" {
		t.Errorf("signed(-1500) = %q", got)
	}
}
