package kernel

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"atelier/host/store"
)

// errStopped is returned by an overseer (or an actor) that stopped; the caller retries on a
// fresh one (Kernel.withOverseer).
var errStopped = errors.New("workspace overseer stopped")

// overseer is the single writer of one open workspace. Metadata changes (gadgets, bindings,
// sharing, audit) run one at a time on its goroutine, which commits them and then updates the
// in-memory copy that readers see under mu. Gadget calls run on the gadgets' actors, not on the
// overseer's goroutine. It holds the workspace's lease; it stops when the lease is lost, when
// the kernel closes, or after WorkspaceIdle without use once no gadget has an instance.
type overseer struct {
	k     *Kernel
	id    store.WorkspaceID
	lease store.Lease
	ws    store.WorkspaceStore

	ops  chan overseerOp
	quit chan struct{} // closed to ask the loop to stop
	done chan struct{} // closed when the loop has stopped

	lastUsed atomic.Int64   // unix nanoseconds
	writers  sync.WaitGroup // audit lines being committed off the loop
	trimming atomic.Bool    // a trim goroutine runs (trim)

	mu      sync.RWMutex // guards everything below
	meta    store.Workspace
	gadgets map[store.GadgetID]store.Gadget
	actors  map[store.GadgetID]*actor
	stopped bool
	// fences are the gadgets a dry run's commit holds: no actor of them starts (dryfreeze.go).
	fences map[store.GadgetID]chan struct{}

	// links are the live gatekeeper sessions of gadget bindings (gkbindings.go).
	links links
	// hookMu orders the read-modify-writes of the workspace's hook records (hooks.go).
	hookMu sync.Mutex
	// queue is the workspace's approval queue and action log (gkqueue.go).
	queue *queue
	// use is the workspace's live use under its quotas (budget.go).
	use wsUse
}

type overseerOp struct {
	fn   func() error
	done chan error
}

// startOverseer acquires the workspace's lease and loads its records.
func startOverseer(ctx context.Context, k *Kernel, id store.WorkspaceID) (*overseer, error) {
	if k.cfg.Cluster != nil && k.cfg.Cluster.Draining() {
		return nil, errDraining
	}
	lease, err := k.st.Acquire(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, noWorkspace(id)
	}
	if err != nil {
		return nil, wrapErr(err, "open workspace %s", id)
	}
	ov := &overseer{k: k, id: id, lease: lease, ops: make(chan overseerOp), quit: make(chan struct{}), done: make(chan struct{}),
		gadgets: map[store.GadgetID]store.Gadget{}, actors: map[store.GadgetID]*actor{}, links: links{m: map[linkKey]*link{}}}
	ov.queue = newQueue(ov)
	err = func() error {
		if ov.ws, err = k.st.Open(ctx, id, lease); err != nil {
			return err
		}
		if ov.meta, err = ov.ws.Workspace(); err != nil {
			return err
		}
		gs, err := ov.ws.Gadgets()
		for _, g := range gs {
			ov.gadgets[g.ID] = g
		}
		return err
	}()
	if err != nil {
		_ = lease.Release(ctx)
		return nil, wrapErr(err, "open workspace %s", id)
	}
	ov.touch()
	go ov.loop()
	return ov, nil
}

// isStopped reports whether the overseer has stopped.
func (ov *overseer) isStopped() bool {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	return ov.stopped
}

func (ov *overseer) touch() { ov.lastUsed.Store(time.Now().UnixNano()) }

func (ov *overseer) loop() {
	defer close(ov.done)
	tick := min(min(ov.k.cfg.GadgetIdle, ov.k.cfg.WorkspaceIdle)/4, ov.k.cfg.GadgetTrim)
	t := time.NewTicker(max(tick, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case op := <-ov.ops:
			op.done <- op.fn()
		case <-t.C:
			if ov.evictIdle() {
				ov.shutdown()
				return
			}
		case <-ov.lease.Lost():
			ov.k.log.Warn("workspace lease lost; stopping its overseer", "workspace", ov.id)
			ov.k.chats.cancelWhere(ov.id, errRunMoved, func(*liveRun) bool { return true })
			ov.shutdown()
			return
		case <-ov.quit:
			ov.shutdown()
			return
		}
	}
}

