package kernel

import (
	"context"
	"sync"

	"atelier/host/runtime"
)

// program is a code version in runnable form: a compiled component, or the files of a JS
// gadget (which the kernel's JavaScript engine runs).
type program struct {
	comp  *runtime.Component // nil for a JS gadget
	files map[string]string  // a JS gadget's sources
}

// codeCache shares programs by code hash: every actor running the same code uses one, and a
// compiled component is closed when the last of them stops, so idle gadgets hold no compiled
// code.
type codeCache struct {
	k *Kernel

	mu sync.Mutex // guards m
	m  map[string]*sharedCode
}

// sharedCode is one program and the number of actors using it.
type sharedCode struct {
	ready chan struct{} // closed once prog or err is set
	prog  *program
	err   error
	refs  int
}

func newCodeCache(k *Kernel) *codeCache {
	return &codeCache{k: k, m: map[string]*sharedCode{}}
}

// acquire returns the program of the code with hash sha, loading it when no actor uses it;
// each successful acquire must be paired with a release.
func (c *codeCache) acquire(ctx context.Context, sha string) (*program, error) {
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
		sc.prog, sc.err = c.load(ctx, sha)
		close(sc.ready)
	}
	if sc.err != nil {
		c.release(sha)
		return nil, sc.err
	}
	return sc.prog, nil
}

func (c *codeCache) load(ctx context.Context, sha string) (*program, error) {
	code, err := c.k.st.Code(ctx, sha)
	if err != nil {
		return nil, err
	}
	if isBundle(code) {
		files, err := unpackBundle(code, c.k.cfg.MaxCode)
		return &program{files: files}, err
	}
	comp, err := c.k.cfg.Runtime.Compile(ctx, code)
	return &program{comp: comp}, err
}

// release drops one use of sha's program, closing it after the last.
func (c *codeCache) release(sha string) {
	c.mu.Lock()
	sc := c.m[sha]
	sc.refs--
	last := sc.refs == 0
	if last {
		delete(c.m, sha)
	}
	c.mu.Unlock()
	if last && sc.prog != nil && sc.prog.comp != nil {
		sc.prog.comp.Close()
	}
}

// count returns the number of programs held.
func (c *codeCache) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}
