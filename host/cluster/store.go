package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"atelier/host/quota"
	"atelier/host/store"
)

// Store is store.Store replicated over the nodes of a cluster by state machine replication:
// every write is an entry of the ATL_LOG stream, and every node applies the log, in order, to
// its own bbolt replica by calling the same store.Bolt methods a single node uses, so that all
// replicas reach the same state and the same decisions (a taken user name is ErrConflict on
// every node). Reads are served by the local replica; a read that finds nothing first waits
// until the replica has applied the whole log and reads again, so that a record written on
// another node a moment ago is found.
//
// A write returns once it is in the log (replicated to a majority of the stream's replicas)
// and the local replica applied it, with the replica's outcome. Workspace commits are fenced by
// the NATS server (see Acquire and Open).
//
// The replica file is deleted and rebuilt on every start (a file at its path that is not a
// replica is refused, never deleted): from the newest snapshot and the log entries after it
// (see Compact), and is written without fsync: durability comes from JetStream. A replica
// that finds entries missing from the log (compacted while the node was away, a stopped
// process resumed) stops applying and reports it on Failed: the process must start again.
//
// Entries whose outcome a replica could otherwise choose differently are fixed by the
// publisher: new ids and times (Bootstrap's user, audit entries without a time) and the
// retention limits (SetRetention is an entry of the log too).
type Store struct {
	node    *Node
	leases  *Leases
	js      jetstream.JetStream
	stream  jetstream.Stream
	blobs   *blobs
	snaps   *snapshots
	replica *store.Bolt
	// replicaPath is the replica's file; snapshots are written next to it first.
	replicaPath string
	log         *slog.Logger

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	msgs   jetstream.MessagesContext
	done   chan struct{} // closed when the applier has stopped
	failed chan struct{} // closed when the applier found entries missing (failure says which)

	// applyMu is held by the applier while it hands an entry to the replica, and by a
	// snapshot, so that it sees the replica between entries; handed is the last entry handed.
	applyMu   sync.Mutex
	handed    uint64
	compactMu sync.Mutex // one Compact at a time
	// compactDue wakes compactLoop (with SnapshotEvery > 0): the replica applied
	// SnapshotEvery entries past snapSeen, the newest snapshot compactLoop saw.
	compactDue chan struct{}
	compacting sync.WaitGroup // compactLoop, which Close waits for

	mu         sync.Mutex
	failure    error
	snapSeen   uint64
	applied    uint64        // the stream sequence of the last applied entry
	advanced   chan struct{} // closed (and replaced) whenever applied grows
	waiters    map[string]chan result
	workspaces map[store.WorkspaceID]*replicaWS // the applier's view of each acquired workspace
	retention  store.Retention                  // the limits in force, as last set in the log
	held       map[store.WorkspaceID]*lease     // the leases this node holds
	onRevoke   []func()
	onQuotas   []func()
}

var _ store.Store = (*Store)(nil)

// Timing of publishes.
const (
	// publishTimeout bounds one attempt to append an entry; a timed-out attempt is repeated
	// with the same message id, which the server deduplicates.
	publishTimeout = 5 * time.Second
	// dedupWindow is how long the server remembers message ids.
	dedupWindow = 2 * time.Minute
)