// stop stops the overseer and waits for it (calls in flight finish first).
func (ov *overseer) stop() {
	select {
	case ov.quit <- struct{}{}:
	case <-ov.done:
	}
	<-ov.done
}

// shutdown runs on the loop: it unregisters the overseer, stops its actors and releases the
// lease.
func (ov *overseer) shutdown() {
	ov.k.forget(ov)
	ov.mu.Lock()
	ov.stopped = true
	actors := ov.actors
	ov.actors = map[store.GadgetID]*actor{}
	ov.gadgets = map[store.GadgetID]store.Gadget{} // a stub may keep the stopped overseer: keep no records
	ov.mu.Unlock()
	for _, a := range actors {
		a.retire()
	}
	ov.links.closeAll()
	ov.writers.Wait()
	_ = ov.ws.Close()
	_ = ov.lease.Release(context.Background())
}

// evictIdle retires the instances idle for GadgetIdle, trims those idle for GadgetTrim that
// were not trimmed since their last call, and reports whether the whole workspace has been
// idle for WorkspaceIdle with no instance left (the gatekeeper queue is in the store).
func (ov *overseer) evictIdle() bool {
	now := time.Now()
	ov.mu.Lock()
	var idle, trim []*actor
	for _, a := range ov.actors {
		used := a.lastUsed.Load()
		switch since := now.Sub(time.Unix(0, used)); {
		case since >= ov.k.cfg.GadgetIdle:
			if ov.takeIdleLocked(a) {
				idle = append(idle, a)
			}
		case since >= ov.k.cfg.GadgetTrim && a.trimmed.Load() != used && a.loaded():
			trim = append(trim, a)
		}
	}
	empty := len(ov.actors) == 0
	ov.mu.Unlock()
	for _, a := range idle {
		a.closeLocked()
	}
	if len(trim) > 0 && ov.trimming.CompareAndSwap(false, true) {
		go ov.trim(trim)
	}
	return empty && now.Sub(time.Unix(0, ov.lastUsed.Load())) >= ov.k.cfg.WorkspaceIdle
}

// trim trims actors one at a time, each while it holds that actor's turn, off the overseer's
// goroutine: a Go instance takes 0.2-0.8 ms, and neither the workspace's operations nor the
// calls of the other actors wait for it. An actor that is busy, or was called since, is left
// for a later tick.
func (ov *overseer) trim(actors []*actor) {
	defer ov.trimming.Store(false)
	for _, a := range actors {
		if !a.tryLock() {
			continue
		}
		if used := a.lastUsed.Load(); a.trimmed.Load() == used || time.Since(time.Unix(0, used)) < ov.k.cfg.GadgetTrim {
			a.unlock()
			continue
		}
		a.trimLocked()
	}
}

// takeIdleLocked unregisters a when it is idle: loaded, no call running, its last commit
// landed and no stub holding its resources. It then holds a's turn, and the caller closes a
// (closeLocked). The caller holds ov.mu.
func (ov *overseer) takeIdleLocked(a *actor) bool {
	if !a.loaded() || !a.tryLock() {
		return false
	}
	if !a.settled() || a.pinned() { // a reply still waits for its commit, or stubs hold resources
		a.unlock()
		return false
	}
	delete(ov.actors, a.id)
	return true
}

