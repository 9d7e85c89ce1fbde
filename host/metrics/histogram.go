// Package metrics holds the few instruments Atelier measures itself with, cheap enough for
// the gadget call path (atomics only, no locks, no allocation), and writes them in the
// Prometheus text exposition format (version 0.0.4). It has no global registry: whoever owns
// the instruments decides what to expose.
package metrics

import (
	"math"
	"sync/atomic"
	"time"
)

// Bounds are the upper bounds of a Histogram's buckets, from 25 µs to 30 s (a gadget call
// is bounded by the call timeout); a last, unbounded bucket takes the rest.
var Bounds = [...]time.Duration{
	25 * time.Microsecond, 50 * time.Microsecond, 100 * time.Microsecond, 250 * time.Microsecond, 500 * time.Microsecond,
	time.Millisecond, 2500 * time.Microsecond, 5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond,
	50 * time.Millisecond, 100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second,
}

// Histogram counts durations in the fixed buckets of Bounds. The zero value is ready; it is
// safe for concurrent use and Observe takes no lock.
type Histogram struct {
	counts [len(Bounds) + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// Observe adds one duration (negative ones count as zero).
func (h *Histogram) Observe(d time.Duration) {
	d = max(d, 0)
	i := 0
	for i < len(Bounds) && d > Bounds[i] {
		i++
	}
	h.counts[i].Add(1)
	h.sum.Add(int64(d))
}

// Snapshot copies the histogram's counts. Observations that race with it may be seen in the
// counts but not yet in the sum, or the other way round.
func (h *Histogram) Snapshot() HistogramSnapshot {
	var s HistogramSnapshot
	for i := range h.counts {
		s.Counts[i] = h.counts[i].Load()
		s.Count += s.Counts[i]
	}
	s.Sum = time.Duration(h.sum.Load())
	return s
}

// HistogramSnapshot is a Histogram's state at one moment.
type HistogramSnapshot struct {
	// Counts are the observations per bucket (not cumulative); the last is beyond Bounds.
	Counts [len(Bounds) + 1]uint64
	// Count is the number of observations and Sum their total.
	Count uint64
	Sum   time.Duration
}

// Quantile estimates the q-quantile (0 <= q <= 1) by linear interpolation inside the bucket
// that holds it, as Prometheus' histogram_quantile does: the estimate is at most one bucket
// width off. It is 0 without observations, and the largest bound when the quantile falls in
// the unbounded bucket.
func (s HistogramSnapshot) Quantile(q float64) time.Duration {
	if s.Count == 0 || math.IsNaN(q) {
		return 0
	}
	q = min(max(q, 0), 1)
	rank := q * float64(s.Count)
	var below uint64
	for i, n := range s.Counts {
		if n == 0 || float64(below+n) < rank {
			below += n
			continue
		}
		if i == len(Bounds) {
			return Bounds[len(Bounds)-1]
		}
		lo := time.Duration(0)
		if i > 0 {
			lo = Bounds[i-1]
		}
		frac := (rank - float64(below)) / float64(n)
		return lo + time.Duration(frac*float64(Bounds[i]-lo))
	}
	return Bounds[len(Bounds)-1]
}
