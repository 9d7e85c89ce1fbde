package diff

import (
	"fmt"
	"strings"
	"testing"
)

// apply applies a unified diff made by Unified to old, to check that it yields new.
func apply(t *testing.T, old, d string) string {
	t.Helper()
	var out []string
	a := lines(old)
	at := 0
	for _, l := range strings.SplitAfter(d, "\n") {
		switch {
		case l == "" || strings.HasPrefix(l, "---") || strings.HasPrefix(l, "+++") || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "\\"):
		case strings.HasPrefix(l, "@@"):
			var s int
			if _, err := fmtSscan(l, &s); err != nil {
				t.Fatalf("hunk header %q: %v", l, err)
			}
			if s == 0 {
				s = 1
			}
			for at < s-1 {
				out = append(out, a[at])
				at++
			}
		case l[0] == ' ':
			out = append(out, a[at])
			at++
		case l[0] == '-':
			at++
		case l[0] == '+':
			out = append(out, l[1:])
		}
	}
	out = append(out, a[at:]...)
	return strings.Join(out, "")
}

func TestUnifiedRoundTrips(t *testing.T) {
	var long []string
	for i := range 50 {
		long = append(long, strings.Repeat("x", i%7)+"\n")
	}
	base := strings.Join(long, "")
	cases := []struct{ old, new string }{
		{"a\nb\nc\n", "a\nB\nc\n"},
		{"", "new\nfile\n"},
		{"gone\n", ""},
		{base, strings.Replace(base, "xxx\n", "yyy\n", 2) + "tail\n"},
		{"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n12\n13\n"},
	}
	for _, c := range cases {
		d := NewBudget(1e6).Unified("f.js", c.old, c.new)
		if !strings.HasPrefix(d, "--- a/f.js\n+++ b/f.js\n") {
			t.Fatalf("header of %q", d)
		}
		// Line-by-line apply ignores the no-newline markers, so compare with trailing newlines.
		if got := apply(t, c.old, d); got != c.new {
			t.Fatalf("diff %q applied to %q gives %q, want %q", d, c.old, got, c.new)
		}
	}
	if NewBudget(0).Unified("f", "same\n", "same\n") != "" {
		t.Fatal("equal texts have a diff")
	}
	d := NewBudget(1e6).Unified("f", "a\nb\nc\n", "a\nB\nc\n")
	if d != "--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" {
		t.Fatalf("diff %q", d)
	}
}

func TestUnifiedFallsBackWhenTooDifferent(t *testing.T) {
	var a, b strings.Builder
	for i := range MaxEdits {
		a.WriteString("a" + strings.Repeat("-", i%13) + "\n")
		b.WriteString("b" + strings.Repeat("-", i%13) + "\n")
	}
	d := NewBudget(1e9).Unified("big.js", a.String(), b.String())
	if !strings.Contains(d, "the whole file is replaced") || apply(t, a.String(), d) != b.String() {
		t.Fatal("a diff past MaxEdits is not shown as a replacement")
	}
	huge := strings.Repeat("l\n", MaxLines+1)
	if d := NewBudget(1e9).Unified("huge.js", huge, huge+"x\n"); !strings.Contains(d, "the whole file is replaced") {
		t.Fatal("a text past MaxLines was diffed line by line")
	}
	// One budget bounds several diffs together: the first uses it up, the next is replaced.
	bu := NewBudget(200)
	old := strings.Repeat("same\n", 150)
	if d := bu.Unified("a.js", old, old+"x\n"); strings.Contains(d, "replaced") || apply(t, old, d) != old+"x\n" {
		t.Fatalf("a diff within the budget: %q", d)
	}
	if d := bu.Unified("b.js", old, old+"x\n"); !strings.Contains(d, "the whole file is replaced") || apply(t, old, d) != old+"x\n" {
		t.Fatal("a diff past the budget was searched")
	}
}

// fmtSscan reads the old range's start of a hunk header "@@ -S[,N] +...".
func fmtSscan(header string, start *int) (int, error) {
	return fmt.Sscanf(strings.TrimPrefix(header, "@@ -"), "%d", start)
}

// BenchmarkUnifiedPastMaxEdits is the costliest diff of one file: two texts of 2,000 lines
// that differ in every other line, so the search runs to MaxEdits and falls back.
func BenchmarkUnifiedPastMaxEdits(b *testing.B) {
	var x, y strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&x, "line %d\n", i)
		if i%2 == 0 {
			fmt.Fprintf(&y, "line %d\n", i)
		} else {
			fmt.Fprintf(&y, "changed %d\n", i)
		}
	}
	for b.Loop() {
		NewBudget(20_000_000).Unified("f.js", x.String(), y.String())
	}
}