// NewStore creates (or binds) the log stream and the blob store, rebuilds the replica at
// replicaPath from the whole log, and returns once it has applied every entry that was in the
// log when it started. The replica is applied by a goroutine until Close.
func NewStore(ctx context.Context, n *Node, leases *Leases, replicaPath string) (*Store, error) {
	var stream jetstream.Stream
	err := n.ensure(ctx, "the log stream", func(ctx context.Context) error {
		st, err := n.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
			Name: logStream, Description: "Atelier's replicated log",
			Subjects: []string{"atl.log.>"}, Storage: jetstream.FileStorage, Replicas: n.cfg.Replicas,
			Duplicates: dedupWindow, MaxMsgSize: 8 << 20,
		})
		stream = st
		return err
	})
	if err != nil {
		return nil, err
	}
	bl, err := openBlobs(ctx, n)
	if err != nil {
		return nil, err
	}
	sn, err := openSnapshots(ctx, n)
	if err != nil {
		return nil, err
	}
	if err := store.RemoveReplica(replicaPath); err != nil {
		return nil, err
	}
	snap, err := sn.restore(ctx, replicaPath)
	if err != nil {
		return nil, fmt.Errorf("rebuild replica %s: %w", replicaPath, err)
	}
	replica, err := store.OpenWith(replicaPath, store.Options{Replica: true})
	if err != nil {
		return nil, err
	}
	s := &Store{
		node: n, leases: leases, js: n.js, stream: stream, blobs: bl, snaps: sn, replica: replica,
		replicaPath: replicaPath, log: n.log, done: make(chan struct{}), failed: make(chan struct{}),
		advanced: make(chan struct{}), waiters: map[string]chan result{}, compactDue: make(chan struct{}, 1),
		workspaces: map[store.WorkspaceID]*replicaWS{}, held: map[store.WorkspaceID]*lease{},
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.adopt(ctx, snap); err != nil {
		s.cancel()
		replica.Close()
		return nil, fmt.Errorf("rebuild replica %s from snapshot %d: %w", replicaPath, snap.Seq, err)
	}
	if err := s.startApplier(ctx, snap.Seq); err != nil {
		s.cancel()
		replica.Close()
		return nil, err
	}
	if err := s.barrier(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("rebuild replica %s from the log: %w", replicaPath, err)
	}
	if s.snapshotEvery() > 0 {
		s.compacting.Add(1)
		go s.compactLoop()
	}
	return s, nil
}

// snapshotEvery is Config.SnapshotEvery, 0 when the node never snapshots on its own.
func (s *Store) snapshotEvery() uint64 { return uint64(max(0, s.node.cfg.SnapshotEvery)) }

// Failed is closed when the replica stopped applying the log because entries it had not
// applied are gone from it; Err says which. The node must then be restarted, which rebuilds
// its replica from the newest snapshot.
func (s *Store) Failed() <-chan struct{} { return s.failed }

// Err is the reason Failed was closed, or nil.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failure
}

// fail stops the replica for good: Failed closes, and writes and waits fail with err.
func (s *Store) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failure == nil {
		s.failure = err
		close(s.failed)
	}
}

// Close stops the applier and closes the replica (not the node, nor the leases). Commits
// still being published fail.
func (s *Store) Close() error {
	s.cancel()
	s.msgs.Stop()
	<-s.done
	s.compacting.Wait()
	return s.replica.Close()
}

// Applied returns the stream sequence of the last log entry the replica applied.
func (s *Store) Applied() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.applied
}

// OnRevoke registers fn to run, in a goroutine of its own, each time the replica applied an
// entry that revoked a token (DeleteToken, DeleteAgent), whichever node wrote it.
func (s *Store) OnRevoke(fn func()) {
	s.mu.Lock()
	s.onRevoke = append(s.onRevoke, fn)
	s.mu.Unlock()
}

// OnQuotas registers fn to run, in a goroutine of its own, each time the replica applied an
// entry that changed the quotas (PutQuotas), whichever node wrote it.
func (s *Store) OnQuotas(fn func()) {
	s.mu.Lock()
	s.onQuotas = append(s.onQuotas, fn)
	s.mu.Unlock()
}

// SetRetention sets the retention limits of the audit and action logs (store.Bolt's) on every
// replica. Unless they are the limits in force already, they are appended to the log, so that
// every replica trims alike from that entry on; the limits last set by any node hold for the
// whole cluster, so give every node the same ones. It waits until the local replica applied
// them; a failure is logged (the limits in force stay).
func (s *Store) SetRetention(r store.Retention) {
	s.mu.Lock()
	same := s.retention == r
	s.mu.Unlock()
	if same {
		return
	}
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	if err := s.writeErr(ctx, entry{Op: opRetention, Retention: &r}); err != nil {
		s.log.Error("could not set the retention limits", "err", err)
	}
}

