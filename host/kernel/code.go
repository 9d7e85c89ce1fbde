package kernel

import (
	"context"
	"sync"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
	"atelier/host/runtime/wit/tsdecl"
	"atelier/host/store"
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

// surface is a code version's RPC surface: what Code Mode lists and binds without running it.
type surface struct {
	exports   map[string]exportFunc    // RPC name -> the export (exportNames)
	resources map[string]*resourceType // a component's exported resources (exportNames)
	items     []wit.Item               // a component's public exports (Audit.PublicExports); nil for a JS gadget
}

// maxSurfaces bounds the remembered surfaces; the set starts over when full.
const maxSurfaces = 1024

// surfaces remembers the surface of each code version (by hash) once learned: a component's
// from its compiled form, a JS gadget's from a loaded instance.
type surfaces struct {
	mu sync.Mutex
	m  map[string]*surface
}

func (s *surfaces) get(sha string) *surface {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[sha]
}

func (s *surfaces) put(sha string, sf *surface) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil || len(s.m) >= maxSurfaces {
		s.m = map[string]*surface{}
	}
	s.m[sha] = sf
}

// component returns the surface of comp, the compiled code with hash sha.
func (s *surfaces) component(sha string, comp *runtime.Component) *surface {
	if sf := s.get(sha); sf != nil {
		return sf
	}
	items, _ := tsdecl.Distinct(comp.Audit().PublicExports()) // checkComponent refused collisions
	exports, resources := exportNames(items)
	sf := &surface{exports: exports, resources: resources, items: items}
	s.put(sha, sf)
	return sf
}

// surfaceOf returns the surface of gadget g's current version. A component is only compiled
// (or found among the programs in use), never instantiated; a JS gadget's methods are known
// once it has loaded, so the first time its actor is loaded.
func (ov *overseer) surfaceOf(ctx context.Context, g store.Gadget) (*surface, error) {
	v, ok := g.CurrentVersion()
	if !ok {
		return nil, fail(CodeInternal, "gadget %s has no current version %d", g.Name, g.Current)
	}
	k := ov.k
	if sf := k.surfaces.get(v.SHA256); sf != nil {
		return sf, nil
	}
	prog, err := k.code.acquire(ctx, v.SHA256)
	if err != nil {
		return nil, wrapErr(err, "load gadget %s", g.Name)
	}
	defer k.code.release(v.SHA256)
	if prog.comp != nil {
		return k.surfaces.component(v.SHA256, prog.comp), nil
	}
	a, err := ov.actor(ctx, g.ID)
	if err != nil {
		return nil, err
	}
	sf := &surface{exports: a.exports}
	k.surfaces.put(a.sha, sf)
	return sf, nil
}
