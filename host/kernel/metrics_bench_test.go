package kernel

import (
	"errors"
	"testing"
	"time"
)

// BenchmarkCallMetrics is what the metrics add to every gadget call: record() when the reply
// is released (a clock read, the histogram and the counters; the arrival time run() takes
// also serves the actor's idle clock, which read it before), serially and with all callers on
// one gadget's counters.
func BenchmarkCallMetrics(b *testing.B) {
	s := newCallMetrics().gadget("ws", "g", "counter")
	fail := errors.New("x")
	start := time.Now()
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			s.record(start, nil)
		}
	})
	b.Run("parallel-one-gadget", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				var err error
				if i%100 == 0 {
					err = fail
				}
				s.record(start, err)
			}
		})
	})
}