// lastSeq reads the log's last sequence from the stream's leader.
func (s *Store) lastSeq(ctx context.Context) (uint64, error) {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the log's end: %w", err)
	}
	return info.State.LastSeq, nil
}

// barrier waits until the replica has applied every entry in the log now.
func (s *Store) barrier(ctx context.Context) error {
	last, err := s.lastSeq(ctx)
	if err != nil {
		return err
	}
	return s.waitApplied(ctx, last)
}

// waitApplied waits until the replica has applied the entry with sequence seq.
func (s *Store) waitApplied(ctx context.Context, seq uint64) error {
	for {
		s.mu.Lock()
		applied, advanced := s.applied, s.advanced
		s.mu.Unlock()
		if applied >= seq {
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return s.closedErr()
		}
	}
}

// closedErr is why the applier stopped: its failure, or the store's Close.
func (s *Store) closedErr() error {
	if err := s.Err(); err != nil {
		return err
	}
	return store.ErrClosed
}

// result is the replica's outcome of applying an entry.
type result struct {
	err     error
	issued  bool    // opBootstrap
	commits []error // opCommit: one per commit
}

// appended is an entry in the log whose result is yet to come.
type appended struct {
	s   *Store
	id  string
	seq uint64
	res chan result
}

// wait returns the result of applying the entry to the replica.
func (a *appended) wait(ctx context.Context) (result, error) {
	select {
	case r := <-a.res:
		return r, nil
	case <-ctx.Done():
		a.s.dropWaiter(a.id)
		return result{}, fmt.Errorf("wait for log entry %d to be applied: %w", a.seq, ctx.Err())
	case <-a.s.done:
		a.s.dropWaiter(a.id)
		return result{}, a.s.closedErr()
	}
}

func (s *Store) dropWaiter(id string) {
	s.mu.Lock()
	delete(s.waiters, id)
	s.mu.Unlock()
}

// appendEntry publishes e on subject (an entry too large for the log goes to the blob store
// and the log gets a reference) and returns once the log holds it. The waiter for its result
// is registered, by message id, before the first attempt. A timed-out attempt is repeated
// with the same id until ctx ends; "in process" refusals of a fenced append are retried too.
func (s *Store) appendEntry(ctx context.Context, subject string, e entry, opts ...jetstream.PublishOpt) (*appended, error) {
	data, err := encodeEntry(e)
	if err != nil {
		return nil, err
	}
	if len(data) > maxEntry {
		sha, err := s.blobs.put(ctx, data)
		if err != nil {
			return nil, err
		}
		if data, err = encodeEntry(entry{Op: opBlobEntry, Blob: sha}); err != nil {
			return nil, err
		}
	}
	a := &appended{s: s, id: nuid.Next(), res: make(chan result, 1)}
	s.mu.Lock()
	s.waiters[a.id] = a.res
	s.mu.Unlock()
	msg := &nats.Msg{Subject: subject, Data: data}
	opts = append(opts, jetstream.WithMsgID(a.id))
	wait := time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, publishTimeout)
		ack, err := s.js.PublishMsg(actx, msg, opts...)
		cancel()
		if err == nil {
			a.seq = ack.Sequence
			return a, nil
		}
		if ctx.Err() != nil {
			s.dropWaiter(a.id)
			return nil, fmt.Errorf("append %s to the log (outcome unknown): %w", e.Op, err)
		}
		if !retryable(err) {
			s.dropWaiter(a.id)
			return nil, fmt.Errorf("append %s to the log: %w", e.Op, err)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		wait = min(2*wait, 250*time.Millisecond)
	}
}

// errCodeDuplicateInProcess: a message with the same id is being appended (the server answers
// a repeat of an appended one with its ack instead).
const errCodeDuplicateInProcess jetstream.ErrorCode = 10158

