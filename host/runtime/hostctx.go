package runtime

import (
	"context"
	"sync"
	"time"
)

// deadlineCtx is the context host functions get during a call: the call's context bounded by
// the call's deadline. Most host functions never wait on their context (a kv get or set reads
// a deadline or a value at most), so the timer context that enforces the deadline is made only
// when something asks for Done, or asks for Err once the deadline has passed or the call's
// context ended. Until then a call costs no timer and no registration with its parent, which
// for a call arriving over Cap'n Web would also make the call's own cancellable context
// (capnweb makes it lazily, on its first Done).
type deadlineCtx struct {
	parent   context.Context
	deadline time.Time

	mu     sync.Mutex // host functions may hand the context to other goroutines
	inner  context.Context
	cancel context.CancelFunc
	ended  bool // the call returned: the context is cancelled
}

// newDeadlineCtx returns parent bounded by deadline, and the function that ends it when the
// call returns.
func newDeadlineCtx(parent context.Context, deadline time.Time) (*deadlineCtx, context.CancelFunc) {
	c := &deadlineCtx{parent: parent, deadline: deadline}
	return c, c.end
}

// Deadline implements context.Context.
func (c *deadlineCtx) Deadline() (time.Time, bool) { return c.deadline, true }

// Done implements context.Context: the timer context's, made on first use.
func (c *deadlineCtx) Done() <-chan struct{} { return c.timed().Done() }

// Err implements context.Context. Before anything asked for Done it tells from the clock and
// the parent whether the context has ended, and then makes the timer context, so that Done is
// closed whenever Err is not nil.
func (c *deadlineCtx) Err() error {
	c.mu.Lock()
	inner, ended := c.inner, c.ended
	c.mu.Unlock()
	if inner != nil {
		return inner.Err()
	}
	if ended || !time.Now().Before(c.deadline) || c.parent.Err() != nil {
		return c.timed().Err()
	}
	return nil
}

// Value implements context.Context. Once the timer context exists, values go through it, so
// that a context made from this one (which asks for Done first) finds the timer context as its
// cancellable parent and registers with it directly.
func (c *deadlineCtx) Value(key any) any {
	c.mu.Lock()
	inner := c.inner
	c.mu.Unlock()
	if inner != nil {
		return inner.Value(key)
	}
	return c.parent.Value(key)
}

// timed returns the timer context, making it on first use (cancelled at once if the call has
// returned).
func (c *deadlineCtx) timed() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancel = context.WithDeadline(c.parent, c.deadline)
		if c.ended {
			c.cancel()
		}
	}
	return c.inner
}

// end cancels the context: the call returned.
func (c *deadlineCtx) end() {
	c.mu.Lock()
	c.ended = true
	cancel := c.cancel
	c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}
