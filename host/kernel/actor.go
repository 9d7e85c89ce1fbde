package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/runtime"
	"atelier/host/store"
)

// actor is a gadget's live side: its compiled current version and the slot holding its one
// instance. Calls run one at a time (mu); each is one transaction over the gadget's state.
type actor struct {
	ov *overseer
	id store.GadgetID

	ready   chan struct{} // closed once comp/slot or loadErr is set
	comp    *runtime.Component
	slot    *runtime.Slot
	loadErr error

	lastUsed atomic.Int64 // unix nanoseconds

	turn    chan struct{} // a token held for a whole call; guards closed, kv and pending
	closed  bool
	kv      *txKV
	pending []events.Event
}

// actor returns the live actor of gadget id, loading it on first use.
func (ov *overseer) actor(ctx context.Context, id store.GadgetID) (*actor, error) {
	ov.touch()
	ov.mu.RLock()
	a, stopped := ov.actors[id], ov.stopped
	ov.mu.RUnlock()
	if stopped {
		return nil, errStopped
	}
	if a == nil {
		var err error
		if a, err = ov.newActor(ctx, id); err != nil {
			return nil, err
		}
	}
	select {
	case <-a.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if a.loadErr != nil {
		ov.dropActor(a)
		return nil, a.loadErr
	}
	return a, nil
}

// newActor registers an actor for gadget id (unless another call just did) and loads it.
func (ov *overseer) newActor(ctx context.Context, id store.GadgetID) (*actor, error) {
	ov.mu.Lock()
	if ov.stopped {
		ov.mu.Unlock()
		return nil, errStopped
	}
	if a := ov.actors[id]; a != nil {
		ov.mu.Unlock()
		return a, nil
	}
	g, ok := ov.gadgets[id]
	if !ok {
		ov.mu.Unlock()
		return nil, fail(CodeNotFound, "the gadget was deleted")
	}
	a := &actor{ov: ov, id: id, ready: make(chan struct{}), turn: make(chan struct{}, 1)}
	a.lastUsed.Store(time.Now().UnixNano())
	ov.actors[id] = a
	ov.mu.Unlock()
	a.load(ctx, g)
	return a, nil
}

// load compiles the gadget's current version and prepares its slot.
func (a *actor) load(ctx context.Context, g store.Gadget) {
	defer close(a.ready)
	k := a.ov.k
	v, ok := g.CurrentVersion()
	if !ok {
		a.loadErr = fail(CodeInternal, "gadget %s has no current version %d", g.Name, g.Current)
		return
	}
	code, err := k.st.Code(ctx, v.SHA256)
	if err != nil {
		a.loadErr = wrapErr(err, "load gadget %s", g.Name)
		return
	}
	comp, err := k.cfg.Runtime.Compile(ctx, code)
	if err != nil {
		a.loadErr = wrapErr(err, "load gadget %s", g.Name)
		return
	}
	a.kv = &txKV{ws: a.ov.ws, g: g.ID, pending: map[string][]byte{}}
	a.comp = comp
	a.slot = k.cfg.Runtime.NewSlot(comp, runtime.InstanceConfig{
		Name:    string(g.ID),
		Grants:  grantSet(g.Grants),
		Limits:  k.cfg.Limits,
		Console: a.console,
		Bind: map[string]any{
			kv.Grant:      a.kv,
			events.Grant:  publisher{a},
			BindingsGrant: bindingCaller{a},
		},
	})
}

// call runs one call of export fn: the gadget's writes are committed before it returns, and
// its events are delivered after that. A trap discards both; the next call gets a fresh
// instance.
func (a *actor) call(ctx context.Context, fn string, args []any) (any, error) {
	if err := a.lock(ctx); err != nil {
		return nil, err
	}
	defer a.unlock()
	if a.closed {
		return nil, errStopped
	}
	a.lastUsed.Store(time.Now().UnixNano())
	a.ov.touch()
	defer a.lastUsed.Store(time.Now().UnixNano())
	res, err := a.slot.Call(withCaller(ctx, a.id), fn, args...)
	var trap *runtime.TrapError
	if errors.As(err, &trap) {
		a.kv.discard()
		a.pending = nil
		return nil, err
	}
	if muts := a.kv.take(); len(muts) > 0 {
		if cerr := a.ov.ws.Commit(ctx, muts); cerr != nil {
			// The instance's memory may reflect writes that did not happen: drop it.
			a.pending = nil
			_ = a.slot.Close()
			a.closed = true
			a.ov.dropActor(a)
			if errors.Is(cerr, store.ErrFenced) {
				go a.ov.stop()
			}
			return nil, wrapErr(cerr, "save the gadget's state")
		}
	}
	evs := a.pending
	a.pending = nil
	for _, ev := range evs {
		var payload any
		if json.Unmarshal(ev.Payload, &payload) == nil { // validated by the capability
			a.ov.k.hub.publish(eventsTopic(a.ov.id, a.id), map[string]any{"topic": ev.Topic, "payload": payload})
		}
	}
	return res, err
}

// lock waits for the actor's turn (or ctx: a call through a binding must not wait forever).
func (a *actor) lock(ctx context.Context) error {
	select {
	case a.turn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fail(CodeGadgetError, "gadget busy: %v", ctx.Err())
	}
}

// tryLock takes the actor's turn if it is free.
func (a *actor) tryLock() bool {
	select {
	case a.turn <- struct{}{}:
		return true
	default:
		return false
	}
}

func (a *actor) unlock() { <-a.turn }

// retire waits for the call in flight, then stops the actor.
func (a *actor) retire() {
	<-a.ready
	a.turn <- struct{}{}
	a.closeLocked()
}

// closeLocked stops the actor; the caller holds its turn, which is released.
func (a *actor) closeLocked() {
	a.closed = true
	a.unlock()
	if a.slot != nil {
		_ = a.slot.Close()
		a.comp.Close()
	}
}

// dropActor unregisters a (if still registered).
func (ov *overseer) dropActor(a *actor) {
	ov.mu.Lock()
	if ov.actors[a.id] == a {
		delete(ov.actors, a.id)
	}
	ov.mu.Unlock()
}

// retireActor stops gadget id's actor, if any, so that the next call loads the current record.
func (ov *overseer) retireActor(id store.GadgetID) {
	ov.mu.Lock()
	a := ov.actors[id]
	delete(ov.actors, id)
	ov.mu.Unlock()
	if a != nil {
		a.retire()
	}
}

// console sends a console line to the workspace's and the gadget's log subscribers.
func (a *actor) console(l runtime.ConsoleLine) {
	name := string(a.id)
	if g, err := a.ov.gadget(a.id); err == nil {
		name = g.Name
	}
	line := map[string]any{"gadget": name, "stream": l.Stream, "level": l.Level, "text": l.Text, "time": time.Now().UTC()}
	a.ov.k.hub.publish(consoleTopic(a.ov.id, ""), line)
	a.ov.k.hub.publish(consoleTopic(a.ov.id, a.id), line)
}

// publisher buffers a gadget's events until its call commits.
type publisher struct{ a *actor }

// Publish implements events.Publisher; it runs inside the actor's call (its turn held).
func (p publisher) Publish(_ context.Context, ev events.Event) error {
	if len(p.a.pending) >= maxEventsPerCall {
		return errors.New("too many events in one call")
	}
	p.a.pending = append(p.a.pending, ev)
	return nil
}

const maxEventsPerCall = 1000

// grantSet is what a gadget may import: the harmless WASI baseline plus its grants.
func grantSet(grants []string) []string {
	return append(runtime.WASIBaseline(), slices.Clone(grants)...)
}
