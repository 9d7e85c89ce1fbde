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
	"atelier/jsruntime"
)

// actor is a gadget's live side: its compiled current version (shared with every gadget
// running the same code) and the slot holding its one instance. Calls run in the instance one
// at a time (the turn); each is one transaction over the gadget's state.
//
// Output gate: a call hands its writes to the actor's commit chain and gives up the turn at
// once, so the next call runs while the commit is being written (and shares its fsync with
// others); the next call's reads see the writes through txKV's overlay. A call's reply and
// events are held until its own commit, or the latest commit before it when it wrote
// nothing, is durable. When a commit fails, every call holding a reply behind it fails too and
// the actor is reset: its instance and overlay are dropped and the next call starts afresh
// from the store.
type actor struct {
	ov *overseer
	id store.GadgetID

	ready   chan struct{} // closed once prog/exec or loadErr is set
	sha     string        // the code's hash, whose shared program prog is
	prog    *program
	exec    runner                // the instance: comp, or a jsruntime.Gadget
	comp    *componentExec        // a component's instance (nil for a JS gadget)
	exports map[string]exportFunc // RPC name ("fn", "iface.fn") -> the export
	// resources are the component's exported resource types by resourceKey.
	resources map[string]*resourceType
	loadErr   error

	lastUsed atomic.Int64 // unix nanoseconds
	trimmed  atomic.Int64 // the lastUsed the instance was last trimmed at (trim)
	mem      *memAccount  // the instance's memory under the workspace and host quotas
	binds    bool         // the gadget may call bindings: calls carry the call chain
	topics   actorTopics
	stats    *gadgetStats // the gadget's call metrics (metrics.go)

	turn    chan struct{} // a token held while a call runs; guards everything below
	closed  bool
	kv      *txKV
	pending []events.Event
	chain   store.CommitChain
	seq     uint64         // number of commits submitted to chain
	gate    *store.Pending // the latest submitted commit (nil: none yet)
	evTurn  chan struct{}  // closed once the latest call with events has published them
}

// runner runs a gadget's calls in its one live instance, replacing the instance when a call
// retires it (componentExec for a component, jsruntime.Gadget for a JS gadget).
type runner interface {
	Call(ctx context.Context, fn string, args ...any) (any, error)
	// Trim gives the kernel back the live instance's memory that a fresh instance would read
	// the same (runtime.Instance.Trim) and returns its bytes.
	Trim() int64
	Close() error
}

