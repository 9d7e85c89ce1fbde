package kernel

import (
	"context"
	"sync"

	"atelier/host/runtime"
	"atelier/host/store"
)

// codeCache shares compiled components by code hash: every actor running the same code uses
// one Component, which is closed when the last of them stops, so idle gadgets hold no
// compiled code.
type codeCache struct {
	rt *runtime.Runtime
	st store.Store

	mu sync.Mutex // guards m
	m  map[string]*sharedCode
}

// sharedCode is one component and the number of actors using it.
type sharedCode struct {
	ready chan struct{} // closed once comp or err is set
	comp  *runtime.Component
	err   error
	refs  int
}

func newCodeCache(rt *runtime.Runtime, st store.Store) *codeCache {
	return &codeCache{rt: rt, st: st, m: map[string]*sharedCode{}}
}

// acquire returns the component of the code with hash sha, loading it when no actor uses it;
// each successful acquire must be paired with a release.
func (c *codeCache) acquire(ctx context.Context, sha string) (*runtime.Component, error) {
	c.mu.Lock()
	sc := c.m[sha]
	if sc != nil {
		sc.refs++
		c.mu.Unlock()
		<-sc.ready
	} else {
		sc = &sharedCode{ready: make(chan struct{}), refs: 1}
		c.m[sha] = sc
		c.mu.Unlock()
		sc.comp, sc.err = c.load(ctx, sha)
		close(sc.ready)
	}
	if sc.err != nil {
		c.release(sha)
		return nil, sc.err
	}
	return sc.comp, nil
}

func (c *codeCache) load(ctx context.Context, sha string) (*runtime.Component, error) {
	code, err := c.st.Code(ctx, sha)
	if err != nil {
		return nil, err
	}
	return c.rt.Compile(ctx, code)
}

// release drops one use of sha's component, closing it after the last.
func (c *codeCache) release(sha string) {
	c.mu.Lock()
	sc := c.m[sha]
	sc.refs--
	last := sc.refs == 0
	if last {
		delete(c.m, sha)
	}
	c.mu.Unlock()
	if last && sc.comp != nil {
		sc.comp.Close()
	}
}

// count returns the number of components held.
func (c *codeCache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
