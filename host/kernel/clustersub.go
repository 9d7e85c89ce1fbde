package kernel

import (
	"context"
	"sync"
	"time"

	"atelier/capnweb"
	"atelier/host/store"
)

// subscriptions lists the methods that register a client's callback, by the object they are
// called on (as navigation does): in cluster mode their result is a routedSubscription.
var subscriptions = map[int]map[string]bool{
	0: {"subscribeGadgets": true, "subscribeConsole": true, "subscribeActions": true, "subscribeChat": true},
	1: {"subscribe": true, "logs": true},
}

// subscriptionCheck is how often a routed subscription checks that the node holding its
// registration still runs the workspace (a node that lost its lease but lives on keeps its
// registrations, which no longer hear anything); the lease lookups are shared (holderCache).
const subscriptionCheck = 2 * time.Second

// routedSubscription is a subscription made through a routed workspace. It keeps the
// client's callback and registers it again at the workspace's new node when the node
// holding the registration stops or no longer runs the workspace, so a client whose own node
// stayed up goes on receiving after a failover or a drain (what was published in between is
// not replayed). Cancelling it, disposing it, or the callback breaking ends it.
type routedSubscription struct {
	ws     *routedWorkspace
	steps  []step
	method string
	args   []any // the client's arguments, its callback stubs duplicated for as long as s lives

	mu      sync.Mutex
	handle  *capnweb.Stub // the registration on its node; nil between registrations
	at      placed        // where handle lives
	stop    chan struct{} // closed (under mu) when the subscription ends
	unwatch []func()      // stop watching the callbacks for breakage
}

// subscribe registers the callback in args with method on the object steps lead to and
// returns the routed subscription that keeps it registered.
func (w *routedWorkspace) subscribe(ctx context.Context, steps []step, method string, args []any) (*routedSubscription, error) {
	s := &routedSubscription{ws: w, steps: steps, method: method, args: dupStubs(args).([]any), stop: make(chan struct{})}
	if err := s.register(ctx); err != nil {
		s.release()
		return nil, err
	}
	s.mu.Lock()
	eachStub(s.args, func(cb *capnweb.Stub) {
		s.unwatch = append(s.unwatch, cb.OnBroken(func(error) { go s.Cancel() }))
	})
	s.mu.Unlock()
	go s.watch()
	return s, nil
}

// register makes a registration at the workspace's current node.
func (s *routedSubscription) register(ctx context.Context) error {
	var at placed
	v, err := s.ws.forward(ctx, s.steps, func(p placed) (any, error) {
		at = p
		return awaitOwned(ctx, p.st.Call(ctx, s.method, s.args...))
	})
	if err != nil {
		return err
	}
	handle, ok := v.(*capnweb.Stub)
	if !ok {
		return fail(CodeInternal, "%s returned %T, not a subscription", s.method, v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.endedLocked() {
		handle.Dispose()
		return nil
	}
	s.handle, s.at = handle, at
	return nil
}

// watch registers again whenever the registration's node is gone or no longer the
// workspace's, until the subscription ends.
func (s *routedSubscription) watch() {
	tick := time.NewTicker(subscriptionCheck)
	defer tick.Stop()
	for {
		s.mu.Lock()
		at := s.at
		s.mu.Unlock()
		var ended <-chan struct{}
		if at.sess != nil {
			ended = at.sess.Done()
		}
		select {
		case <-s.stop:
			return
		case <-ended:
		case <-tick.C:
			if s.current() {
				continue
			}
		}
		s.mu.Lock()
		if s.handle != nil {
			s.handle.Dispose()
			s.handle = nil
		}
		s.at = placed{}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), subscriptionCheck)
		if err := s.register(ctx); err != nil {
			s.ws.k.log.Warn("subscription not registered again yet; retrying", "workspace", s.ws.id, "method", s.method, "err", err)
		}
		cancel()
	}
}

