package main

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// hops are the benchmarks that run a plain call (base) in the same run as a call that adds a
// hop in front of it: the hop's cost is their difference, not their ratio.
var hops = []struct {
	title, base string
	ops         []string
}{
	{"Gatekeeper hop: gadget -> gatekeeper -> host HTTP, against a plain Go HTTP call (same run):",
		"Fetch/raw", []string{"Fetch/gatekeeper-c", "Fetch/gatekeeper", "Fetch/notes-list"}},
	{"Gatekeeper formats: notes list as a component and as an Extism plugin, against a plain Go HTTP call that decodes the same JSON (same run):",
		"Formats/raw", []string{"Formats/component", "Formats/extism"}},
}

// printHops prints each table of hops that has rows (the medians, and the hop as the
// difference from the base) and returns the benchmarks it printed.
func printHops(w io.Writer, results map[string][]float64) map[string]bool {
	printed := map[string]bool{}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	for _, h := range hops {
		base, ok := results[h.base]
		if !ok {
			continue
		}
		var rows []string
		for _, op := range h.ops {
			if xs, ok := results[op]; ok {
				t, b := median(xs), median(base)
				rows = append(rows, fmt.Sprintf("%s\t%s\t%s\t%s\t\n", op, human(t), human(b), signed(t-b)))
				printed[op] = true
			}
		}
		if len(rows) == 0 {
			continue
		}
		printed[h.base] = true
		fmt.Fprintln(w, "\n"+h.title)
		fmt.Fprintln(tw, "operation\ttime/op\tplain call\thop\t")
		for _, r := range rows {
			fmt.Fprint(tw, r)
		}
		tw.Flush()
	}
	return printed
}

// signed is human for a difference that may be negative.
func signed(ns float64) string {
	if ns < 0 {
		return "-" + human(-ns)
	}
	return human(ns)
}
