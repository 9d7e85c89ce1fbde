package agenttest

import (
	"sync"
	"testing"
	"time"
)

// Events collects the events of a chat subscription (subscribeChat's callback is Fn); it
// never blocks the delivery.
type Events struct {
	mu   sync.Mutex
	got  []map[string]any
	more chan struct{}
}

// NewEvents returns an empty collector.
func NewEvents() *Events { return &Events{more: make(chan struct{}, 1)} }

// Fn records one event.
func (c *Events) Fn(v map[string]any) {
	c.mu.Lock()
	c.got = append(c.got, v)
	c.mu.Unlock()
	select {
	case c.more <- struct{}{}:
	default:
	}
}

// Got returns a copy of the events so far.
func (c *Events) Got() []map[string]any {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]map[string]any(nil), c.got...)
}

// Await waits up to within until ready holds for the events so far, and fails t with what
// (and the events) if it never does.
func (c *Events) Await(t testing.TB, within time.Duration, what string, ready func([]map[string]any) bool) {
	t.Helper()
	deadline := time.After(within)
	for {
		got := c.Got()
		if ready(got) {
			return
		}
		select {
		case <-c.more:
		case <-deadline:
			t.Fatalf("%s: not among %d events within %v: %v", what, len(got), within, got)
		}
	}
}

// WaitFor returns the first event for which match holds, waiting up to within for it.
func (c *Events) WaitFor(t testing.TB, within time.Duration, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	var found map[string]any
	c.Await(t, within, "no "+what, func(got []map[string]any) bool {
		for _, e := range got {
			if match(e) {
				found = e
				return true
			}
		}
		return false
	})
	return found
}
