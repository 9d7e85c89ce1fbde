package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// The buckets of leases and membership (notes/scale-out.md §3A).
const (
	leaseBucket  = "ATL_LEASE" // ws.<workspace> = name of the node running it
	memberBucket = "ATL_NODES" // node.<name> = the node's heartbeat (memberRecord)
)

// Timing of leases and heartbeats, as fractions of Config.LeaseTTL.
const (
	renewsPerTTL     = 3  // a lease is renewed every TTL/3
	retriesPerTTL    = 10 // a failed renewal is retried after TTL/10
	fenceMarginPart  = 4  // a claim is lost TTL/4 before its lease could expire
	heartbeatsPerTTL = 4  // a node publishes its record every TTL/4
	heartbeatsKept   = 3  // and the record expires after three missed heartbeats
	claimAttempts    = 10 // races (a lease expiring or released while claimed) retried
)

// claimBackoff separates the attempts of a claim that raced with a change of the lease.
const claimBackoff = 20 * time.Millisecond

// ErrDraining refuses a claim on a node that is handing its workspaces over.
var ErrDraining = errors.New("this node is draining and starts no workspace")

// Leases keeps this node's workspace leases (KV bucket ATL_LEASE, whose TTL is
// Config.LeaseTTL) and its membership record (KV bucket ATL_NODES, published every
// LeaseTTL/4 and expiring after three missed heartbeats). It also watches every node's record,
// so Nodes and Pick answer from memory.
//
// Leases give liveness only: a node that lost its lease may still believe it holds it for a
// moment, so durable writes must carry the workspace's epoch (the store fences them).
type Leases struct {
	node      *Node
	log       *slog.Logger
	ttl       time.Duration
	lease     jetstream.KeyValue
	members   jetstream.KeyValue
	started   time.Time
	watch     jetstream.KeyWatcher
	stop      chan struct{}
	wg        sync.WaitGroup
	publishM  sync.Mutex // orders the puts of this node's record
	published bool       // this process put its record (under publishM)
	applied   atomic.Uint64

	mu       sync.Mutex
	addr     string
	draining bool
	closed   bool
	watching bool                         // the membership watch still delivers
	claims   map[store.WorkspaceID]*Claim // nil while a claim is under way
	nodes    map[store.NodeID]NodeInfo    // every live record, from the watch
}

// NodeInfo is one node's membership record.
type NodeInfo struct {
	Name     store.NodeID `json:"name"`
	Address  string       `json:"address,omitempty"`
	Draining bool         `json:"draining"`
	Started  time.Time    `json:"started"`
	// Seen is when the node last published its record (the server's time).
	Seen   time.Time `json:"seen"`
	Leases int       `json:"leases"`
	// Applied is the sequence of the last log entry the node's replica had applied when it
	// published the record (0 while it is still loading); the log is never compacted past
	// any live node's.
	Applied uint64 `json:"applied"`
}

// memberRecord is the value of node.<name> in ATL_NODES.
type memberRecord struct {
	Address  string    `json:"address,omitempty"`
	Draining bool      `json:"draining,omitempty"`
	Started  time.Time `json:"started"`
	Leases   int       `json:"leases"`
	Applied  uint64    `json:"applied,omitempty"`
}

// NewLeases creates (or binds) the lease and membership buckets, publishes this node's record
// and loads the others'.
func NewLeases(ctx context.Context, n *Node) (*Leases, error) {
	cfg := n.Config()
	if err := checkName(string(n.Name())); err != nil {
		return nil, fmt.Errorf("leases: node name: %w", err)
	}
	l := &Leases{node: n, log: n.log, ttl: cfg.LeaseTTL, started: time.Now(), stop: make(chan struct{}),
		watching: true, claims: map[store.WorkspaceID]*Claim{}, nodes: map[store.NodeID]NodeInfo{}}
	var err error
	if l.lease, err = l.bucket(ctx, leaseBucket, l.ttl); err != nil {
		return nil, err
	}
	if l.members, err = l.bucket(ctx, memberBucket, l.memberTTL()); err != nil {
		return nil, err
	}
	// The watch lives until Close, not until ctx ends.
	if l.watch, err = l.members.WatchAll(context.WithoutCancel(ctx)); err != nil {
		return nil, fmt.Errorf("leases: watch %s: %w", memberBucket, err)
	}
	loaded := make(chan struct{})
	l.wg.Add(1)
	go l.follow(loaded)
	select {
	case <-loaded:
	case <-ctx.Done():
		l.Close()
		return nil, fmt.Errorf("leases: load the membership records: %w", ctx.Err())
	}
	l.mu.Lock()
	watching := l.watching
	l.mu.Unlock()
	if !watching {
		l.Close()
		return nil, fmt.Errorf("leases: the watch of %s ended while loading", memberBucket)
	}
	if err := l.awaitName(ctx); err != nil {
		l.Close()
		return nil, fmt.Errorf("leases: %w", err)
	}
	if err := n.ensure(ctx, "this node's membership record", l.publish); err != nil {
		l.Close()
		return nil, fmt.Errorf("leases: %w", err)
	}
	l.wg.Add(1)
	go l.heartbeat()
	return l, nil
}

