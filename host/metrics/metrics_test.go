package metrics

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestObserveBuckets(t *testing.T) {
	var h Histogram
	for _, d := range []time.Duration{-time.Second, 0, 25 * time.Microsecond, 26 * time.Microsecond, time.Second, time.Minute} {
		h.Observe(d)
	}
	s := h.Snapshot()
	want := map[int]uint64{0: 3, 1: 1, 14: 1, len(Bounds): 1} // bucket index -> count
	for i, n := range s.Counts {
		if n != want[i] {
			t.Errorf("bucket %d (le %v) = %d, want %d", i, boundName(i), n, want[i])
		}
	}
	if s.Count != 6 {
		t.Errorf("count = %d, want 6", s.Count)
	}
	if wantSum := 25*time.Microsecond + 26*time.Microsecond + time.Second + time.Minute; s.Sum != wantSum {
		t.Errorf("sum = %v, want %v", s.Sum, wantSum)
	}
}

func boundName(i int) string {
	if i == len(Bounds) {
		return "+Inf"
	}
	return Bounds[i].String()
}

func TestQuantile(t *testing.T) {
	var h Histogram
	if got := h.Snapshot().Quantile(0.5); got != 0 {
		t.Fatalf("empty p50 = %v, want 0", got)
	}
	// 90 fast calls (in (500µs, 1ms]) and 10 slow ones (in (100ms, 250ms]).
	for range 90 {
		h.Observe(700 * time.Microsecond)
	}
	for range 10 {
		h.Observe(200 * time.Millisecond)
	}
	s := h.Snapshot()
	check := func(q float64, lo, hi time.Duration) {
		t.Helper()
		if got := s.Quantile(q); got < lo || got > hi {
			t.Errorf("q%v = %v, want within [%v, %v]", q, got, lo, hi)
		}
	}
	check(0.5, 500*time.Microsecond, time.Millisecond)
	check(0.9, 500*time.Microsecond, time.Millisecond)
	check(0.99, 100*time.Millisecond, 250*time.Millisecond)
	check(1, 250*time.Millisecond, 250*time.Millisecond)
	check(0, 500*time.Microsecond, 500*time.Microsecond)

	var slow Histogram
	slow.Observe(time.Hour)
	if got := slow.Snapshot().Quantile(0.5); got != Bounds[len(Bounds)-1] {
		t.Errorf("p50 past the last bound = %v, want %v", got, Bounds[len(Bounds)-1])
	}
}

func TestConcurrentObserve(t *testing.T) {
	var h Histogram
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 1000 {
				h.Observe(time.Duration(i) * time.Microsecond)
			}
		})
	}
	wg.Wait()
	if n := h.Snapshot().Count; n != 8000 {
		t.Fatalf("count = %d, want 8000", n)
	}
}

func TestTextFormat(t *testing.T) {
	var h Histogram
	h.Observe(30 * time.Microsecond)
	h.Observe(2 * time.Minute)
	var buf bytes.Buffer
	w := NewTextWriter(&buf)
	w.Family("x_total", Counter, "Calls.\nWith a \\ backslash.")
	w.Sample("x_total", []Label{{"ws", "a\"b"}, {"g", "line\nbreak\\"}}, 3)
	w.Family("up", Gauge, "Up.")
	w.Sample("up", nil, 1.5)
	w.Family("d_seconds", Hist, "Durations.")
	w.Histogram("d_seconds", []Label{{"g", "t"}}, h.Snapshot())
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"# HELP x_total Calls.\\nWith a \\\\ backslash.\n# TYPE x_total counter\n",
		`x_total{ws="a\"b",g="line\nbreak\\"} 3` + "\n",
		"# TYPE up gauge\nup 1.5\n",
		"# TYPE d_seconds histogram\n",
		`d_seconds_bucket{g="t",le="2.5e-05"} 0` + "\n",
		`d_seconds_bucket{g="t",le="5e-05"} 1` + "\n",
		`d_seconds_bucket{g="t",le="30"} 1` + "\n",
		`d_seconds_bucket{g="t",le="+Inf"} 2` + "\n",
		`d_seconds_sum{g="t"} 120.00003` + "\n",
		`d_seconds_count{g="t"} 2` + "\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if n := strings.Count(out, "d_seconds_bucket"); n != len(Bounds)+1 {
		t.Errorf("%d bucket lines, want %d", n, len(Bounds)+1)
	}
}

type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestTextWriterKeepsError(t *testing.T) {
	w := NewTextWriter(failWriter{})
	w.Family("a", Gauge, "A.")
	for i := range 1000 { // past the buffer: the error comes before Flush
		w.Sample("a", nil, float64(i))
	}
	if err := w.Flush(); err == nil || err.Error() != "disk full" {
		t.Fatalf("Flush = %v, want the write error", err)
	}
}

func BenchmarkObserve(b *testing.B) {
	var h Histogram
	for i := 0; b.Loop(); i++ {
		h.Observe(time.Duration(i%5000) * time.Microsecond)
	}
}
