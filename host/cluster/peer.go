package cluster

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"atelier/capnweb"
	"atelier/host/store"
)

// Peer sessions are Cap'n Web sessions between two nodes, carried by these NATS subjects:
//
//	atl.node.<name>.open  request/reply: a dialer asks the node to serve a session (openRequest, openReply)
//	atl.node.<name>.ping  request/reply: the node's router answers with its instance id
//	atl.peer.<sid>.a      frames to the dialer of session sid
//	atl.peer.<sid>.b      frames to the node serving session sid
//
// Every frame is a kind byte, a big-endian uint64 sequence number (1, 2, ... per direction)
// and a payload. A Cap'n Web message travels as chunk frames followed by one message frame;
// a close frame carries the reason the sender's session ended. NATS keeps the order of one
// publisher's messages, so a gap in the sequence means a lost frame, which ends the session.
const (
	frameMsg    = 'm' // the last (or only) part of a message
	frameChunk  = 'c' // a part of a message; more parts follow
	frameClose  = 'x' // the sender's session ended; the payload is why
	frameHeader = 1 + 8

	// chunkSize is the largest payload of one frame (the node's max_payload is 8 MiB).
	chunkSize = 1 << 20
	// maxScratch is the largest frame buffer a transport keeps between writes.
	maxScratch = 64 << 10
	// maxReason bounds the close reason sent to the peer.
	maxReason = 1024

	// pingEvery is how often a router pings each node it shares sessions with; a ping
	// unanswered for pingEvery is a miss, and pingMisses misses in a row end the sessions.
	pingEvery  = time.Second
	pingMisses = 2
	// openTimeout bounds a Dial (when its context has no deadline) and the serve callback.
	openTimeout = 30 * time.Second
	// maxSessionsPerNode bounds the sessions one dialing node may have open on this node.
	maxSessionsPerNode = 10000
	// pendingMsgs bounds the frames queued for a session's reader (with 4 × the message limit
	// + 64 MiB of them); excess frames are dropped, which ends the session.
	pendingMsgs = 64 << 10
)

// ErrNodeUnreachable is returned (wrapped) by Dial, and ends peer sessions, when no router
// answers on a node: it is not running, or not routed to this node.
var ErrNodeUnreachable = errors.New("node unreachable (not running, or not routed to this node)")

// Hello is what an edge tells the owner when it opens a session: who it is and for whom.
type Hello struct {
	// From is the dialing node; Dial sets it.
	From store.NodeID `json:"from"`
	// TokenHash identifies the client the session is for.
	TokenHash string `json:"token"`
}

// RefusedError is returned by Dial when the node answered but did not serve the session: its
// serve callback failed, or it refused more sessions.
type RefusedError struct {
	// Node is the node that refused.
	Node store.NodeID
	// Reason is the node's error message.
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("node %s refused the peer session: %s", e.Node, e.Reason)
}

// openRequest is the body of an atl.node.<name>.open request.
type openRequest struct {
	Hello Hello `json:"hello"`
	// SID names the session's subjects; the dialer subscribed to atl.peer.<sid>.a.
	SID string `json:"sid"`
	// Instance is the dialer's router instance (what its pings answer).
	Instance string `json:"instance"`
}

