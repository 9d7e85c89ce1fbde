package kernel

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"atelier/capnweb"
	"atelier/host/store"
)

// Cluster is what the kernel needs of cluster mode (host/cluster provides it): where a
// workspace runs, and sessions to the other nodes' kernels. Nil runs a single node.
type Cluster interface {
	// Self is this node's name.
	Self() store.NodeID
	// Holder returns the node holding the workspace's lease (false: none).
	Holder(ctx context.Context, ws store.WorkspaceID) (store.NodeID, bool, error)
	// Pick returns the node that should start an unowned workspace.
	Pick(ctx context.Context, ws store.WorkspaceID) (store.NodeID, error)
	// Draining reports whether this node is handing its workspaces over before it stops.
	Draining() bool
	// SetDraining marks this node draining (no workspace starts on it) or serving again.
	SetDraining(ctx context.Context, on bool) error
	// Dial opens a Cap'n Web session to node's kernel, whose main object is PeerMain of the
	// token hash.
	Dial(ctx context.Context, node store.NodeID, tokenHash string) (*capnweb.Session, error)
	// LeaseTTL is how long a workspace's lease can outlive its node: a call that finds its
	// workspace's node gone waits that long for the new owner before it fails.
	LeaseTTL() time.Duration
	// Status describes the cluster as this node sees it (for clusterStatus()).
	Status(ctx context.Context) (any, error)
	// Compact snapshots the state and compacts the log now (for compactLog()).
	Compact(ctx context.Context) (any, error)
	// Collector gives this node's cluster gauges (replica lag, leases held, ...); the kernel
	// registers it on Config.Metrics.
	prometheus.Collector
}

// PeerMain is the main object of a session another node opens for one of its clients: the
// API of the principal whose token hash it names (the routes between nodes are
// authenticated, so the node is trusted to have checked the token itself).
func (k *Kernel) PeerMain(ctx context.Context, tokenHash string) (any, error) {
	if tokenHash == hookPeerToken { // another node forwards a webhook request (hooksin.go)
		return &hookPeer{k: k}, nil
	}
	p, err := k.principalOf(ctx, tokenHash)
	if err != nil {
		return nil, err
	}
	return &peerMain{Authed: &Authed{k: k, p: p, peer: true}}, nil
}

// NoteRevocation tells the kernel that a token or agent was deleted elsewhere (another node
// of the cluster), so that its sessions check their tokens again at their next call.
func (k *Kernel) NoteRevocation() { k.revocations.Add(1) }

// Drain hands every workspace running here over to other nodes: the node is marked draining
// (no workspace starts here any more), then each overseer stops (its calls in flight finish
// and its lease is released), so the next call of each workspace starts it elsewhere. Clients
// of this node keep working through it. A single node has nothing to drain.
func (k *Kernel) Drain(ctx context.Context) error {
	if k.cfg.Cluster == nil {
		return fail(CodeFailedPrecondition, "drain: this server is not part of a cluster")
	}
	if err := k.cfg.Cluster.SetDraining(ctx, true); err != nil {
		return wrapErr(err, "drain")
	}
	ovs := k.running()
	for _, ov := range ovs {
		ov.stop()
	}
	k.log.Info("drained: every workspace of this node was handed over", "workspaces", len(ovs))
	return nil
}

// ClusterStatus describes the cluster: its nodes, which node runs each workspace, this node's
// replication lag and peer sessions (admin only).
func (a *Authed) ClusterStatus(ctx context.Context) (any, error) {
	c, err := a.clusterAdmin("clusterStatus")
	if err != nil {
		return nil, err
	}
	st, err := c.Status(ctx)
	return st, wrapErr(err, "cluster status")
}

// clusterAdmin returns the cluster of a call (named what) that only the admin may make, and
// only in cluster mode.
func (a *Authed) clusterAdmin(what string) (Cluster, error) {
	if err := a.adminOnly(what); err != nil {
		return nil, err
	}
	if a.k.cfg.Cluster == nil {
		return nil, fail(CodeFailedPrecondition, "%s: this server is not part of a cluster (start it with --cluster)", what)
	}
	return a.k.cfg.Cluster, nil
}