// awaitName makes sure no other process serves under this node's name. A live membership
// record of the name is waited out while it is not renewed (a previous process of this node
// that crashed: its record expires within memberTTL, and its leases with it); a record renewed
// meanwhile belongs to a running process, and this one refuses to start, since two processes
// of one name would take each other's leases.
func (l *Leases) awaitName(ctx context.Context) error {
	self := l.node.Name()
	l.mu.Lock()
	first, ok := l.nodes[self]
	l.mu.Unlock()
	if !ok {
		return nil
	}
	l.log.Warn("a membership record of this node's name exists; waiting for it to expire (a previous process that stopped without leaving)",
		"address", first.Address, "started", first.Started, "expires within", l.memberTTL())
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the old membership record of node %s to expire: %w", self, ctx.Err())
		case <-time.After(l.ttl / heartbeatsPerTTL / 4):
		}
		l.mu.Lock()
		cur, ok := l.nodes[self]
		watching := l.watching
		l.mu.Unlock()
		switch {
		case !watching:
			return fmt.Errorf("the watch of %s ended while waiting for node %s's old record to expire", memberBucket, self)
		case !ok:
			return nil
		case cur.Seen.After(first.Seen):
			return fmt.Errorf("node name %s is in use by a running node (address %q, started %s): give this one another --node, or stop that one first",
				self, cur.Address, cur.Started.Format(time.RFC3339))
		}
	}
}

// memberTTL is how long a membership record outlives its last heartbeat.
func (l *Leases) memberTTL() time.Duration { return heartbeatsKept * l.ttl / heartbeatsPerTTL }

// bucket creates the KV bucket name with the given TTL, or binds it when it exists; every node
// must use the same TTL.
func (l *Leases) bucket(ctx context.Context, name string, ttl time.Duration) (jetstream.KeyValue, error) {
	js := l.node.JetStream()
	var (
		kv jetstream.KeyValue
		st jetstream.KeyValueStatus
	)
	err := l.node.ensure(ctx, "bucket "+name, func(ctx context.Context) error {
		var err error
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: name, History: 1, TTL: ttl, LimitMarkerTTL: max(ttl, time.Second),
			Replicas: l.node.Config().Replicas, Storage: jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) { // made by a node with other settings
			kv, err = js.KeyValue(ctx, name)
		}
		if err == nil { // a new bucket may not answer at once while its stream forms
			st, err = kv.Status(ctx)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("leases: %w", err)
	}
	if st.TTL() != ttl {
		return nil, fmt.Errorf("leases: bucket %s keeps entries %s but this node expects %s: every node needs the same lease TTL", name, st.TTL(), ttl)
	}
	return kv, nil
}

// follow keeps l.nodes up to date from the membership watch; loaded is closed once the
// records present at the start have arrived.
func (l *Leases) follow(loaded chan struct{}) {
	defer l.wg.Done()
	defer func() {
		l.mu.Lock()
		l.watching = false
		l.mu.Unlock()
		if loaded != nil {
			close(loaded)
		}
	}()
	for e := range l.watch.Updates() {
		if e == nil {
			if loaded != nil {
				close(loaded)
				loaded = nil
			}
			continue
		}
		name, ok := strings.CutPrefix(e.Key(), "node.")
		if !ok {
			continue
		}
		id := store.NodeID(name)
		var rec memberRecord
		live := e.Operation() == jetstream.KeyValuePut
		if live {
			if err := json.Unmarshal(e.Value(), &rec); err != nil {
				l.log.Warn("unreadable membership record", "node", name, "err", err)
				live = false
			}
		}
		l.mu.Lock()
		if live {
			l.nodes[id] = rec.info(id, e.Created())
		} else {
			delete(l.nodes, id)
		}
		l.mu.Unlock()
	}
}

// heartbeat publishes this node's record every TTL/4 until Close.
func (l *Leases) heartbeat() {
	defer l.wg.Done()
	every := l.ttl / heartbeatsPerTTL
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		if err := l.publish(ctx); err != nil {
			l.log.Warn("membership heartbeat failed", "err", err)
		}
		cancel()
	}
}