// retryable reports whether a failed publish may be repeated: its outcome is unknown (a
// timeout, or the first attempt still in process; the repeat is deduplicated), the stream had
// no leader, or the fence subject was still "in process" (10164, see notes/scale-out.md §3A).
func retryable(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case jetstream.JSErrCodeStreamWrongLastSequenceConstant, errCodeDuplicateInProcess:
			return true
		}
		return apiErr.Code == 503
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders)
}

// fenced reports whether a publish was refused because the expected last sequence of its
// fence subject has changed.
func fenced(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// write appends a global entry and returns the replica's outcome.
func (s *Store) write(ctx context.Context, e entry) (result, error) {
	a, err := s.appendEntry(ctx, globalSubject, e)
	if err != nil {
		return result{}, err
	}
	return a.wait(ctx)
}

// writeErr is write for the methods whose only outcome is an error.
func (s *Store) writeErr(ctx context.Context, e entry) error {
	r, err := s.write(ctx, e)
	if err != nil {
		return err
	}
	return r.err
}

// readMiss runs read on the replica; when it finds nothing, it waits until the replica has
// applied the whole log and runs it again.
func readMiss[T any](ctx context.Context, s *Store, read func() (T, error)) (T, error) {
	v, err := read()
	if !errors.Is(err, store.ErrNotFound) {
		return v, err
	}
	if berr := s.barrier(ctx); berr != nil {
		var zero T
		return zero, fmt.Errorf("%v, and the replica could not catch up: %w", err, berr)
	}
	return read()
}

// Bootstrap implements store.Store; the id and creation time of the user it may create are
// fixed before the entry is published.
func (s *Store) Bootstrap(ctx context.Context, name string, tok store.Token) (bool, error) {
	u := store.User{ID: store.NewID("u"), Name: name, Created: time.Now().UTC()}
	r, err := s.write(ctx, entry{Op: opBootstrap, User: &u, Token: &tok})
	if err != nil {
		return false, err
	}
	return r.issued, r.err
}

// CreateUser implements store.Store.
func (s *Store) CreateUser(ctx context.Context, u store.User) error {
	return s.writeErr(ctx, entry{Op: opCreateUser, User: &u})
}

// PutUser implements store.Store.
func (s *Store) PutUser(ctx context.Context, u store.User) error {
	return s.writeErr(ctx, entry{Op: opPutUser, User: &u})
}

// User implements store.Store.
func (s *Store) User(ctx context.Context, id string) (store.User, error) {
	return readMiss(ctx, s, func() (store.User, error) { return s.replica.User(ctx, id) })
}

// UserByName implements store.Store.
func (s *Store) UserByName(ctx context.Context, name string) (store.User, error) {
	return readMiss(ctx, s, func() (store.User, error) { return s.replica.UserByName(ctx, name) })
}

// PutToken implements store.Store.
func (s *Store) PutToken(ctx context.Context, t store.Token) error {
	return s.writeErr(ctx, entry{Op: opPutToken, Token: &t})
}

// Token implements store.Store.
func (s *Store) Token(ctx context.Context, hash string) (store.Token, error) {
	return readMiss(ctx, s, func() (store.Token, error) { return s.replica.Token(ctx, hash) })
}

// DeleteToken implements store.Store.
func (s *Store) DeleteToken(ctx context.Context, hash string) error {
	return s.writeErr(ctx, entry{Op: opDeleteToken, ID: hash})
}

// PutAgent implements store.Store.
func (s *Store) PutAgent(ctx context.Context, a store.Agent, t store.Token) error {
	return s.writeErr(ctx, entry{Op: opPutAgent, Agent: &a, Token: &t})
}

// Agent implements store.Store.
func (s *Store) Agent(ctx context.Context, id string) (store.Agent, error) {
	return readMiss(ctx, s, func() (store.Agent, error) { return s.replica.Agent(ctx, id) })
}

// Agents implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) Agents(ctx context.Context, owner string) ([]store.Agent, error) {
	return s.replica.Agents(ctx, owner)
}

// DeleteAgent implements store.Store.
func (s *Store) DeleteAgent(ctx context.Context, id string) error {
	return s.writeErr(ctx, entry{Op: opDeleteAgent, ID: id})
}