// current reports whether the registration exists on the node that holds the workspace.
func (s *routedSubscription) current() bool {
	s.mu.Lock()
	at, ok := s.at, s.handle != nil
	s.mu.Unlock()
	if !ok || (at.sess != nil && sessionEnded(at.sess)) {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), subscriptionCheck)
	defer cancel()
	node, held, err := s.ws.k.subHolders.holder(ctx, s.ws.id, s.ws.k.cfg.Cluster.Holder)
	return err != nil || !held || node == at.node // in doubt, or while nobody holds it, keep it
}

// holderCache remembers for subscriptionCheck/2 which node holds each workspace that routed
// subscriptions check, so that the subscriptions of one workspace cost one lookup of its
// lease per period however many they are: those that check while a lookup is under way wait
// for it. The zero value is ready.
type holderCache struct {
	now     func() time.Time // nil: time.Now
	mu      sync.Mutex
	entries map[store.WorkspaceID]*heldBy
}

// heldBy is a lookup, made at `at`; its fields are set when done is closed.
type heldBy struct {
	at   time.Time
	done chan struct{}
	node store.NodeID
	held bool
	err  error
}

// holderCacheSweep is the size past which an insertion drops the expired entries.
const holderCacheSweep = 1024

// holder returns ws's holder from the cache, or from lookup (a failed lookup is not kept).
func (c *holderCache) holder(ctx context.Context, ws store.WorkspaceID, lookup func(context.Context, store.WorkspaceID) (store.NodeID, bool, error)) (store.NodeID, bool, error) {
	now := time.Now()
	if c.now != nil {
		now = c.now()
	}
	fresh := func(e *heldBy) bool { return now.Sub(e.at) < subscriptionCheck/2 }
	c.mu.Lock()
	if e, ok := c.entries[ws]; ok && fresh(e) {
		c.mu.Unlock()
		select {
		case <-e.done:
			return e.node, e.held, e.err
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	}
	if c.entries == nil {
		c.entries = map[store.WorkspaceID]*heldBy{}
	}
	if len(c.entries) >= holderCacheSweep {
		for id, e := range c.entries {
			if !fresh(e) {
				delete(c.entries, id)
			}
		}
	}
	e := &heldBy{at: now, done: make(chan struct{})}
	c.entries[ws] = e
	c.mu.Unlock()
	e.node, e.held, e.err = lookup(ctx, ws)
	if e.err != nil {
		c.mu.Lock()
		if c.entries[ws] == e {
			delete(c.entries, ws)
		}
		c.mu.Unlock()
	}
	close(e.done)
	return e.node, e.held, e.err
}

// CallMethod implements capnweb.DynamicTarget: cancel() ends the subscription.
func (s *routedSubscription) CallMethod(_ context.Context, method string, _ []any) (any, error) {
	if method != "cancel" {
		return nil, fail(CodeInvalidArgument, "a subscription has no method %q (only cancel)", method)
	}
	s.Cancel()
	return nil, nil
}

// GetProperty implements capnweb.DynamicTarget: a subscription has no properties.
func (s *routedSubscription) GetProperty(_ context.Context, name string) (any, error) {
	return nil, fail(CodeInvalidArgument, "a subscription has no property %q", name)
}

// Dispose implements capnweb.Disposer: the client holds no reference any more.
func (s *routedSubscription) Dispose() { s.Cancel() }

// Cancel ends the subscription and its registration.
func (s *routedSubscription) Cancel() {
	s.mu.Lock()
	if s.endedLocked() {
		s.mu.Unlock()
		return
	}
	close(s.stop)
	handle, unwatch := s.handle, s.unwatch
	s.handle, s.unwatch = nil, nil
	s.mu.Unlock()
	for _, u := range unwatch {
		u()
	}
	if handle != nil {
		handle.Dispose() // the last reference: the registration's Dispose cancels it
	}
	s.release()
}

// endedLocked reports whether the subscription ended; s.mu must be held.
func (s *routedSubscription) endedLocked() bool { return isClosed(s.stop) }

// release drops the duplicated callback stubs.
func (s *routedSubscription) release() {
	eachStub(s.args, (*capnweb.Stub).Dispose)
}
