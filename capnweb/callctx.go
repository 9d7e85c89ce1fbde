package capnweb

import (
	"context"
	"sync"
	"time"
)

// callCtx is the context a handler receives: a child of the session's context that also ends
// when the caller drops the result, and that carries the call's turn on its target's queue.
// Most handlers never look at their context's Done channel, so the cancellable child context
// is only made when something asks for it (Done, or a Value other than the session and turn,
// which is how the context package attaches children).
type callCtx struct {
	parent context.Context
	turn   *turn // set before the handler runs

	mu        sync.Mutex
	inner     context.Context
	cancelFn  context.CancelFunc
	cancelled bool
}

func (c *callCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

func (c *callCtx) Done() <-chan struct{} { return c.child().Done() }

func (c *callCtx) Err() error {
	c.mu.Lock()
	inner, cancelled := c.inner, c.cancelled
	c.mu.Unlock()
	switch {
	case inner != nil:
		return inner.Err()
	case cancelled:
		return context.Canceled
	}
	return c.parent.Err()
}

func (c *callCtx) Value(key any) any {
	switch key.(type) {
	case turnKey:
		if c.turn == nil {
			return nil
		}
		return c.turn
	case sessionKey:
		return c.parent.Value(key)
	}
	return c.child().Value(key)
}

// child returns the cancellable context, making it on first use.
func (c *callCtx) child() context.Context {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inner == nil {
		c.inner, c.cancelFn = context.WithCancel(c.parent)
		if c.cancelled {
			c.cancelFn()
		}
	}
	return c.inner
}

// cancel ends the context (the caller dropped the result, or the call is over).
func (c *callCtx) cancel() {
	c.mu.Lock()
	c.cancelled = true
	fn := c.cancelFn
	c.mu.Unlock()
	if fn != nil {
		fn()
	}
}