// CreateWorkspace implements store.Store. Its id must suit Acquire (letters, digits, _, -).
func (s *Store) CreateWorkspace(ctx context.Context, w store.Workspace) error {
	if !validWorkspaceID(w.ID) {
		return fmt.Errorf("create workspace %s: id %q: use letters, digits, _ and - only", w.Name, w.ID)
	}
	return s.writeErr(ctx, entry{Op: opCreateWorkspace, Workspace: &w})
}

// Workspace returns a workspace's record.
func (s *Store) Workspace(ctx context.Context, id store.WorkspaceID) (store.Workspace, error) {
	return readMiss(ctx, s, func() (store.Workspace, error) { return s.replica.Workspace(ctx, id) })
}

// Workspaces implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) Workspaces(ctx context.Context, user string) ([]store.Access, error) {
	return s.replica.Workspaces(ctx, user)
}

// Code implements store.Store.
func (s *Store) Code(ctx context.Context, sha string) ([]byte, error) {
	return readMiss(ctx, s, func() ([]byte, error) { return s.replica.Code(ctx, sha) })
}

// PutBlueprint implements store.Store; the code goes to the blob store.
func (s *Store) PutBlueprint(ctx context.Context, b store.Blueprint, code []byte) error {
	sha, err := s.blobs.put(ctx, code)
	if err != nil {
		return fmt.Errorf("store blueprint %s: %w", b.Title, err)
	}
	return s.writeErr(ctx, entry{Op: opPutBlueprint, Blueprint: &b, Blob: sha})
}

// Blueprint implements store.Store.
func (s *Store) Blueprint(ctx context.Context, id string) (store.Blueprint, error) {
	return readMiss(ctx, s, func() (store.Blueprint, error) { return s.replica.Blueprint(ctx, id) })
}

// Blueprints implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) Blueprints(ctx context.Context, owner string) ([]store.Blueprint, error) {
	return s.replica.Blueprints(ctx, owner)
}

// PutGatekeeper implements store.Store; the archive goes to the blob store.
func (s *Store) PutGatekeeper(ctx context.Context, g store.GatekeeperRecord, archive []byte) error {
	sha, err := s.blobs.put(ctx, archive)
	if err != nil {
		return fmt.Errorf("put gatekeeper: %w", err)
	}
	return s.writeErr(ctx, entry{Op: opPutGatekeeper, Gatekeeper: &g, Blob: sha})
}

// Gatekeepers implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) Gatekeepers(ctx context.Context) ([]store.GatekeeperRecord, error) {
	return s.replica.Gatekeepers(ctx)
}

// Gatekeeper implements store.Store.
func (s *Store) Gatekeeper(ctx context.Context, id string) (store.GatekeeperRecord, []byte, error) {
	type recordArchive struct {
		g       store.GatekeeperRecord
		archive []byte
	}
	ra, err := readMiss(ctx, s, func() (recordArchive, error) {
		g, archive, err := s.replica.Gatekeeper(ctx, id)
		return recordArchive{g, archive}, err
	})
	return ra.g, ra.archive, err
}

// DeleteGatekeeper implements store.Store.
func (s *Store) DeleteGatekeeper(ctx context.Context, id string) error {
	return s.writeErr(ctx, entry{Op: opDeleteGatekeeper, ID: id})
}

// PutAccount implements store.Store.
func (s *Store) PutAccount(ctx context.Context, a store.GatekeeperAccount) error {
	return s.writeErr(ctx, entry{Op: opPutAccount, Account: &a})
}

// UpdateAccount implements store.Store.
func (s *Store) UpdateAccount(ctx context.Context, a store.GatekeeperAccount) error {
	return s.writeErr(ctx, entry{Op: opUpdateAccount, Account: &a})
}

// UpdateGatekeeper implements store.Store.
func (s *Store) UpdateGatekeeper(ctx context.Context, g store.GatekeeperRecord) error {
	return s.writeErr(ctx, entry{Op: opUpdateGatekeeper, Gatekeeper: &g})
}