// openReply answers an open request: the server's router instance, or why it refused.
type openReply struct {
	Instance string `json:"instance,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Router serves this node's side of peer sessions and opens sessions to other nodes.
type Router struct {
	nc         *nats.Conn
	log        *slog.Logger
	name       store.NodeID
	serve      func(ctx context.Context, h Hello) (any, error)
	opts       capnweb.Options
	maxMsg     int
	instance   string
	maxPerNode int
	ctx        context.Context
	cancel     context.CancelFunc
	openSub    *nats.Subscription
	pingSub    *nats.Subscription

	mu         sync.Mutex
	closed     bool
	transports map[string]*transport // by inbound subject
	perNode    map[store.NodeID]int  // served sessions per dialing node
	links      map[linkKey]*link
	wg         sync.WaitGroup // one per registered transport
}

// linkKey names one run of a peer node's router.
type linkKey struct {
	node     store.NodeID
	instance string
}

// link is the set of sessions shared with one run of a peer node's router, watched by one
// pinger goroutine while the set is not empty.
type link struct {
	key  linkKey
	ts   map[*transport]struct{}
	stop chan struct{}
}

// NewRouter subscribes atl.node.<name>.open and atl.node.<name>.ping on n's connection. For
// each open request it calls serve (its context ends after 30 s or when the router closes)
// and serves a Cap'n Web session whose main object is the result; serve's error is returned
// to the dialer (a *RefusedError). opts configures every peer session, both directions
// (Main is the dialer side's main object); its MaxMessageSize also bounds a reassembled message.
// Other nodes learn of the router's subscriptions over their routes a few milliseconds after
// NewRouter returns (until then their Dial fails with ErrNodeUnreachable): announce the node
// to the cluster only after it.
func NewRouter(n *Node, serve func(ctx context.Context, h Hello) (any, error), opts capnweb.Options) (*Router, error) {
	id, err := randomID()
	if err != nil {
		return nil, fmt.Errorf("start peer router on %s: %w", n.Name(), err)
	}
	maxMsg := opts.Limits.MaxMessageSize
	if maxMsg <= 0 {
		maxMsg = capnweb.DefaultLimits().MaxMessageSize
	}
	r := &Router{
		nc: n.Conn(), log: n.log, name: n.Name(), serve: serve, opts: opts, maxMsg: maxMsg, instance: id,
		maxPerNode: maxSessionsPerNode, transports: map[string]*transport{},
		perNode: map[store.NodeID]int{}, links: map[linkKey]*link{},
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	if r.pingSub, err = r.nc.Subscribe(pingSubject(r.name), func(m *nats.Msg) { _ = m.Respond([]byte(r.instance)) }); err != nil {
		return nil, fmt.Errorf("start peer router on %s: %w", r.name, err)
	}
	if r.openSub, err = r.nc.Subscribe(openSubject(r.name), r.handleOpen); err != nil {
		_ = r.pingSub.Unsubscribe()
		return nil, fmt.Errorf("start peer router on %s: %w", r.name, err)
	}
	// The local server has the subscriptions once Flush returns; other nodes learn of them
	// over their routes a moment later.
	if err := r.nc.Flush(); err != nil {
		r.Close()
		return nil, fmt.Errorf("start peer router on %s: %w", r.name, err)
	}
	return r, nil
}

func openSubject(node store.NodeID) string { return "atl.node." + string(node) + ".open" }
func pingSubject(node store.NodeID) string { return "atl.node." + string(node) + ".ping" }

// randomID returns 16 random bytes in hex: session ids and router instances.
func randomID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// validID reports whether s is what randomID returns.
func validID(s string) bool {
	if len(s) != 32 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// validNode reports whether a node name can be a NATS subject token.
func validNode(n store.NodeID) bool { return checkName(string(n)) == nil }

// Dial opens a peer session to node for h (h.From is set to this node). The session's main
// stub is what node's serve returned. A node that is not running fails at once with an error
// wrapping ErrNodeUnreachable; a refusal is a *RefusedError.
func (r *Router) Dial(ctx context.Context, node store.NodeID, h Hello) (*capnweb.Session, error) {
	if !validNode(node) {
		return nil, fmt.Errorf("dial node %q: not a node name", node)
	}
	h.From = r.name
	sid, err := randomID()
	if err != nil {
		return nil, fmt.Errorf("dial node %s: %w", node, err)
	}
	t, err := r.newTransport(node, "atl.peer."+sid+".a", "atl.peer."+sid+".b", "")
	if err != nil {
		return nil, fmt.Errorf("dial node %s: %w", node, err)
	}
	body, err := json.Marshal(openRequest{Hello: h, SID: sid, Instance: r.instance})
	if err != nil {
		t.Close(err)
		return nil, fmt.Errorf("dial node %s: %w", node, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, openTimeout)
		defer cancel()
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(r.ctx, cancel)()
	m, err := r.nc.RequestWithContext(ctx, openSubject(node), body)
	if err != nil {
		// The server may have made the session after all: the close frame ends it.
		t.Close(fmt.Errorf("dial failed: %w", err))
		if errors.Is(err, nats.ErrNoResponders) {
			return nil, fmt.Errorf("dial node %s: %w", node, ErrNodeUnreachable)
		}
		return nil, fmt.Errorf("dial node %s: %w", node, err)
	}
	var rep openReply
	if err := json.Unmarshal(m.Data, &rep); err != nil || (rep.Error == "" && !validID(rep.Instance)) {
		t.Close(errors.New("bad open reply"))
		return nil, fmt.Errorf("dial node %s: bad open reply %.100q", node, m.Data)
	}
	if rep.Error != "" {
		t.Close(errors.New("refused"))
		return nil, &RefusedError{Node: node, Reason: rep.Error}
	}
	r.attach(t, linkKey{node, rep.Instance})
	return capnweb.NewSession(t, r.sessionOptions(r.opts.Main, node)), nil
}

// sessionOptions returns the options of a peer session with node.
func (r *Router) sessionOptions(main any, node store.NodeID) capnweb.Options {
	o := r.opts
	o.Main = main
	o.Peer = capnweb.PeerInfo{Transport: "nats", RemoteAddr: "node " + string(node)}
	return o
}

// handleOpen answers an open request: it registers the session's transport at once (so that
// the per-node bound and duplicate ids are checked in arrival order) and serves it on its
// own goroutine.
func (r *Router) handleOpen(m *nats.Msg) {
	if m.Reply == "" {
		return // nobody would learn of the session
	}
	var req openRequest
	if err := json.Unmarshal(m.Data, &req); err != nil {
		r.reply(m, openReply{Error: "bad open request: " + err.Error()})
		return
	}
	if !validID(req.SID) || !validID(req.Instance) || !validNode(req.Hello.From) {
		r.reply(m, openReply{Error: "bad open request: malformed session id, instance or node name"})
		return
	}
	t, err := r.newTransport(req.Hello.From, "atl.peer."+req.SID+".b", "atl.peer."+req.SID+".a", req.Hello.From)
	if err != nil {
		r.reply(m, openReply{Error: err.Error()})
		return
	}
	go r.accept(m, req, t)
}

// serveSafely runs serve, turning a panic into a refusal (the node stays up).
func (r *Router) serveSafely(ctx context.Context, h Hello) (main any, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.log.Error("peer session refused: the serve callback panicked", "from", h.From, "panic", p)
			main, err = nil, fmt.Errorf("internal error while opening the session")
		}
	}()
	return r.serve(ctx, h)
}

// accept runs serve for an open request and starts the session on t.
func (r *Router) accept(m *nats.Msg, req openRequest, t *transport) {
	ctx, cancel := context.WithTimeout(r.ctx, openTimeout)
	main, err := r.serveSafely(ctx, req.Hello)
	cancel()
	if err != nil {
		t.Close(errors.New("refused"))
		r.reply(m, openReply{Error: err.Error()})
		return
	}
	r.attach(t, linkKey{req.Hello.From, req.Instance})
	// A transport failed meanwhile (the router closed) ends the session at once, which
	// disposes main.
	capnweb.NewSession(t, r.sessionOptions(main, req.Hello.From))
	if err := t.failed(); err != nil {
		r.reply(m, openReply{Error: err.Error()})
		return
	}
	r.reply(m, openReply{Instance: r.instance})
}

func (r *Router) reply(m *nats.Msg, rep openReply) {
	b, _ := json.Marshal(rep) // strings only: cannot fail
	_ = m.Respond(b)
}

// newTransport subscribes in and registers a transport with peer. served names the dialing
// node of a session this node serves ("" for a dialed one), which counts against its bound.
func (r *Router) newTransport(peer store.NodeID, in, out string, served store.NodeID) (*transport, error) {
	t := &transport{r: r, peer: peer, in: in, out: out, served: served, asm: assembler{max: r.maxMsg}, frames: make(chan []byte)}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		return nil, fmt.Errorf("the peer router of node %s is closed", r.name)
	case r.transports[in] != nil:
		r.mu.Unlock()
		return nil, fmt.Errorf("peer session id %s is in use", in)
	case served != "" && r.perNode[served] >= r.maxPerNode:
		r.mu.Unlock()
		return nil, fmt.Errorf("node %s already has %d peer sessions open on node %s, the most allowed", served, r.maxPerNode, r.name)
	}
	r.transports[in] = t
	if served != "" {
		r.perNode[served]++
	}
	r.wg.Add(1)
	r.mu.Unlock()
	// An asynchronous subscription queues frames without a preallocated buffer (a
	// synchronous one allocates a 64k-entry channel per session); its callback hands them
	// to ReadMessage one at a time.
	sub, err := r.nc.Subscribe(in, t.deliver)
	if err == nil {
		// Generous: a session's reader keeps up unless its node is overloaded, and a frame
		// dropped here ends the session rather than corrupting it.
		err = sub.SetPendingLimits(pendingMsgs, 4*r.maxMsg+64<<20)
	}
	if err != nil {
		t.cancel()
		r.remove(t)
		return nil, fmt.Errorf("subscribe %s: %w", in, err)
	}
	t.sub = sub
	return t, nil
}

// attach adds t to the link with key, starting the link's pinger if it is new.
func (r *Router) attach(t *transport, key linkKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	l := r.links[key]
	if l == nil {
		l = &link{key: key, ts: map[*transport]struct{}{}, stop: make(chan struct{})}
		r.links[key] = l
		go r.watch(l)
	}
	l.ts[t] = struct{}{}
	t.link = l
}

// remove unregisters a transport that has closed.
func (r *Router) remove(t *transport) {
	r.mu.Lock()
	delete(r.transports, t.in)
	if t.served != "" {
		if r.perNode[t.served]--; r.perNode[t.served] == 0 {
			delete(r.perNode, t.served)
		}
	}
	if l := t.link; l != nil {
		delete(l.ts, t)
		if len(l.ts) == 0 {
			r.dropLinkLocked(l)
		}
	}
	r.mu.Unlock()
	r.wg.Done()
}

// dropLinkLocked forgets l and stops its pinger; r.mu must be held.
func (r *Router) dropLinkLocked(l *link) {
	if r.links[l.key] == l {
		delete(r.links, l.key)
		close(l.stop)
	}
}

// watch pings l's node every pingEvery until l has no sessions. A node that has no router
// any more, another router instance (it restarted), or pingMisses unanswered pings in a row
// end every session of l; so does a session that lost frames to a slow reader.
func (r *Router) watch(l *link) {
	tick := time.NewTicker(pingEvery)
	defer tick.Stop()
	misses := 0
	for {
		select {
		case <-l.stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(r.ctx, pingEvery)
		m, err := r.nc.RequestWithContext(ctx, pingSubject(l.key.node), nil)
		cancel()
		var dead error
		switch {
		case err == nil && string(m.Data) == l.key.instance:
			misses = 0
		case err == nil:
			dead = errors.New("the node restarted")
		case errors.Is(err, nats.ErrNoResponders):
			dead = ErrNodeUnreachable
		case r.ctx.Err() != nil:
			return // the router is closing its sessions
		default:
			if misses++; misses >= pingMisses {
				dead = fmt.Errorf("the node did not answer %d pings in a row (%w)", misses, err)
			}
		}
		r.mu.Lock()
		ts := make([]*transport, 0, len(l.ts))
		for t := range l.ts {
			ts = append(ts, t)
		}
		if dead != nil {
			r.dropLinkLocked(l)
		}
		r.mu.Unlock()
		if dead != nil {
			r.log.Warn("ending the peer sessions with a node", "peer", l.key.node, "sessions", len(ts), "err", dead)
		}
		for _, t := range ts {
			if dead != nil {
				t.fail(dead)
			} else if n, _ := t.sub.Dropped(); n > 0 {
				t.fail(fmt.Errorf("%d frames were dropped because the session's reader fell behind", n))
			}
		}
		if dead != nil {
			return
		}
	}
}

// Sessions counts the open peer sessions, both directions (and those being opened).
func (r *Router) Sessions() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.transports)
}

// Close stops serving, ends every peer session (each side's session ends with an error naming
// this node's router closing) and waits until they have ended.
func (r *Router) Close() {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	ts := make([]*transport, 0, len(r.transports))
	for _, t := range r.transports {
		ts = append(ts, t)
	}
	r.mu.Unlock()
	_ = r.openSub.Unsubscribe()
	r.cancel()
	err := fmt.Errorf("the peer router of node %s closed", r.name)
	for _, t := range ts {
		t.fail(err)
	}
	r.wg.Wait()
	_ = r.pingSub.Unsubscribe()
}

// transport is a capnweb.Transport over one session's pair of subjects.
type transport struct {
	r      *Router
	peer   store.NodeID
	in     string
	out    string
	served store.NodeID
	sub    *nats.Subscription
	ctx    context.Context // cancelled to unblock ReadMessage
	cancel context.CancelFunc
	link   *link // guarded by r.mu

	frames chan []byte // from the subscription's callback to ReadMessage
	asm    assembler   // used by ReadMessage only

	wmu     sync.Mutex // one writer at a time, frames numbered in order
	outSeq  uint64
	scratch []byte

	mu      sync.Mutex
	failErr error
	once    sync.Once
}

// deliver is the subscription's callback: it waits until ReadMessage takes the frame (while
// it waits, NATS queues the next ones, up to the pending limits).
func (t *transport) deliver(m *nats.Msg) {
	select {
	case t.frames <- m.Data:
	case <-t.ctx.Done():
	}
}

// ReadMessage returns the next whole message from the peer.
func (t *transport) ReadMessage() ([]byte, error) {
	for {
		var f []byte
		select {
		case f = <-t.frames:
		case <-t.ctx.Done():
		}
		if err := t.ctx.Err(); err != nil { // failed or closed: a frame taken meanwhile does not count
			if ferr := t.failed(); ferr != nil {
				err = ferr
			}
			return nil, fmt.Errorf("peer session with node %s: %w", t.peer, err)
		}
		msg, done, err := t.asm.add(f)
		if err != nil {
			return nil, fmt.Errorf("peer session with node %s: %w", t.peer, err)
		}
		if done {
			return msg, nil
		}
	}
}

// WriteMessage sends msg as one message frame, or chunk frames and a last message frame.
func (t *transport) WriteMessage(msg []byte) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	for {
		kind, part := byte(frameMsg), msg
		if len(part) > chunkSize {
			kind, part = frameChunk, msg[:chunkSize]
		}
		if err := t.publishLocked(kind, part); err != nil {
			return fmt.Errorf("peer session with node %s: send: %w", t.peer, err)
		}
		if kind == frameMsg {
			return nil
		}
		msg = msg[chunkSize:]
	}
}

// publishLocked sends one frame; t.wmu must be held.
func (t *transport) publishLocked(kind byte, payload []byte) error {
	t.outSeq++
	buf := t.scratch[:0]
	if need := frameHeader + len(payload); need > cap(buf) && need > maxScratch {
		buf = make([]byte, 0, need) // the NATS client copies it: not kept
	}
	buf = append(buf, kind)
	buf = binary.BigEndian.AppendUint64(buf, t.outSeq)
	buf = append(buf, payload...)
	if cap(buf) <= maxScratch {
		t.scratch = buf
	}
	return t.r.nc.Publish(t.out, buf)
}

// Close sends a close frame with reason, unsubscribes and unregisters the transport.
func (t *transport) Close(reason error) error {
	t.once.Do(func() {
		text := "session closed"
		var ce *capnweb.Error
		if errors.As(reason, &ce) {
			text = ce.Message // without the JavaScript class name
		} else if reason != nil {
			text = reason.Error()
		}
		if len(text) > maxReason {
			text = text[:maxReason]
		}
		t.wmu.Lock()
		_ = t.publishLocked(frameClose, []byte(text)) // best effort: the peer may be gone
		t.wmu.Unlock()
		t.cancel()
		if t.sub != nil {
			_ = t.sub.Unsubscribe()
		}
		t.r.remove(t)
	})
	return nil
}

// fail makes ReadMessage return err (the first one given), which ends the session.
func (t *transport) fail(err error) {
	t.mu.Lock()
	if t.failErr == nil {
		t.failErr = err
	}
	t.mu.Unlock()
	t.cancel()
}

// failed returns the error given to fail, or nil.
func (t *transport) failed() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failErr
}

// assembler checks the frames of one direction and joins chunks into messages.
type assembler struct {
	max int    // the largest message
	seq uint64 // the last frame's sequence number
	buf []byte // chunks of the message being received
}

// add takes one frame: it returns a whole message when done is set, and an error for a
// malformed frame, a lost frame, an oversized message or a close frame.
func (a *assembler) add(f []byte) (msg []byte, done bool, err error) {
	if len(f) < frameHeader {
		return nil, false, fmt.Errorf("bad frame of %d bytes", len(f))
	}
	if seq := binary.BigEndian.Uint64(f[1:frameHeader]); seq != a.seq+1 {
		return nil, false, fmt.Errorf("frame %d arrived after frame %d: frames were lost or forged", seq, a.seq)
	}
	a.seq++
	p := f[frameHeader:]
	switch f[0] {
	case frameClose:
		return nil, false, fmt.Errorf("closed by the peer: %s", strings.ToValidUTF8(string(p), "?"))
	case frameChunk, frameMsg:
		if len(a.buf)+len(p) > a.max {
			return nil, false, fmt.Errorf("a message exceeds the limit of %d bytes", a.max)
		}
		if f[0] == frameChunk {
			a.buf = append(a.buf, p...)
			return nil, false, nil
		}
		if a.buf == nil {
			return p, true, nil
		}
		msg, a.buf = append(a.buf, p...), nil
		return msg, true, nil
	}
	return nil, false, fmt.Errorf("unknown frame kind %q", f[0])
}
