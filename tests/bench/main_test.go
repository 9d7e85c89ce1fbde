package main

import (
	"strings"
	"testing"
)

// TestTables checks that pairs are matched across the pair tables, with their ratio, and that
// the other benchmarks keep their own metrics.
func TestTables(t *testing.T) {
	out := []byte(`BenchmarkPath/1clients/full-2    	    3032	   1500000 ns/op	    301343 cpu-ns/op	    944174 p50-ns	   18984 B/op	     233 allocs/op
BenchmarkPath/1clients/direct-2  	  152068	     15000 ns/op	      8660 cpu-ns/op	      7130 p50-ns	     499 B/op	      24 allocs/op
BenchmarkGadget/go/noop_call/runtime-2 	 1000	 1200 ns/op
BenchmarkGadget/go/noop_call/bare-2 	 1000	 800 ns/op
BenchmarkDryRun/100keys/dry-run+commit-2 	      51	  20000000 ns/op	      6003 commit-µs
BenchmarkDryRun/100keys/real-2           	      63	  16000000 ns/op
BenchmarkFootprint/live_instance-2          	       1	5308864643 ns/op	        50.00 actors	     60820 heap-B/instance	   8213873 rss-B/instance
`)
	results := map[string][]float64{}
	metrics := map[string]string{}
	cpu := map[string][]float64{}
	var order []string
	for _, r := range parse(out) {
		order = append(order, r.name)
		results[r.name] = append(results[r.name], r.nsPerOp)
		metrics[r.name] = r.metrics
		if r.cpuPerOp > 0 {
			cpu[r.name] = append(cpu[r.name], r.cpuPerOp)
		}
	}
	var b strings.Builder
	printTables(&b, order, results, cpu, metrics)
	got := strings.Join(strings.Fields(b.String()), " ")
	for _, want := range []string{
		"Gadget/go/noop_call 1.20 µs 800 ns 1.50x -", // no cpu-ns/op: no CPU ratio
		"Path/1clients 1.50 ms 15.00 µs 100.00x 34.80x",
		"DryRun/100keys 20.00 ms 16.00 ms 1.25x - 6003 commit-µs",
		"Footprint/live_instance 5308.86 ms 0.19 50.00 actors, 60820 heap-B/instance, 8213873 rss-B/instance",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tables lack %q:\n%s", want, got)
		}
	}
}

// TestTablesSkipEmptyPairs checks that a pair table without rows is left out.
func TestTablesSkipEmptyPairs(t *testing.T) {
	var b strings.Builder
	printTables(&b, []string{"KV/get"}, map[string][]float64{"KV/get": {2400}}, nil, map[string]string{})
	if got := b.String(); strings.Contains(got, "Runtime overhead") || strings.Contains(got, "Whole path") {
		t.Errorf("empty pair tables were printed:\n%s", got)
	}
}