// CompactLog snapshots the cluster's state and compacts its log now, as the nodes do on their
// own every --snapshot-every entries (admin only).
func (a *Authed) CompactLog(ctx context.Context) (any, error) {
	c, err := a.clusterAdmin("compactLog")
	if err != nil {
		return nil, err
	}
	done, err := c.Compact(ctx)
	return done, wrapErr(err, "compact the log")
}

// DrainNode hands the workspaces of the node serving this session over to the other nodes
// (admin only); see Kernel.Drain.
func (a *Authed) DrainNode(ctx context.Context) error {
	if err := a.adminOnly("drainNode"); err != nil {
		return err
	}
	return a.k.Drain(ctx)
}

// errDraining refuses to start a workspace on a node that is handing its workspaces over.
var errDraining = fail(CodeMoved, "this node is draining; the workspace runs on another node")

// routedWorkspace is the workspace object a client gets in cluster mode. Each call goes to the
// node that runs the workspace: this node's own Workspace, or the owner's over a peer session.
// A call refused with MOVED before it ran (the workspace moved, or its node is draining) is
// sent again to the new owner, so a drain fails no call; a call in flight when its node dies
// fails with UNAVAILABLE (its outcome is unknown) and the next call goes to the new owner.
// gadget(name) and gadget(name).connect() return routed objects too, which find their
// target again after a move.
type routedWorkspace struct {
	k  *Kernel
	p  *principal
	id store.WorkspaceID
	// shareKey is redeemed when the workspace is first reached (OpenWorkspace's argument).
	shareKey string

	mu   sync.Mutex
	cur  *capnweb.Stub            // the workspace object on its node; nil: resolve again
	sess *capnweb.Session         // the peer session cur lives in (nil when local)
	node store.NodeID             // the node cur is on
	kids map[string]*capnweb.Stub // navigation results on cur's node, by path
}

// route is a routed object reached from the workspace by navigation steps.
type route struct {
	ws    *routedWorkspace
	steps []step
}

// step is one navigation call: gadget(name) or connect(). key names the path up to and
// including it (the key of its result in routedWorkspace.kids), computed once.
type step struct {
	method string
	args   []any
	key    string
}

// navigation lists the methods whose result is itself routed, by the object they are called on.
var navigation = map[int]map[string]bool{0: {"gadget": true}, 1: {"connect": true}}

func (k *Kernel) routed(p *principal, id store.WorkspaceID, shareKey string) *routedWorkspace {
	return &routedWorkspace{k: k, p: p, id: id, shareKey: shareKey}
}

// CallMethod implements capnweb.DynamicTarget.
func (w *routedWorkspace) CallMethod(ctx context.Context, method string, args []any) (any, error) {
	return (&route{ws: w}).CallMethod(ctx, method, args)
}

// GetProperty implements capnweb.DynamicTarget.
func (w *routedWorkspace) GetProperty(ctx context.Context, name string) (any, error) {
	return (&route{ws: w}).GetProperty(ctx, name)
}

// Dispose implements capnweb.Disposer: the client holds no reference any more.
func (w *routedWorkspace) Dispose() {
	w.mu.Lock()
	w.reset()
	w.mu.Unlock()
}

// CallMethod implements capnweb.DynamicTarget.
func (r *route) CallMethod(ctx context.Context, method string, args []any) (any, error) {
	if navigation[len(r.steps)][method] {
		key := method + "\x00"
		if len(r.steps) > 0 {
			key = r.steps[len(r.steps)-1].key + key
		}
		for _, a := range args {
			if str, ok := a.(string); ok {
				key += str
			}
			key += "\x00"
		}
		return &route{ws: r.ws, steps: append(append([]step(nil), r.steps...), step{method, args, key})}, nil
	}
	if subscriptions[len(r.steps)][method] {
		return r.ws.subscribe(ctx, r.steps, method, args)
	}
	return r.ws.forward(ctx, r.steps, func(at placed) (any, error) {
		if t, ok := at.st.LocalTarget(); ok { // this node's own gadget connection: call it directly
			if d, ok := t.(capnweb.DynamicTarget); ok {
				return d.CallMethod(ctx, method, args) // with this call's turn, which it releases
			}
		}
		return awaitOwned(ctx, at.st.Call(ctx, method, args...))
	})
}