// HeldHere is the number of leases this node holds.
func (l *Leases) HeldHere() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heldLocked()
}

func (l *Leases) heldLocked() int {
	n := 0
	for _, c := range l.claims {
		if c != nil {
			n++
		}
	}
	return n
}

// publish puts this node's record.
func (l *Leases) publish(ctx context.Context) error {
	l.publishM.Lock()
	defer l.publishM.Unlock()
	l.mu.Lock()
	rec := l.recordLocked()
	l.mu.Unlock()
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode membership record: %w", err)
	}
	if _, err := l.members.Put(ctx, memberKey(l.node.Name()), b); err != nil {
		return fmt.Errorf("publish membership record: %w", err)
	}
	l.published = true // under publishM, as Close reads it
	return nil
}

// recordLocked is this node's membership record as it is now (l.mu held).
func (l *Leases) recordLocked() memberRecord {
	return memberRecord{Address: l.addr, Draining: l.draining, Started: l.started, Leases: l.heldLocked(), Applied: l.applied.Load()}
}

// info is the record of node name, published at seen.
func (r memberRecord) info(name store.NodeID, seen time.Time) NodeInfo {
	return NodeInfo{Name: name, Address: r.Address, Draining: r.Draining, Started: r.Started,
		Seen: seen, Leases: r.Leases, Applied: r.Applied}
}

// current returns n, this node's published record, with the values this node has now: the
// published record is up to a heartbeat old (a quarter of the lease TTL).
func (l *Leases) current(n NodeInfo) NodeInfo {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.recordLocked().info(n.Name, n.Seen)
}

// SetApplied records the sequence of the last log entry this node's replica applied,
// published with the next heartbeat.
func (l *Leases) SetApplied(seq uint64) { l.applied.Store(seq) }

// SetAddress sets this node's HTTP address, published with the next heartbeat.
func (l *Leases) SetAddress(addr string) {
	l.mu.Lock()
	l.addr = addr
	l.mu.Unlock()
}

// SetDraining marks this node draining (Pick passes it over and Claim refuses), or serving
// again, and publishes the change at once.
func (l *Leases) SetDraining(ctx context.Context, on bool) error {
	l.mu.Lock()
	l.draining = on
	l.mu.Unlock()
	if err := l.publish(ctx); err != nil {
		return fmt.Errorf("set draining %t: %w", on, err)
	}
	return nil
}

// Draining reports whether this node is draining.
func (l *Leases) Draining() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.draining
}

