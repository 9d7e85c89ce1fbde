package metrics

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// snapshot observes each value into a histogram over Buckets and returns its state.
func snapshot(t *testing.T, values ...float64) *dto.Histogram {
	t.Helper()
	h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "d_seconds", Help: "Durations.", Buckets: Buckets})
	for _, v := range values {
		h.Observe(v)
	}
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram()
}

func TestQuantile(t *testing.T) {
	if got := Quantile(snapshot(t), 0.5); got != 0 {
		t.Fatalf("empty p50 = %v, want 0", got)
	}
	// 90 fast calls (in (500µs, 1ms]) and 10 slow ones (in (100ms, 250ms]).
	var values []float64
	for range 90 {
		values = append(values, 700e-6)
	}
	for range 10 {
		values = append(values, 0.2)
	}
	h := snapshot(t, values...)
	check := func(q, lo, hi float64) {
		t.Helper()
		if got := Quantile(h, q); got < lo || got > hi {
			t.Errorf("q%v = %v, want within [%v, %v]", q, got, lo, hi)
		}
	}
	check(0.5, 500e-6, 0.001)
	check(0.9, 500e-6, 0.001)
	check(0.99, 0.1, 0.25)
	check(1, 0.25, 0.25)
	check(0, 500e-6, 500e-6)
	if got := Quantile(h, math.NaN()); got != 0 {
		t.Errorf("NaN quantile = %v, want 0", got)
	}
	if got, want := Quantile(snapshot(t, 3600), 0.5), Buckets[len(Buckets)-1]; got != want {
		t.Errorf("p50 past the last bound = %v, want %v", got, want)
	}
}

// TestRegistryHasGoAndProcessSeries: NewRegistry's text exposition parses, with the Go
// runtime's and the process's series, and Families finds series by label.
func TestRegistryHasGoAndProcessSeries(t *testing.T) {
	reg := NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "x_total", Help: "Calls.\nWith a \\ backslash."}, []string{"ws", "g"})
	reg.MustRegister(c)
	c.WithLabelValues(`a"b`, "line\nbreak\\").Add(3)
	c.WithLabelValues("a", "plain").Inc()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range families {
		if err := enc.Encode(f); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if v, ok := got.Value(name); !ok || v <= 0 && name != "process_cpu_seconds_total" {
			t.Errorf("%s = %v, %v; want a series", name, v, ok)
		}
	}
	if v, ok := got.Value("x_total", "g", "line\nbreak\\", "ws", `a"b`); !ok || v != 3 {
		t.Errorf("x_total{ws=a\"b} = %v, %v; want 3", v, ok)
	}
	if v, ok := got.Value("x_total", "ws", "a"); !ok || v != 1 {
		t.Errorf("x_total{ws=a} = %v, %v; want 1", v, ok)
	}
	if _, ok := got.Value("x_total", "ws", "nobody"); ok {
		t.Error("found a series with a label value nobody gave")
	}
	if _, err := Parse(strings.NewReader("x{ 1\n")); err == nil {
		t.Error("Parse accepted a broken line")
	}
}
