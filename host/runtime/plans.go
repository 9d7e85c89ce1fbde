package runtime

import (
	"sync"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/internal/dataseg"
)

// planTable shares memory plans (the image memfds the memory creator maps, RATIONALE.md
// "Memory cap") between the open components of a Runtime compiled from the same source: a
// plan depends on the source's bytes only, so one set of images serves them all, and
// compiling or loading an open component's source again does not rebuild them. An entry
// lives while a component uses it.
type planTable struct {
	mu sync.Mutex
	m  map[[32]byte]*sharedPlan
}

// sharedPlan is the plan of one source; plan is nil when the source has none.
type sharedPlan struct {
	t     *planTable
	key   [32]byte
	plan  *capi.MemoryPlan
	users int // guarded by t.mu
}

// acquire returns the plan of the source whose sha256 is key, made from layout when no open
// component uses it, with one more user; the caller releases it.
func (t *planTable) acquire(key [32]byte, layout func() *dataseg.Layout) (*sharedPlan, error) {
	t.mu.Lock()
	sp := t.m[key]
	if sp != nil {
		sp.users++
	}
	t.mu.Unlock()
	if sp != nil {
		return sp, nil
	}
	made := &sharedPlan{t: t, key: key, users: 1}
	if l := layout(); l != nil {
		mp, err := capi.NewMemoryPlan(l)
		if err != nil {
			return nil, err
		}
		made.plan = mp
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if sp := t.m[key]; sp != nil { // made meanwhile by another goroutine
		sp.users++
		if made.plan != nil {
			made.plan.Close()
		}
		return sp, nil
	}
	if t.m == nil {
		t.m = make(map[[32]byte]*sharedPlan)
	}
	t.m[key] = made
	return made, nil
}

// release drops one user; the last one closes the plan (components keep what they use).
func (sp *sharedPlan) release() {
	t := sp.t
	t.mu.Lock()
	sp.users--
	last := sp.users == 0
	if last {
		delete(t.m, sp.key)
	}
	t.mu.Unlock()
	if last && sp.plan != nil {
		sp.plan.Close()
	}
}