// Nodes lists the live nodes (whose records have not expired), sorted by name.
func (l *Leases) Nodes(ctx context.Context) ([]NodeInfo, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.watching {
		return nil, errors.New("list nodes: the membership watch has stopped")
	}
	out := make([]NodeInfo, 0, len(l.nodes))
	for _, n := range l.nodes {
		// A record unrefreshed for a whole lease TTL (four heartbeats) is a dead node's, even
		// while a leader change of the bucket holds its expiry up.
		if n.Name == l.node.Name() || time.Since(n.Seen) <= l.ttl {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, func(a, b NodeInfo) int { return strings.Compare(string(a.Name), string(b.Name)) })
	return out, nil
}

// Pick chooses the node that should run ws: the highest rendezvous hash of ws and the node's
// name among the live nodes that are not draining, so every node picks the same one from the
// same records, and a node joining or leaving moves only the workspaces it wins or held.
func (l *Leases) Pick(ctx context.Context, ws store.WorkspaceID) (store.NodeID, error) {
	if err := checkName(string(ws)); err != nil {
		return "", fmt.Errorf("pick a node for workspace: %w", err)
	}
	nodes, err := l.Nodes(ctx)
	if err != nil {
		return "", fmt.Errorf("pick a node for workspace %s: %w", ws, err)
	}
	var best store.NodeID
	var bestScore uint64
	for _, n := range nodes {
		if n.Draining {
			continue
		}
		if s := rendezvous(ws, n.Name); best == "" || s > bestScore {
			best, bestScore = n.Name, s
		}
	}
	if best == "" {
		return "", fmt.Errorf("pick a node for workspace %s: no live node accepts workspaces (%d live, all draining)", ws, len(nodes))
	}
	return best, nil
}

// rendezvous scores node for ws: FNV-1a of both, finished with the splitmix64 mixer so
// that every bit depends on every input byte.
func rendezvous(ws store.WorkspaceID, node store.NodeID) uint64 {
	h := fnv.New64a()
	h.Write([]byte(ws))
	h.Write([]byte{0})
	h.Write([]byte(node))
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

// Holder returns the node holding ws's lease; false when nobody does.
func (l *Leases) Holder(ctx context.Context, ws store.WorkspaceID) (store.NodeID, bool, error) {
	if err := checkName(string(ws)); err != nil {
		return "", false, fmt.Errorf("lease holder: %w", err)
	}
	e, err := l.lease.Get(ctx, leaseKey(ws))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("lease holder of workspace %s: %w", ws, err)
	}
	if l.stale(e) {
		return "", false, nil
	}
	return store.NodeID(e.Value()), true, nil
}

// stale reports whether a lease went unrenewed for longer than the TTL and a half. The server
// removes such an entry itself, but a change of the bucket's Raft leader (the leader's node
// died) can hold that up for seconds; its holder has stopped using it by then (it self-fences
// a quarter TTL before the TTL), so it may be taken over. Clocks only decide liveness here:
// a holder that is wrongly taken over is refused by the epoch fence.
func (l *Leases) stale(e jetstream.KeyValueEntry) bool {
	return time.Since(e.Created()) > l.ttl+l.ttl/2
}

// Held returns every lease: workspace to the node holding it.
func (l *Leases) Held(ctx context.Context) (map[store.WorkspaceID]store.NodeID, error) {
	w, err := l.lease.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("list leases: %w", err)
	}
	defer w.Stop()
	held := map[store.WorkspaceID]store.NodeID{}
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("list leases: the watch ended early")
			}
			if e == nil {
				return held, nil
			}
			if ws, ok := strings.CutPrefix(e.Key(), "ws."); ok && !l.stale(e) {
				held[store.WorkspaceID(ws)] = store.NodeID(e.Value())
			}
		case <-ctx.Done():
			return nil, fmt.Errorf("list leases: %w", ctx.Err())
		}
	}
}

// Claim takes ws's lease for this node and keeps renewing it until Release, Close or its
// loss. Another node's live lease gives a *store.OwnerError naming it; a lease under this
// node's name is taken over: one left by an earlier life of the process, or this process's
// current claim of ws, which ends (its Lost closes) as the new one starts. Claims refuse
// while the node is draining, and while another claim of ws is under way on this node.
func (l *Leases) Claim(ctx context.Context, ws store.WorkspaceID) (*Claim, error) {
	if err := checkName(string(ws)); err != nil {
		return nil, fmt.Errorf("claim workspace: %w", err)
	}
	l.mu.Lock()
	prev, busy := l.claims[ws]
	switch {
	case l.closed:
		l.mu.Unlock()
		return nil, fmt.Errorf("claim workspace %s: the leases are closed", ws)
	case l.draining:
		l.mu.Unlock()
		return nil, fmt.Errorf("claim workspace %s: %w", ws, ErrDraining)
	case busy && prev == nil:
		l.mu.Unlock()
		return nil, fmt.Errorf("claim workspace %s: another claim of it is under way on this node: %w", ws, store.ErrConflict)
	}
	l.claims[ws] = nil
	l.mu.Unlock()
	if prev != nil { // superseded: it stops renewing before the new claim takes the lease over
		prev.cancel()
		<-prev.done
		prev.end()
	}

	c := &Claim{l: l, ws: ws, key: leaseKey(ws), lost: make(chan struct{}), done: make(chan struct{})}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	sent, err := c.acquire(ctx)
	l.mu.Lock()
	if err == nil && l.closed {
		err = fmt.Errorf("claim workspace %s: the leases were closed meanwhile", ws)
		l.mu.Unlock()
		_ = c.deleteIfOurs(ctx)
		l.mu.Lock()
	}
	if err != nil {
		delete(l.claims, ws)
		l.mu.Unlock()
		c.cancel()
		return nil, err
	}
	l.claims[ws] = c
	l.mu.Unlock()
	go c.renew(sent)
	return c, nil
}

