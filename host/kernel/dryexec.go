package kernel

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/jsruntime"
)

// A dry run of executeCode runs the snippet as usual, except that every gadget call goes to a
// shadow of the gadget instead of its actor: a separate instance of the gadget's current code
// whose kv is a forkKV over its committed state, whose events are held back (published only
// if the dry run is committed) and whose bindings lead to shadows of the same dry run. The live instance, its state and its subscribers see
// nothing. Gatekeeper sessions of a dry run run with the account's state forked too, and their
// actions are recorded as would-be actions instead of being queued (observations are recorded
// as usual). The dryExec lives while the snippet runs; what it recorded is then held
// (dryhold.go) until it is committed (drycommit.go), discarded or expires.

// dryExec is one dry run while its snippet runs.
type dryExec struct {
	w      *Workspace
	budget *dryBudget

	mu      sync.Mutex // guards shadows, actions and closed
	shadows map[store.GadgetID]*shadow
	actions []heldAction
	closed  bool

	linkMu sync.Mutex        // guards links
	links  map[linkKey]*link // gatekeeper sessions; gadget "" for the snippet's own bindings
}

// heldAction is a gatekeeper action a dry run recorded: what commit queues, and how the diff
// shows it.
type heldAction struct {
	entry store.QueuedAction
	info  DryRunAction
}

func newDryExec(w *Workspace, max int64) *dryExec {
	return &dryExec{w: w, budget: &dryBudget{max: max}, shadows: map[store.GadgetID]*shadow{}, links: map[linkKey]*link{}}
}

// shadow is a gadget's instance in a dry run. Calls run one at a time (turn).
type shadow struct {
	dx      *dryExec
	ov      *overseer
	g       store.Gadget // the record at the fork: its code and bindings
	ready   chan struct{}
	sha     string
	exec    runner
	exports map[string]exportFunc
	mem     *memAccount
	kv      *forkKV
	loadErr error
	turn    chan struct{}
	// events are the events of the calls that returned, published if the dry run is
	// committed; pending those of the running call, with the bytes they were charged.
	events       []events.Event
	pending      []events.Event
	pendingBytes int64
}

