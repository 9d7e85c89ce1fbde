// Package diff writes unified diffs of two texts, line by line, with Myers' O(ND) algorithm.
// Its cost is bounded: when the texts have more than MaxLines lines, differ in more than
// MaxEdits lines, or the caller's Budget of search steps runs out, the diff says the whole
// file was replaced instead of searching further.
package diff

import (
	"fmt"
	"strings"
)

// Bounds of the search.
const (
	// MaxLines is the most lines either text may have for a line-by-line diff.
	MaxLines = 20000
	// MaxEdits is the most inserted plus deleted lines a line-by-line diff looks for.
	MaxEdits = 1000
	// context is how many unchanged lines surround a change in a hunk.
	context = 3
)

// op is one line of an edit script.
type op struct {
	kind byte // ' ', '-' or '+'
	line string
}

// Budget is how many search steps the diffs made with it may take together (one step: a line
// compared or a diagonal tried), so that one request for many diffs stays bounded.
type Budget struct{ left int }

// NewBudget returns a budget of steps.
func NewBudget(steps int) *Budget { return &Budget{left: steps} }

// Unified returns the unified diff from old to new, with the file names in its header ("" when
// the texts are equal). A text too large or too different for MaxLines, MaxEdits and the
// budget's remaining steps is shown replaced whole (every old line removed, every new line
// added).
func (bu *Budget) Unified(name, old, new string) string {
	if old == new {
		return ""
	}
	a, b := lines(old), lines(new)
	script, ok := bu.edits(a, b)
	if !ok {
		script = replaced(a, b)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- a/%s\n+++ b/%s\n", name, name)
	if !ok {
		sb.WriteString("# too many changes for a line diff: the whole file is replaced\n")
	}
	writeHunks(&sb, script)
	return sb.String()
}

// lines splits s into lines, each with its newline; the last one may lack it.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// replaced is the script that removes every line of a and adds every line of b.
func replaced(a, b []string) []op {
	out := make([]op, 0, len(a)+len(b))
	for _, l := range a {
		out = append(out, op{'-', l})
	}
	for _, l := range b {
		out = append(out, op{'+', l})
	}
	return out
}

// edits returns a shortest edit script from a to b, or false when the texts exceed the bounds
// or the budget.
func (bu *Budget) edits(a, b []string) ([]op, bool) {
	n, m := len(a), len(b)
	if n > MaxLines || m > MaxLines {
		return nil, false
	}
	maxD := min(n+m, MaxEdits)
	off := maxD + 1
	v := make([]int32, 2*maxD+3)
	var trace [][]int32 // trace[d] is v[off-d .. off+d] after step d
	for d := 0; d <= maxD; d++ {
		for k := -d; k <= d; k += 2 {
			if bu.left--; bu.left < 0 {
				return nil, false
			}
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = int(v[off+k+1])
			} else {
				x = int(v[off+k-1]) + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
				bu.left--
			}
			v[off+k] = int32(x)
			if x >= n && y >= m {
				trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
				return backtrack(a, b, trace), true
			}
		}
		trace = append(trace, append([]int32(nil), v[off-d:off+d+1]...))
	}
	return nil, false
}

// backtrack walks trace back from the end to write the edit script.
func backtrack(a, b []string, trace [][]int32) []op {
	x, y := len(a), len(b)
	var rev []op
	at := func(d, k int) int { return int(trace[d][k+d]) }
	for d := len(trace) - 1; d > 0; d-- {
		k := x - y
		var prevK int
		if k == -d || (k != d && at(d-1, k-1) < at(d-1, k+1)) {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := at(d-1, prevK)
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			x, y = x-1, y-1
			rev = append(rev, op{' ', a[x]})
		}
		if x == prevX {
			y--
			rev = append(rev, op{'+', b[y]})
		} else {
			x--
			rev = append(rev, op{'-', a[x]})
		}
	}
	for x > 0 && y > 0 {
		x, y = x-1, y-1
		rev = append(rev, op{' ', a[x]})
	}
	out := make([]op, len(rev))
	for i, o := range rev {
		out[len(rev)-1-i] = o
	}
	return out
}

// writeHunks writes the script's changes as hunks with their context lines.
func writeHunks(sb *strings.Builder, script []op) {
	for i := 0; i < len(script); {
		if script[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		end := i
		for end < len(script) {
			if script[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(script) && script[run].kind == ' ' {
				run++
			}
			if run == len(script) || run-end > 2*context {
				end = min(end+context, len(script))
				break
			}
			end = run
		}
		aStart, bStart := 1, 1
		for _, o := range script[:start] {
			if o.kind != '+' {
				aStart++
			}
			if o.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, o := range script[start:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(sb, "@@ -%s +%s @@\n", span(aStart, aLen), span(bStart, bLen))
		for _, o := range script[start:end] {
			sb.WriteByte(o.kind)
			sb.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
}

// span is a hunk range: "start,len" (start is the line before an empty range).
func span(start, n int) string {
	if n == 0 {
		start--
	}
	if n == 1 {
		return fmt.Sprint(start)
	}
	return fmt.Sprintf("%d,%d", start, n)
}