// Claim is this node's lease on one workspace.
type Claim struct {
	l      *Leases
	ws     store.WorkspaceID
	key    string
	rev    uint64 // the lease's revision; owned by renew while it runs
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when renew returns
	lost   chan struct{}
	over   bool // Lost is closed; guarded by l.mu
}

// acquire creates the lease, or takes it over from an earlier life of this node, and
// returns when the successful request was sent.
func (c *Claim) acquire(ctx context.Context) (time.Time, error) {
	self := c.l.node.Name()
	var sent time.Time
	err := c.persist(ctx, func() (raced bool, err error) {
		sent, raced, err = c.try(ctx, self)
		return raced, err
	})
	var owner *store.OwnerError
	switch {
	case errors.As(err, &owner):
		return time.Time{}, err // names the workspace already
	case err != nil:
		return time.Time{}, fmt.Errorf("claim workspace %s: %w", c.ws, err)
	}
	return sent, nil
}

// persist runs step, one request's worth of work on the lease, until it is done. While the
// lease bucket has no stream leader (a node just left and its replicas are electing one), or
// another request on the key is still being applied, requests fail without a verdict: they
// are repeated until the bucket answers again, for at most one lease TTL, without spending
// the attempts kept for races (step reports raced when the lease changed under it: expired,
// released or updated meanwhile). A write whose answer was lost may have succeeded: step's
// repeat must recognise its own work.
func (c *Claim) persist(ctx context.Context, step func() (raced bool, err error)) error {
	unavailableUntil := time.Now().Add(c.l.ttl)
	for attempt := 0; attempt < claimAttempts; {
		raced, err := step()
		switch {
		case err == nil && !raced:
			return nil
		case err != nil && (!retryable(err) || ctx.Err() != nil || time.Now().After(unavailableUntil)):
			return err
		case raced:
			attempt++
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(claimBackoff):
		}
	}
	return fmt.Errorf("the lease kept changing during %d attempts", claimAttempts)
}

// try makes one attempt at the lease: it creates it, or takes over this node's earlier lease
// or a stale one. raced reports that the lease changed under the attempt (expired, released
// or updated meanwhile), so another attempt may succeed.
func (c *Claim) try(ctx context.Context, self store.NodeID) (sent time.Time, raced bool, err error) {
	sent = time.Now()
	rev, err := c.l.lease.Create(ctx, c.key, []byte(self))
	if err == nil {
		c.rev = rev
		return sent, false, nil
	}
	if !errors.Is(err, jetstream.ErrKeyExists) {
		return time.Time{}, false, err
	}
	e, err := c.l.lease.Get(ctx, c.key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return time.Time{}, true, nil // expired or released since: create again
	case err != nil:
		return time.Time{}, false, err
	case store.NodeID(e.Value()) != self && !c.l.stale(e):
		return time.Time{}, false, &store.OwnerError{Workspace: c.ws, Node: store.NodeID(e.Value())}
	}
	// this node's own earlier lease, or a stale one: take it over
	sent = time.Now()
	rev, err = c.l.lease.Update(ctx, c.key, []byte(self), e.Revision())
	switch {
	case err == nil:
		c.rev = rev
		return sent, false, nil
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch):
		return time.Time{}, true, nil
	}
	return time.Time{}, false, fmt.Errorf("take the lease over: %w", err)
}

// renew updates the lease every TTL/3 until the claim ends. The claim is lost when an update
// finds another revision (someone took the lease, or it expired), or when no update succeeded
// within TTL minus a margin of the moment the last successful one was sent: the lease may
// have expired by then.
func (c *Claim) renew(sent time.Time) {
	defer close(c.done)
	ttl := c.l.ttl
	deadline := sent.Add(ttl - ttl/fenceMarginPart)
	fence := time.NewTimer(time.Until(deadline))
	defer fence.Stop()
	next := time.NewTimer(ttl / renewsPerTTL)
	defer next.Stop()
	self := []byte(c.l.node.Name())
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-fence.C:
			c.lose("no renewal succeeded in time")
			return
		case <-next.C:
		}
		ctx, cancel := context.WithDeadline(c.ctx, deadline)
		sent := time.Now()
		rev, err := c.l.lease.Update(ctx, c.key, self, c.rev)
		cancel()
		switch {
		case err == nil:
			c.rev = rev
			deadline = sent.Add(ttl - ttl/fenceMarginPart)
			fence.Reset(time.Until(deadline))
			next.Reset(ttl / renewsPerTTL)
		case lastSeqCode(err) == jetstream.JSErrCodeStreamWrongLastSequence:
			c.lose("the lease changed hands or expired")
			return
		case c.ctx.Err() != nil:
			return
		default: // unavailable, timed out, or the key busy (10164): try again soon
			c.l.log.Debug("lease renewal failed", "workspace", c.ws, "err", err)
			next.Reset(ttl / retriesPerTTL)
		}
	}
}