// Account implements store.Store.
func (s *Store) Account(ctx context.Context, id string) (store.GatekeeperAccount, error) {
	return readMiss(ctx, s, func() (store.GatekeeperAccount, error) { return s.replica.Account(ctx, id) })
}

// Accounts implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) Accounts(ctx context.Context, owner string) ([]store.GatekeeperAccount, error) {
	return s.replica.Accounts(ctx, owner)
}

// DeleteAccount implements store.Store.
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	return s.writeErr(ctx, entry{Op: opDeleteAccount, ID: id})
}

// AccountState implements store.Store.
func (s *Store) AccountState(ctx context.Context, account, key string) ([]byte, bool, error) {
	v, found, err := s.replica.AccountState(ctx, account, key)
	if err != nil || found {
		return v, found, err
	}
	if err := s.barrier(ctx); err != nil {
		return nil, false, fmt.Errorf("account %s state: %w", account, err)
	}
	return s.replica.AccountState(ctx, account, key)
}

// ListAccountState implements store.Store (from the replica, which may lag the log by
// moments).
func (s *Store) ListAccountState(ctx context.Context, account, prefix string, limit int) ([]store.StateEntry, error) {
	return s.replica.ListAccountState(ctx, account, prefix, limit)
}

// UpdateAccountState implements store.Store.
func (s *Store) UpdateAccountState(ctx context.Context, account string, ops []store.StateOp, quota int64) error {
	return s.writeErr(ctx, entry{Op: opUpdateAccountState, ID: account, StateOps: ops, Quota: quota})
}

// DueSchedules implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) DueSchedules(ctx context.Context, before time.Time) ([]store.DueSchedule, error) {
	return s.replica.DueSchedules(ctx, before)
}

// PutModel implements store.Store.
func (s *Store) PutModel(ctx context.Context, m store.Model) error {
	return s.writeErr(ctx, entry{Op: opPutModel, Model: &m})
}

// Model implements store.Store.
func (s *Store) Model(ctx context.Context, id string) (store.Model, error) {
	return readMiss(ctx, s, func() (store.Model, error) { return s.replica.Model(ctx, id) })
}

// Models implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) Models(ctx context.Context, owner string) ([]store.Model, error) {
	return s.replica.Models(ctx, owner)
}

// DeleteModel implements store.Store.
func (s *Store) DeleteModel(ctx context.Context, id string) error {
	return s.writeErr(ctx, entry{Op: opDeleteModel, ID: id})
}

// AgentInstructions implements store.Store (from the replica, which may lag the log by
// moments).
func (s *Store) AgentInstructions(ctx context.Context) (string, error) {
	return s.replica.AgentInstructions(ctx)
}

// PutAgentInstructions implements store.Store.
func (s *Store) PutAgentInstructions(ctx context.Context, text string) error {
	return s.writeErr(ctx, entry{Op: opPutInstructions, Instructions: &text})
}

// Quotas implements store.Store (from the replica, which may lag the log by moments; OnQuotas
// tells when a change arrived).
func (s *Store) Quotas(ctx context.Context) (quota.Limits, error) {
	return s.replica.Quotas(ctx)
}

// PutQuotas implements store.Store.
func (s *Store) PutQuotas(ctx context.Context, l quota.Limits) error {
	return s.writeErr(ctx, entry{Op: opPutQuotas, Quotas: &l})
}

// UserUsage implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) UserUsage(ctx context.Context, user string) (quota.Limits, error) {
	return s.replica.UserUsage(ctx, user)
}

// HookRef implements store.Store (from the replica; a miss waits for the replica to catch up).
func (s *Store) HookRef(ctx context.Context, id string) (store.HookRef, error) {
	return readMiss(ctx, s, func() (store.HookRef, error) { return s.replica.HookRef(ctx, id) })
}

// HookRefs implements store.Store (from the replica, which may lag the log by moments).
func (s *Store) HookRefs(ctx context.Context) ([]store.HookRef, error) {
	return s.replica.HookRefs(ctx)
}