// do runs fn on the overseer's goroutine and returns its error.
func (ov *overseer) do(ctx context.Context, fn func() error) error {
	ov.touch()
	op := overseerOp{fn: fn, done: make(chan error, 1)}
	select {
	case ov.ops <- op:
	case <-ov.done:
		return errStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-op.done
}

// commit writes muts: on the loop, or in a writer registered by audit.
func (ov *overseer) commit(ctx context.Context, muts ...store.Mutation) error {
	if err := ov.ws.Commit(ctx, muts); err != nil {
		if errors.Is(err, store.ErrFenced) {
			go ov.stop()
		}
		return err
	}
	return nil
}

// auditEntry is an audit line by p.
func auditEntry(p *principal, action, target, detail string) store.Mutation {
	return auditLine(p.name(), action, target, detail)
}

// auditLine is an audit line by actor, a principal's name or a label such as "gadget:notes".
func auditLine(actor, action, target, detail string) store.Mutation {
	return store.AppendAudit(store.AuditEntry{Time: time.Now().UTC(), Actor: actor, Action: action, Target: target, Detail: detail})
}

// audit appends one line to the audit log. The line changes nothing the loop keeps, so it is
// committed by the caller, not on the loop: concurrent lines share fsyncs with each other and
// with gadget commits (group commit), and still are durable when audit returns. Shutdown
// waits for such writers before it closes the workspace.
func (ov *overseer) audit(ctx context.Context, p *principal, action, target, detail string) error {
	return ov.auditAs(ctx, p.name(), action, target, detail)
}

// auditAs is audit by an actor named by its label ("gadget:notes").
func (ov *overseer) auditAs(ctx context.Context, actor, action, target, detail string) error {
	return ov.write(ctx, auditLine(actor, action, target, detail))
}

// write commits muts that change nothing the loop keeps, off the loop, as audit does.
func (ov *overseer) write(ctx context.Context, muts ...store.Mutation) error {
	ov.touch()
	ov.mu.RLock()
	if ov.stopped {
		ov.mu.RUnlock()
		return errStopped
	}
	ov.writers.Add(1)
	ov.mu.RUnlock()
	defer ov.writers.Done()
	return ov.commit(ctx, muts...)
}

// snapshot returns the workspace record.
func (ov *overseer) snapshot() (store.Workspace, error) {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	if ov.stopped {
		return store.Workspace{}, errStopped
	}
	return ov.meta, nil
}

// roleOf returns p's role here (FORBIDDEN without access, UNAUTHORIZED when revoked).
func (ov *overseer) roleOf(p *principal) (store.Role, error) {
	_, role, err := ov.access(p)
	return role, err
}

// access returns the workspace record and p's role in it (as roleOf), so that the checks
// after the role's (the observer gate) read the same record instead of copying it again.
func (ov *overseer) access(p *principal) (store.Workspace, store.Role, error) {
	ov.touch()
	w, err := ov.snapshot()
	if err != nil {
		return w, "", err
	}
	role, err := p.roleIn(w)
	return w, role, err
}

// require returns the workspace record and p's role in it if the role includes need.
func (ov *overseer) require(p *principal, need store.Role, what string) (store.Workspace, store.Role, error) {
	w, role, err := ov.access(p)
	if err != nil {
		return w, "", err
	}
	if !role.Allows(need) {
		return w, "", fail(CodeForbidden, "%s needs the %s role in workspace %s; you have %s", what, need, ov.id, role)
	}
	return w, role, nil
}

// gadgetByName returns the record of gadget name.
func (ov *overseer) gadgetByName(name string) (store.Gadget, error) {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	if ov.stopped {
		return store.Gadget{}, errStopped
	}
	for _, g := range ov.gadgets {
		if g.Name == name {
			return g, nil
		}
	}
	return store.Gadget{}, fail(CodeNotFound, "workspace %s has no gadget %q", ov.id, name)
}

// gadget returns the record of gadget id.
func (ov *overseer) gadget(id store.GadgetID) (store.Gadget, error) {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	if ov.stopped {
		return store.Gadget{}, errStopped
	}
	g, ok := ov.gadgets[id]
	if !ok {
		return store.Gadget{}, fail(CodeNotFound, "the gadget was deleted")
	}
	return g, nil
}

// gadgetsOf returns the gadget records p may see (an agent: those of its scope), unsorted.
func (ov *overseer) gadgetsOf(p *principal) ([]store.Gadget, error) {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	if ov.stopped {
		return nil, errStopped
	}
	gs := make([]store.Gadget, 0, len(ov.gadgets))
	for _, g := range ov.gadgets {
		if p.gadgetAllowed(ov.id, g.Name) {
			gs = append(gs, g)
		}
	}
	return gs, nil
}

// setGadget updates the in-memory record after a commit; on the loop only.
func (ov *overseer) setGadget(g store.Gadget) {
	ov.mu.Lock()
	ov.gadgets[g.ID] = g
	ov.mu.Unlock()
}

// setMeta updates the in-memory workspace record after a commit; on the loop only.
func (ov *overseer) setMeta(w store.Workspace) {
	ov.mu.Lock()
	ov.meta = w
	ov.mu.Unlock()
	ov.k.chats.recheck(w)
}