// lastSeqCode returns the error code of a "wrong last sequence" refusal (10071: the revision
// differs; 10164: the key is being written by another request), or 0.
func lastSeqCode(err error) jetstream.ErrorCode {
	var api *jetstream.APIError
	if errors.As(err, &api) && (api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
		return api.ErrorCode
	}
	return 0
}

// lose ends the claim as lost (called by renew).
func (c *Claim) lose(why string) {
	c.l.log.Warn("workspace lease lost", "workspace", c.ws, "why", why)
	c.end()
}

// end closes Lost and frees the workspace's slot in this node's claims, once.
func (c *Claim) end() {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	if c.over {
		return
	}
	c.over = true
	if c.l.claims[c.ws] == c {
		delete(c.l.claims, c.ws)
	}
	close(c.lost)
}

// ended reports whether the claim has ended.
func (c *Claim) ended() bool {
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.over
}

// Lost is closed when the claim ends: its lease was taken, expired, or could not be renewed in
// time (the holder must stop the workspace at once), or Release or Close ended it.
func (c *Claim) Lost() <-chan struct{} { return c.lost }

// Release stops renewing and deletes the lease if it is still this claim's, so that another
// node may claim the workspace at once. Releasing a claim that has ended already (lost, or
// its Leases closed) does nothing.
func (c *Claim) Release(ctx context.Context) error {
	c.cancel()
	<-c.done
	if c.ended() {
		return nil
	}
	defer c.end()
	if err := c.deleteIfOurs(ctx); err != nil {
		return fmt.Errorf("release workspace %s: %w", c.ws, err)
	}
	return nil
}

// deleteIfOurs deletes the lease while it is under this node's name. Only a claim holding the
// workspace's slot in l.claims calls it, so a lease under this name is this claim's. A refusal
// for another revision is checked against the lease as read back, which may lag (a read can
// be answered by a replica that has not applied the newest write yet): the delete is repeated
// with the revision read, after a pause, until the lease is gone or another node's.
func (c *Claim) deleteIfOurs(ctx context.Context) error {
	rev := c.rev
	return c.persist(ctx, func() (raced bool, err error) {
		err = c.l.lease.Delete(ctx, c.key, jetstream.LastRevision(rev))
		if lastSeqCode(err) != jetstream.JSErrCodeStreamWrongLastSequence {
			return false, err
		}
		e, err := c.l.lease.Get(ctx, c.key)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			return false, nil
		case err != nil:
			return false, err
		case store.NodeID(e.Value()) != c.l.node.Name():
			return false, nil
		}
		rev = e.Revision()
		return true, nil
	})
}

// Close stops heartbeats and renewals and deletes this node's membership record. Its claims
// end (Lost closes) without deleting their leases, which expire after the TTL unless their
// holders released them first.
func (l *Leases) Close() {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	l.closed = true
	var claims []*Claim
	for _, c := range l.claims {
		if c != nil {
			claims = append(claims, c)
		}
	}
	l.mu.Unlock()
	for _, c := range claims {
		c.cancel()
		<-c.done
		c.end()
	}
	close(l.stop)
	_ = l.watch.Stop()
	l.wg.Wait()
	l.publishM.Lock()
	defer l.publishM.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), l.ttl)
	defer cancel()
	if !l.published {
		return // the record of this name, if any, is another process's
	}
	if err := l.members.Delete(ctx, memberKey(l.node.Name())); err != nil {
		l.log.Warn("could not delete this node's membership record; it expires", "err", err)
	}
}

func leaseKey(ws store.WorkspaceID) string { return "ws." + string(ws) }

func memberKey(n store.NodeID) string { return "node." + string(n) }
