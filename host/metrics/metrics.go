// Package metrics holds what Atelier's instruments share on top of
// github.com/prometheus/client_golang: the server's registry with the standard Go runtime and
// process collectors, the latency buckets of the gadget call histograms, and the quantile
// estimate the workspace's metrics() API derives from a histogram, and a reader of the text
// format for tests and tools. There is no global
// registry: the server makes one with NewRegistry and passes it to whoever exposes metrics.
package metrics

import (
	"fmt"
	"io"
	"math"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Buckets are the upper bounds, in seconds, of the latency histograms' buckets: from 25 µs to
// 30 s (a gadget call is bounded by the call timeout); the +Inf bucket takes the rest.
var Buckets = []float64{
	25e-6, 50e-6, 100e-6, 250e-6, 500e-6,
	0.001, 0.0025, 0.005, 0.01, 0.025,
	0.05, 0.1, 0.25, 0.5,
	1, 2.5, 5, 10, 30,
}

// NewRegistry returns a new registry holding the Go runtime collector (go_* series) and the
// collector of this process (process_* series).
func NewRegistry() *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Quantile estimates the q-quantile (0 <= q <= 1) of histogram h, in its unit, by linear
// interpolation inside the bucket that holds it, as Prometheus' histogram_quantile does: the
// estimate is at most one bucket width off. It is 0 without observations, and the largest
// finite bound when the quantile falls in the +Inf bucket.
func Quantile(h *dto.Histogram, q float64) float64 {
	count := h.GetSampleCount()
	if count == 0 || math.IsNaN(q) {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := q * float64(count)
	var lo float64 // the lower bound of the current bucket
	var below uint64
	last := 0.0
	for _, b := range h.GetBucket() {
		ub, cum := b.GetUpperBound(), b.GetCumulativeCount()
		if math.IsInf(ub, +1) {
			break
		}
		last = ub
		if n := cum - below; n > 0 && float64(cum) >= rank {
			return lo + (rank-float64(below))/float64(n)*(ub-lo)
		}
		lo, below = ub, cum
	}
	return last
}

// Families are metric families by name, as Parse reads them.
type Families map[string]*dto.MetricFamily

// Parse reads metrics in the Prometheus text exposition format (what GET /metrics serves by
// default), for tests and tools that check a server's metrics.
func Parse(r io.Reader) (Families, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	f, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return f, nil
}

// Find returns the series of family name that has the labels given as name, value pairs
// (and maybe others), or nil.
func (f Families) Find(name string, labels ...string) *dto.Metric {
	for _, m := range f[name].GetMetric() {
		if hasLabels(m, labels) {
			return m
		}
	}
	return nil
}

// Value returns the value of the counter or gauge series that Find finds, and whether there
// is one.
func (f Families) Value(name string, labels ...string) (float64, bool) {
	m := f.Find(name, labels...)
	switch {
	case m == nil:
		return 0, false
	case m.Counter != nil:
		return m.Counter.GetValue(), true
	case m.Gauge != nil:
		return m.Gauge.GetValue(), true
	case m.Untyped != nil:
		return m.Untyped.GetValue(), true
	}
	return 0, false
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