// GetProperty implements capnweb.DynamicTarget.
func (r *route) GetProperty(ctx context.Context, name string) (any, error) {
	return r.ws.forward(ctx, r.steps, func(at placed) (any, error) { return awaitOwned(ctx, at.st.Get(name)) })
}

// forward runs call on the object the steps lead to, on the node running the workspace.
// Calls are sent in order; awaiting lets the next call on the routed object go out.
func (w *routedWorkspace) forward(ctx context.Context, steps []step, call func(at placed) (any, error)) (any, error) {
	var last error
	for m := w.k.followMoves(); ; {
		more, err := m.next(ctx)
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		at, err := w.target(ctx, steps)
		if err != nil {
			if !moved(err) {
				return nil, err
			}
			last = err
			continue
		}
		v, err := call(at)
		if err == nil {
			return v, nil
		}
		switch {
		case moved(err), errors.Is(err, capnweb.ErrDisposed): // ErrDisposed: another call dropped st first
			last = err
		case at.sess != nil && sessionEnded(at.sess):
			w.drop(at.st)
			return nil, fail(CodeUnavailable, "the node running workspace %s stopped during the call, so its outcome is unknown; call again", w.id)
		default:
			return nil, err
		}
		w.drop(at.st)
	}
	return nil, wrapErr(last, "workspace %s keeps moving; try again", w.id)
}

// moves paces a call that follows its workspace to a new node (MOVED: the call did not run
// where it went). The old owner may hold the lease for a moment (a drain), or until the lease
// runs out (a node that died): a call keeps following for the lease TTL and a half, so the
// client sees a pause rather than an error, and at least minMoves times.
type moves struct {
	until   time.Time
	attempt int
}

const (
	// minMoves is how often a call follows its workspace however short the lease TTL.
	minMoves = 6
	// maxMovePause bounds the pause between two attempts.
	maxMovePause = 500 * time.Millisecond
)

// followMoves starts pacing one call's attempts.
func (k *Kernel) followMoves() *moves {
	m := &moves{until: time.Now()}
	if c := k.cfg.Cluster; c != nil {
		ttl := c.LeaseTTL()
		m.until = m.until.Add(ttl + ttl/2)
	}
	return m
}