// shadowOf returns the dry run's shadow of gadget id, loading it on first use.
func (dx *dryExec) shadowOf(ctx context.Context, ov *overseer, id store.GadgetID) (*shadow, error) {
	dx.mu.Lock()
	if dx.closed {
		dx.mu.Unlock()
		return nil, fail(CodeFailedPrecondition, "the dry run's snippet has ended")
	}
	s := dx.shadows[id]
	if s == nil {
		g, err := ov.gadget(id)
		if err != nil {
			dx.mu.Unlock()
			return nil, err
		}
		s = &shadow{dx: dx, ov: ov, g: g, ready: make(chan struct{}), turn: make(chan struct{}, 1),
			kv: newForkKV(gadgetBase{ws: ov.ws, g: id}, dx.budget)}
		dx.shadows[id] = s
		dx.mu.Unlock()
		s.load(ctx)
	} else {
		dx.mu.Unlock()
	}
	select {
	case <-s.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return s, s.loadErr
}

// load starts the shadow's instance of the gadget's code at the fork.
func (s *shadow) load(ctx context.Context) {
	defer close(s.ready)
	k := s.ov.k
	v, ok := s.g.CurrentVersion()
	if !ok {
		s.loadErr = fail(CodeInternal, "gadget %s has no current version %d", s.g.Name, s.g.Current)
		return
	}
	prog, err := k.code.acquire(ctx, v.SHA256)
	if err != nil {
		s.loadErr = wrapErr(err, "load gadget %s for the dry run", s.g.Name)
		return
	}
	s.sha, s.mem = v.SHA256, s.ov.newAccount(nil)
	bind := map[string]any{kv.Grant: s.kv, events.Grant: shadowEvents{s}, BindingsGrant: shadowCaller{s}, HooksGrant: unboundHooks{}}
	if prog.comp != nil {
		s.exec = newComponentExec(k.cfg.Runtime, prog.comp, runtime.InstanceConfig{
			Name: string(s.g.ID), Grants: k.grantSet(s.g.Grants), Limits: k.cfg.Limits, Console: s.console, Bind: bind, Account: s.mem,
		})
		s.exports = k.surfaces.component(s.sha, prog.comp).exports
		return
	}
	if s.loadErr = s.loadJS(ctx, prog, bind); s.loadErr != nil {
		k.code.release(s.sha)
		s.sha = ""
	}
}

// loadJS starts a JS gadget's shadow instance (its constructor's writes go to the fork).
func (s *shadow) loadJS(ctx context.Context, prog *program, bind map[string]any) error {
	eng, err := s.ov.k.jsEngine(ctx)
	if err != nil {
		return err
	}
	lim := s.ov.k.jsLimits()
	lim.Account = s.mem
	jg, err := eng.NewGadget(jsruntime.GadgetConfig{Name: string(s.g.ID), Files: prog.files, Grants: s.ov.k.grantSet(s.g.Grants),
		Bind: bind, Console: s.console, Limits: lim})
	if err != nil {
		return fail(CodeGadgetError, "load gadget %s for the dry run: %v", s.g.Name, err)
	}
	methods, err := jg.Methods(ctx)
	if err != nil {
		_ = jg.Close()
		return wrapErr(s.mem.explain(err), "load gadget %s for the dry run", s.g.Name)
	}
	s.end(false) // the constructor's writes and events
	s.exec, s.exports = jg, make(map[string]exportFunc, len(methods))
	for _, m := range methods {
		s.exports[m] = exportFunc{name: m}
	}
	return nil
}

// call runs export method with args (checked against its types) in the shadow; a trap drops
// the call's writes, as on the live actor.
func (s *shadow) call(ctx context.Context, method string, args []any) (any, error) {
	fn, ok := s.exports[method]
	if !ok {
		return nil, fail(CodeNotFound, "gadget %s has no exported function %q", s.g.Name, method)
	}
	if err := fn.checkJSON(method, args); err != nil {
		return nil, err
	}
	if err := s.ov.admitCall(time.Now().UnixNano()); err != nil {
		return nil, err
	}
	select {
	case s.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, fail(CodeGadgetError, "gadget busy in the dry run: %v", ctx.Err())
	}
	defer func() { <-s.turn }()
	if slices.Contains(s.g.Grants, BindingsGrant) {
		ctx = withCaller(ctx, s.g.ID)
	}
	res, err := s.exec.Call(ctx, fn.name, args...)
	err = tooLarge(s.mem.explain(err), "result")
	s.end(err != nil && isTrap(err))
	return res, err
}

// end ends a call: its writes and events join the fork's, or, when it trapped, are dropped.
func (s *shadow) end(trapped bool) {
	if trapped {
		s.kv.discard()
		_ = s.dx.budget.charge(-s.pendingBytes) // giving back never fails
	} else {
		s.kv.take()
		s.events = append(s.events, s.pending...)
	}
	s.pending, s.pendingBytes = nil, 0
}

// console sends the shadow's console lines to the workspace's and the gadget's log
// subscribers, marked as a dry run's.
func (s *shadow) console(l runtime.ConsoleLine) {
	h := s.ov.k.hub
	ws, g := consoleTopic(s.ov.id, ""), consoleTopic(s.ov.id, s.g.ID)
	if !h.watched(ws) && !h.watched(g) {
		return
	}
	line := map[string]any{"gadget": s.g.Name, "stream": l.Stream, "level": l.Level, "text": l.Text, "time": time.Now().UTC(), "dryRun": true}
	h.publish(ws, line)
	h.publish(g, line)
}

// shadowEvents is a shadow's events.Publisher: a dry run's events reach nobody until it is
// committed.
type shadowEvents struct{ s *shadow }

// Publish implements events.Publisher; it runs inside the shadow's call (its turn held).
func (p shadowEvents) Publish(_ context.Context, ev events.Event) error {
	s := p.s
	if len(s.pending) >= maxEventsPerCall {
		return errors.New("too many events in one call")
	}
	n := int64(len(ev.Topic) + len(ev.Payload) + forkEntry)
	if err := s.dx.budget.charge(n); err != nil {
		return err
	}
	s.pending = append(s.pending, ev)
	s.pendingBytes += n
	return nil
}

// shadowCaller runs a shadow's binding calls: gadgets it binds are called on their shadows
// in the same dry run, gatekeepers through the dry run's sessions.
type shadowCaller struct{ s *shadow }

// CallBinding implements bindings.Caller, as bindingCaller does for the live actor.
func (c shadowCaller) CallBinding(ctx context.Context, name, method string, args []any) (any, error) {
	s := c.s
	ctx, cancel := context.WithTimeout(ctx, s.ov.k.callTimeout())
	defer cancel()
	if account, ok := s.g.Gatekeepers[name]; ok {
		acct, err := s.ov.k.st.Account(ctx, account)
		if err != nil {
			return nil, wrapErr(err, "binding %q: its gatekeeper account", name)
		}
		l, err := s.dx.link(ctx, s.ov, linkKey{s.g.ID, name}, "gadget:"+s.g.Name, acct)
		if err != nil {
			return nil, wrapErr(err, "binding %q", name)
		}
		return invokeSession(s.dx.tag(ctx, name, method, args), l.sess, name, method, args)
	}
	target, ok := s.g.Bindings[name]
	if !ok {
		return nil, fail(CodeNotFound, "gadget %s has no binding %q", s.g.Name, name)
	}
	chain, _ := ctx.Value(callChainKey{}).([]store.GadgetID)
	if slices.Contains(chain, target) {
		return nil, fail(CodeFailedPrecondition, "binding %q would call back into a gadget already in this call chain", name)
	}
	t, err := s.dx.shadowOf(ctx, s.ov, target)
	if err != nil {
		return nil, err
	}
	return t.call(ctx, method, args)
}

// ended reports whether the dry run's snippet has ended.
func (dx *dryExec) ended() bool {
	dx.mu.Lock()
	defer dx.mu.Unlock()
	return dx.closed
}

// close ends the dry run's instances and sessions; later calls fail.
func (dx *dryExec) close() {
	dx.mu.Lock()
	if dx.closed {
		dx.mu.Unlock()
		return
	}
	dx.closed = true
	shadows := dx.shadows
	dx.mu.Unlock()
	dx.linkMu.Lock()
	links := dx.links
	dx.links = map[linkKey]*link{}
	dx.linkMu.Unlock()
	for _, s := range shadows {
		<-s.ready
		s.turn <- struct{}{} // a call still running (its snippet ended) finishes first
		if s.exec != nil {
			_ = s.exec.Close()
			s.ov.k.code.release(s.sha)
		}
	}
	for _, l := range links {
		l.inst.Close()
	}
}

// forks returns the shadows whose forks the dry run touched, in gadget name order.
func (dx *dryExec) forks() []*shadow {
	dx.mu.Lock()
	defer dx.mu.Unlock()
	out := slices.Collect(maps.Values(dx.shadows))
	slices.SortFunc(out, func(a, b *shadow) int { return strings.Compare(a.g.Name, b.g.Name) })
	return out
}