// actor returns the live actor of gadget id, loading it on first use.
func (ov *overseer) actor(ctx context.Context, id store.GadgetID) (*actor, error) {
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
	if !a.loaded() { // ctx.Done() may make a context: only when there is something to wait for
		select {
		case <-a.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if a.loadErr != nil {
		ov.dropActor(a)
		return nil, a.loadErr
	}
	return a, nil
}

// newActor registers an actor for gadget id (unless another call just did) and loads it,
// within the workspace's live_instances (admitActor).
func (ov *overseer) newActor(ctx context.Context, id store.GadgetID) (*actor, error) {
	ov.mu.Lock()
	for {
		if err := ov.awaitFence(ctx, id); err != nil { // a dry run's commit (dryfreeze.go)
			ov.mu.Unlock()
			return nil, err
		}
		if ov.stopped {
			ov.mu.Unlock()
			return nil, errStopped
		}
		if a := ov.actors[id]; a != nil {
			ov.mu.Unlock()
			return a, nil
		}
		admitted, err := ov.admitActor()
		if err != nil {
			ov.mu.Unlock()
			return nil, err
		}
		if admitted {
			break
		}
	}
	g, ok := ov.gadgets[id]
	if !ok {
		ov.mu.Unlock()
		return nil, fail(CodeNotFound, "the gadget was deleted")
	}
	a := &actor{ov: ov, id: id, ready: make(chan struct{}), turn: make(chan struct{}, 1), binds: slices.Contains(g.Grants, BindingsGrant),
		topics: actorTopics{events: eventsTopic(ov.id, id), console: consoleTopic(ov.id, ""), gadgetConsole: consoleTopic(ov.id, id)},
		stats:  ov.k.metrics.gadget(ov.id, id, g.Name)}
	a.mem = ov.newAccount(a)
	a.lastUsed.Store(time.Now().UnixNano())
	ov.actors[id] = a
	ov.mu.Unlock()
	a.load(ctx, g)
	return a, nil
}

// load gets the shared program of the gadget's current version and prepares its instance.
func (a *actor) load(ctx context.Context, g store.Gadget) {
	defer close(a.ready)
	defer func() { // before ready: the instance is counted before anything can close it
		if a.loadErr == nil && a.exec != nil {
			a.stats.live.Add(1)
			a.stats.started.Add(1)
		}
	}()
	k := a.ov.k
	v, ok := g.CurrentVersion()
	if !ok {
		a.loadErr = fail(CodeInternal, "gadget %s has no current version %d", g.Name, g.Current)
		return
	}
	used, err := a.ov.ws.Usage(g.ID)
	if err != nil {
		a.loadErr = wrapErr(err, "load gadget %s", g.Name)
		return
	}
	meta, err := a.ov.snapshot()
	if err != nil {
		a.loadErr = wrapErr(err, "load gadget %s", g.Name)
		return
	}
	owner := meta.Owner
	prog, err := k.code.acquire(ctx, v.SHA256)
	if err != nil {
		a.loadErr = wrapErr(err, "load gadget %s", g.Name)
		return
	}
	a.sha, a.prog = v.SHA256, prog
	a.kv = newTxKV(a.ov.ws, g.ID, k.cfg.GadgetQuota, used,
		func(ctx context.Context, n int64) error { return k.addStored(ctx, owner, n) },
		func(n int64) { k.freeStored(owner, n) })
	a.chain = a.ov.ws.Chain()
	bind := map[string]any{
		kv.Grant:      a.kv,
		events.Grant:  publisher{a},
		BindingsGrant: bindingCaller{a},
		HooksGrant:    gadgetHooks{a},
	}
	if prog.comp != nil {
		a.comp = newComponentExec(k.cfg.Runtime, prog.comp, runtime.InstanceConfig{
			Name: string(g.ID), Grants: a.ov.k.grantSet(g.Grants), Limits: k.cfg.Limits, Console: a.console, Bind: bind, Account: a.mem,
		})
		sf := k.surfaces.component(a.sha, prog.comp)
		a.exec, a.exports, a.resources = a.comp, sf.exports, sf.resources
		return
	}
	if a.loadErr = a.loadJS(ctx, g, bind); a.loadErr != nil {
		k.code.release(a.sha)
	}
}

// loadJS starts a JS gadget's instance and learns its methods.
func (a *actor) loadJS(ctx context.Context, g store.Gadget, bind map[string]any) error {
	eng, err := a.ov.k.jsEngine(ctx)
	if err != nil {
		return err
	}
	lim := a.ov.k.jsLimits()
	lim.Account = a.mem
	jg, err := eng.NewGadget(jsruntime.GadgetConfig{Name: string(g.ID), Files: a.prog.files, Grants: a.ov.k.grantSet(g.Grants),
		Bind: bind, Console: a.console, Limits: lim})
	if err != nil {
		return fail(CodeGadgetError, "load gadget %s: %v", g.Name, err)
	}
	// Loading runs the constructor; its writes and events go out with the first call's.
	methods, err := jg.Methods(ctx)
	if err != nil {
		_ = jg.Close()
		return wrapErr(a.mem.explain(err), "load gadget %s", g.Name)
	}
	a.exec = jg
	a.exports = make(map[string]exportFunc, len(methods))
	for _, m := range methods {
		a.exports[m] = exportFunc{name: m}
	}
	return nil
}

// reply is a call's outcome, held at the output gate until the writes it may depend on are
// durable.
type reply struct {
	a      *actor
	res    any
	err    error
	gate   *store.Pending // nil: nothing to wait for
	seq    uint64         // the commit gate is, when the call made it (0: another call's)
	start  time.Time      // when the call reached the actor, for its latency
	evs    []events.Event
	evPrev chan struct{} // closed once the previous call's events are out
	evDone chan struct{} // closed once this call's events are out
}

// held reports whether the reply must wait for a commit.
func (r *reply) held() bool {
	return r.gate != nil && !isClosed(r.gate.Done())
}

// call runs one call of export fn and returns its result once the output gate lets it go.
func (a *actor) call(ctx context.Context, fn string, args []any) (any, error) {
	r, err := a.run(ctx, fn, args, nil)
	if err != nil {
		return nil, err
	}
	return r.wait()
}

// run runs one call of export fn in the instance (or, when c is set, the stub's call c, which
// brings its own arguments), submits its writes and returns its held reply. A trap discards the
// call's writes and events; the next call gets a fresh instance.
func (a *actor) run(ctx context.Context, fn string, args []any, c *rpcCall) (*reply, error) {
	start := time.Now()
	if c == nil || c.drop == nil { // a drop ends what a counted call made
		if err := a.ov.admitCall(start.UnixNano()); err != nil {
			a.stats.record(start, err)
			return nil, err
		}
	}
	if err := a.lock(ctx); err != nil {
		if c == nil || c.drop == nil {
			a.stats.record(start, err)
		}
		return nil, err
	}
	defer a.unlock()
	if a.closed {
		return nil, errStopped // retried on a fresh actor: not counted
	}
	now := start.UnixNano() // the call's arrival: one clock read serves both
	a.ov.lastUsed.Store(now)
	if a.binds {
		ctx = withCaller(ctx, a.id)
	}
	var res any
	var err error
	if c != nil {
		res, err = c.invoke(ctx, a)
	} else {
		res, err = a.exec.Call(ctx, fn, args...)
	}
	err = tooLarge(a.mem.explain(err), "result")
	a.lastUsed.Store(now)
	r := &reply{a: a, res: res, err: err, gate: a.gate, start: start}
	if err != nil && isTrap(err) {
		a.kv.discard()
		a.pending = nil
		return r, nil
	}
	if muts := a.kv.take(a.seq + 1); len(muts) > 0 {
		a.seq++
		a.gate = a.chain.Submit(muts)
		r.gate, r.seq = a.gate, a.seq
	}
	if len(a.pending) > 0 {
		r.evs, a.pending = a.pending, nil
		r.evPrev, r.evDone = a.evTurn, make(chan struct{})
		a.evTurn = r.evDone
	}
	return r, nil
}

// isTrap reports whether err retired the instance (a trap, a deadline or memory overrun).
func isTrap(err error) bool {
	var trap *runtime.TrapError
	return errors.As(err, &trap)
}

// wait holds the reply until its gate's commit is durable, then publishes the call's events
// (in call order) and returns the result. When the commit failed, the actor is reset and the
// call fails. The call is counted in the gadget's metrics once it is released.
func (r *reply) wait() (any, error) {
	res, err := r.release()
	r.a.stats.record(r.start, err)
	return res, err
}

// release is wait without the metrics.
func (r *reply) release() (any, error) {
	if r.gate != nil {
		if err := r.gate.Wait(); err != nil {
			if r.evDone != nil {
				close(r.evDone)
			}
			r.a.reset(err)
			return nil, wrapErr(err, "save the gadget's state")
		}
		if r.seq != 0 {
			r.a.kv.landed(r.seq)
		}
	}
	if r.evDone != nil {
		if r.evPrev != nil {
			<-r.evPrev
		}
		r.a.publish(r.evs)
		close(r.evDone)
	}
	return r.res, r.err
}

// publish delivers a call's events to the gadget's subscribers.
func (a *actor) publish(evs []events.Event) { a.ov.k.hub.publishEvents(a.topics.events, evs) }

// publishEvents delivers a gadget's events to the subscribers of its events topic.
func (h *hub) publishEvents(topic string, evs []events.Event) {
	for _, ev := range evs {
		var payload any
		if json.Unmarshal(ev.Payload, &payload) == nil { // validated by the capability
			h.publish(topic, map[string]any{"topic": ev.Topic, "payload": payload})
		}
	}
}

// reset stops the actor after a failed commit, so that no call runs on state the store does
// not have: the next call loads a fresh actor. A fenced lease stops the whole workspace.
func (a *actor) reset(cause error) {
	a.turn <- struct{}{}
	if a.closed {
		a.unlock()
		return
	}
	a.ov.dropActor(a)
	a.closeLocked()
	if errors.Is(cause, store.ErrFenced) {
		go a.ov.stop()
	}
}

// lock waits for the actor's turn (or ctx: a call through a binding must not wait forever).
func (a *actor) lock(ctx context.Context) error {
	if a.tryLock() { // ctx.Done() may make a context: only when there is something to wait for
		return nil
	}
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

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// loaded reports whether the actor finished loading.
func (a *actor) loaded() bool { return isClosed(a.ready) }

// settled reports whether the actor's last commit has landed; the caller holds the turn.
func (a *actor) settled() bool {
	return a.gate == nil || isClosed(a.gate.Done())
}

// pinned reports whether stubs hold resources of the live instance, which keeps it from
// being evicted as idle; the caller holds the turn.
func (a *actor) pinned() bool { return a.comp != nil && a.comp.pinned() }

// trimLocked trims the live instance once it has gone idle (see overseer.evictIdle): it stays
// loaded, with its state, and pays a minor fault for each page its next call touches again.
// The caller holds the turn, which is released.
func (a *actor) trimLocked() {
	if !a.closed && a.exec != nil {
		a.exec.Trim()
	}
	a.trimmed.Store(a.lastUsed.Load())
	a.unlock()
}

// retire waits for the call in flight and the last commit, then stops the actor.
func (a *actor) retire() {
	<-a.ready
	a.turn <- struct{}{}
	if a.gate != nil {
		_ = a.gate.Wait() // a failure resets the actor through the call that waits for it
	}
	a.closeLocked()
}

// closeLocked stops the actor; the caller holds its turn, which is released.
func (a *actor) closeLocked() {
	if !a.closed && a.exec != nil {
		_ = a.exec.Close()
		a.ov.k.code.release(a.sha)
		a.stats.live.Add(-1)
	}
	a.closed = true
	a.unlock()
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

// actorTopics are the hub topics an actor publishes on.
type actorTopics struct{ events, console, gadgetConsole string }

// console sends a console line to the workspace's and the gadget's log subscribers, if any.
func (a *actor) console(l runtime.ConsoleLine) {
	h := a.ov.k.hub
	if !h.watched(a.topics.console) && !h.watched(a.topics.gadgetConsole) {
		return
	}
	name := string(a.id)
	if g, err := a.ov.gadget(a.id); err == nil {
		name = g.Name
	}
	line := map[string]any{"gadget": name, "stream": l.Stream, "level": l.Level, "text": l.Text, "time": time.Now().UTC()}
	h.publish(a.topics.console, line)
	h.publish(a.topics.gadgetConsole, line)
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

// grantSet is what a gadget may import: the harmless WASI baseline plus those of its grants
// the runtime provides (usableGrants).
func (k *Kernel) grantSet(grants []string) []string {
	return append(runtime.WASIBaseline(), k.usableGrants(grants)...)
}