// next waits before the next attempt, longer at each one, and reports whether to make it
// (false: the call followed long enough); it fails when ctx ends first.
func (m *moves) next(ctx context.Context) (bool, error) {
	m.attempt++
	if m.attempt == 1 {
		return true, nil
	}
	if m.attempt > minMoves && time.Now().After(m.until) {
		return false, nil
	}
	pause := min(time.Duration(25<<min(m.attempt-1, 5))*time.Millisecond, maxMovePause)
	select {
	case <-time.After(pause):
		return true, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// placed is an object on the node running the workspace: the stub, its peer session (nil
// when the node is this one) and the node's name.
type placed struct {
	st   *capnweb.Stub
	sess *capnweb.Session
	node store.NodeID
}

// target returns the object steps lead to on the workspace's current node.
func (w *routedWorkspace) target(ctx context.Context, steps []step) (placed, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil && w.sess != nil && sessionEnded(w.sess) {
		w.reset()
	}
	if w.cur == nil {
		cur, sess, node, err := w.resolve(ctx)
		if err != nil {
			return placed{}, err
		}
		w.cur, w.sess, w.node, w.kids = cur, sess, node, map[string]*capnweb.Stub{}
	}
	st := w.cur
	for _, s := range steps {
		next := w.kids[s.key]
		if next == nil {
			v, err := awaitOwned(ctx, st.Call(ctx, s.method, s.args...))
			if err != nil {
				return placed{}, err
			}
			var ok bool
			if next, ok = v.(*capnweb.Stub); !ok {
				return placed{}, fail(CodeInternal, "%s returned %T, not an object", s.method, v)
			}
			w.kids[s.key] = next
		}
		st = next
	}
	return placed{st, w.sess, w.node}, nil
}

// resolve finds the workspace's node and returns its workspace object there, the peer
// session it lives in (nil on this node) and the node's name.
func (w *routedWorkspace) resolve(ctx context.Context) (*capnweb.Stub, *capnweb.Session, store.NodeID, error) {
	c := w.k.cfg.Cluster
	node, held, err := c.Holder(ctx, w.id)
	if err != nil {
		return nil, nil, "", wrapErr(err, "find the node of workspace %s", w.id)
	}
	if !held {
		if node, err = c.Pick(ctx, w.id); err != nil {
			return nil, nil, "", wrapErr(err, "place workspace %s", w.id)
		}
	}
	if node == c.Self() {
		ws, err := (&Authed{k: w.k, p: w.p}).openLocal(ctx, w.id, w.shareKey)
		if err != nil {
			return nil, nil, "", err
		}
		w.shareKey = ""
		st, err := capnweb.NewStub(ws)
		return st, nil, node, err
	}
	sess, err := c.Dial(ctx, node, w.p.hash)
	if err != nil {
		return nil, nil, "", fail(CodeMoved, "reach node %s running workspace %s: %v", node, w.id, err)
	}
	v, err := awaitOwned(ctx, sess.Main().Call(ctx, "openWorkspace", string(w.id), w.shareKey))
	if err != nil {
		sess.Close()
		return nil, nil, "", err
	}
	w.shareKey = ""
	st, ok := v.(*capnweb.Stub)
	if !ok {
		sess.Close()
		return nil, nil, "", fail(CodeInternal, "node %s answered openWorkspace with %T", node, v)
	}
	return st, sess, node, nil
}

// drop forgets the current target if st still belongs to it.
func (w *routedWorkspace) drop(st *capnweb.Stub) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur == nil {
		return
	}
	if st == w.cur {
		w.reset()
		return
	}
	for _, kid := range w.kids {
		if kid == st {
			w.reset()
			return
		}
	}
}

// reset disposes the current target, its navigation results and its session; w.mu is held.
func (w *routedWorkspace) reset() {
	for _, kid := range w.kids {
		kid.Dispose()
	}
	if w.cur != nil {
		w.cur.Dispose()
	}
	if w.sess != nil {
		w.sess.Close()
	}
	w.cur, w.sess, w.kids = nil, nil, nil
}

// awaitOwned awaits p and returns its value with the stubs in it owned by the caller.
func awaitOwned(ctx context.Context, p *capnweb.Promise) (any, error) {
	defer p.Dispose()
	v, err := p.Await(ctx)
	if err != nil {
		return nil, err
	}
	return dupStubs(v), nil
}

// dupStubs copies v, duplicating every stub in it (an awaited value's stubs belong to its
// promise).
func dupStubs(v any) any {
	switch x := v.(type) {
	case *capnweb.Stub:
		return x.Dup()
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = dupStubs(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = dupStubs(e)
		}
		return out
	case capnweb.Object:
		out := make(capnweb.Object, len(x))
		for i, f := range x {
			out[i] = capnweb.Field{Key: f.Key, Value: dupStubs(f.Value)}
		}
		return out
	}
	return v
}

// eachStub calls f with every stub in v, however deeply it is nested in lists and records.
func eachStub(v any, f func(*capnweb.Stub)) {
	switch x := v.(type) {
	case *capnweb.Stub:
		f(x)
	case []any:
		for _, e := range x {
			eachStub(e, f)
		}
	case map[string]any:
		for _, e := range x {
			eachStub(e, f)
		}
	case capnweb.Object:
		for _, fl := range x {
			eachStub(fl.Value, f)
		}
	}
}

// moved reports whether err says the workspace is run elsewhere now and the call did not run.
func moved(err error) bool {
	var ke *Error
	if errors.As(err, &ke) {
		return ke.Code == CodeMoved
	}
	var ce *capnweb.Error
	return errors.As(err, &ce) && ce.Props["code"] == string(CodeMoved)
}

// sessionEnded reports whether the peer session s has ended.
func sessionEnded(s *capnweb.Session) bool { return isClosed(s.Done()) }
