package kernel

import (
	"context"
	"slices"

	"atelier/host/store"
)

// frozen is a set of gadgets whose state nothing else touches until thaw: the turns of their
// live actors are held, with every commit those actors submitted durable, and no new actor of
// them starts (newActor waits for the fence). A dry run's commit checks and writes their state
// in between.
type frozen struct {
	ov    *overseer
	ids   []store.GadgetID
	held  []*actor
	fence chan struct{}
}

// freeze freezes gadgets ids. Turns are taken as in any call (an actor busy past ctx fails
// the freeze, which then holds nothing).
func (ov *overseer) freeze(ctx context.Context, ids []store.GadgetID) (*frozen, error) {
	fz := &frozen{ov: ov, ids: slices.Clone(ids), fence: make(chan struct{})}
	slices.Sort(fz.ids)
	for {
		ov.mu.Lock()
		if ov.stopped {
			ov.mu.Unlock()
			fz.release(nil)
			return nil, errStopped
		}
		var other chan struct{} // another freeze of one of ids
		var missing []*actor
		for _, id := range fz.ids {
			if ch := ov.fences[id]; ch != nil {
				other = ch
			}
			if a := ov.actors[id]; a != nil && !slices.Contains(fz.held, a) {
				missing = append(missing, a)
			}
		}
		if other == nil && len(missing) == 0 {
			if ov.fences == nil {
				ov.fences = map[store.GadgetID]chan struct{}{}
			}
			for _, id := range fz.ids {
				ov.fences[id] = fz.fence
			}
			ov.mu.Unlock()
			return fz, nil
		}
		ov.mu.Unlock()
		if other != nil {
			select {
			case <-other:
				continue
			case <-ctx.Done():
				fz.release(nil)
				return nil, fail(CodeGadgetError, "gadget busy: another commit holds it: %v", ctx.Err())
			}
		}
		for _, a := range missing {
			if err := fz.take(ctx, a); err != nil {
				fz.release(nil)
				return nil, err
			}
		}
	}
}

// take holds a's turn once its last commit is durable (a closed actor is let go: it is no
// longer registered).
func (fz *frozen) take(ctx context.Context, a *actor) error {
	select {
	case <-a.ready:
	case <-ctx.Done():
		return fail(CodeGadgetError, "gadget busy: %v", ctx.Err())
	}
	if err := a.lock(ctx); err != nil {
		return err
	}
	if a.closed {
		a.unlock()
		return nil
	}
	if a.gate != nil {
		if err := a.gate.Wait(); err != nil {
			a.unlock()
			return wrapErr(err, "save the gadget's state")
		}
	}
	fz.held = append(fz.held, a)
	return nil
}

// release ends the freeze. The held actors of the gadgets in restart are stopped (the next
// call loads a fresh instance that reads the state just committed, since a live instance may
// keep state of its own); the others are let go as they are.
func (fz *frozen) release(restart map[store.GadgetID]bool) {
	ov := fz.ov
	ov.mu.Lock()
	for _, id := range fz.ids {
		if ov.fences[id] == fz.fence {
			delete(ov.fences, id)
		}
	}
	for _, a := range fz.held {
		if restart[a.id] && ov.actors[a.id] == a {
			delete(ov.actors, a.id)
		}
	}
	ov.mu.Unlock()
	close(fz.fence)
	for _, a := range fz.held {
		if restart[a.id] {
			a.closeLocked()
		} else {
			a.unlock()
		}
	}
}

// awaitFence waits while a freeze holds gadget id; ov.mu is held and held again on return.
func (ov *overseer) awaitFence(ctx context.Context, id store.GadgetID) error {
	for ch := ov.fences[id]; ch != nil; ch = ov.fences[id] {
		ov.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			ov.mu.Lock()
			return fail(CodeGadgetError, "gadget busy: a dry run is being committed to it: %v", ctx.Err())
		}
		ov.mu.Lock()
	}
	return nil
}
