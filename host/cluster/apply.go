package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// replicaWS is the applier's state of a workspace that was acquired: the sequence of its
// latest epoch entry (its fencing token) and the replica's WorkspaceStore opened under the
// replica's own lease, which the workspace's commits are applied with.
type replicaWS struct {
	epoch uint64
	ws    store.WorkspaceStore
}

// startApplier starts the goroutine that applies the log to the replica, from the entry after
// `after` (the replica's snapshot; 0: from the first), through an ordered consumer (which
// recreates itself after a gap or a lost server).
func (s *Store) startApplier(ctx context.Context, after uint64) error {
	cfg := jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy}
	if after > 0 {
		cfg = jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: after + 1}
	}
	cons, err := s.js.OrderedConsumer(ctx, logStream, cfg)
	if err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	msgs, err := cons.Messages(jetstream.PullMaxBytes(64 << 20))
	if err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	s.msgs = msgs
	go s.applyLoop(after)
	return nil
}

// applyLoop applies the log in order, from the entry after `last`. A commit entry is handed to
// the replica's committer without waiting for it (the committer applies commits in the order
// they were submitted, and writes all those waiting in one transaction), so that a busy log is
// applied in batches; every other entry first waits for the commits before it. The completer
// goroutine reports entries as applied in log order once their results are in.
//
// The log's sequences have no holes above the compaction point, so an entry that is not the
// one after the last means entries were purged before this replica applied them: it stops
// (Failed) rather than serve a replica that skipped writes.
func (s *Store) applyLoop(last uint64) {
	defer close(s.done)
	inflight := make(chan applying, 4096)
	completed := make(chan struct{})
	go s.complete(inflight, completed)
	defer func() {
		close(inflight)
		<-completed
	}()
	for {
		msg, err := s.msgs.Next()
		if err != nil {
			if errors.Is(err, jetstream.ErrMsgIteratorClosed) || s.ctx.Err() != nil {
				return
			}
			s.log.Warn("reading the log", "err", err)
			select {
			case <-time.After(100 * time.Millisecond):
			case <-s.ctx.Done():
				return
			}
			continue
		}
		md, err := msg.Metadata()
		if err != nil {
			s.log.Error("a log message without metadata", "subject", msg.Subject(), "err", err)
			continue
		}
		seq := md.Sequence.Stream
		if seq <= last {
			continue
		}
		if seq != last+1 {
			err := fmt.Errorf("the log no longer holds entries %d to %d, which this node's replica had not applied (compacted while the node was stopped or cut off): restart the node to rebuild its replica from the newest snapshot", last+1, seq-1)
			s.log.Error("replica stopped", "err", err)
			s.fail(err)
			return
		}
		s.applyMu.Lock()
		e, err := s.decodeMsg(seq, msg.Data())
		a := applying{seq: seq, id: msg.Headers().Get(jetstream.MsgIDHeader)}
		switch {
		case err != nil:
			a.r = result{err: err}
		case e.Op == opCommit:
			a.wait = s.applyCommit(e)
		default:
			if err := s.waitApplied(s.ctx, last); err != nil {
				s.applyMu.Unlock()
				return
			}
			a.r = s.applyEntry(seq, e)
		}
		last = seq
		s.handed = seq
		select {
		case inflight <- a:
		case <-s.ctx.Done():
			s.applyMu.Unlock()
			return
		}
		s.applyMu.Unlock()
	}
}

// applying is an entry handed to the replica: its result, or the function that waits for it.
type applying struct {
	seq  uint64
	id   string
	r    result
	wait func() result
}

// complete reports the entries of inflight as applied, in order, once their results are in,
// and hands each result to the writer waiting for it.
func (s *Store) complete(inflight <-chan applying, done chan<- struct{}) {
	defer close(done)
	for a := range inflight {
		r := a.r
		if a.wait != nil {
			r = a.wait()
		}
		s.mu.Lock()
		s.applied = a.seq
		s.leases.SetApplied(a.seq)
		if every := s.snapshotEvery(); every > 0 && a.seq-min(s.snapSeen, a.seq) >= every {
			select {
			case s.compactDue <- struct{}{}:
			default:
			}
		}
		close(s.advanced)
		s.advanced = make(chan struct{})
		waiter := s.waiters[a.id]
		delete(s.waiters, a.id)
		s.mu.Unlock()
		if waiter != nil {
			waiter <- r
		}
	}
}

// decodeMsg decodes the entry with stream sequence seq, fetching it from the blob store when
// the log holds only its reference. A malformed entry is skipped (every replica skips it).
func (s *Store) decodeMsg(seq uint64, data []byte) (entry, error) {
	e, err := decodeEntry(data)
	if err == nil && e.Op == opBlobEntry {
		if data, err = s.blobs.get(s.ctx, e.Blob); err == nil {
			e, err = decodeEntry(data)
		}
		if err == nil && e.Op == opBlobEntry {
			err = fmt.Errorf("%w: a blob entry refers to another", errMalformed)
		}
	}
	if err != nil {
		s.log.Error("skipping a log entry", "seq", seq, "err", err)
		return entry{}, fmt.Errorf("log entry %d: %w", seq, err)
	}
	return e, nil
}

// applyEntry applies an entry other than a commit, and tells the kernel about revocations
// and changed quotas. Every replica gets the same result for it, since the replicas apply the
// same entries in the same order.
func (s *Store) applyEntry(seq uint64, e entry) result {
	r := s.apply(seq, e)
	if r.err != nil {
		return r
	}
	var fns []func()
	s.mu.Lock()
	switch e.Op {
	case opDeleteToken, opDeleteAgent:
		fns = s.onRevoke
	case opPutQuotas:
		fns = s.onQuotas
	}
	s.mu.Unlock()
	for _, fn := range fns {
		go fn()
	}
	return r
}

// apply applies one decoded entry to the replica.
func (s *Store) apply(seq uint64, e entry) result {
	ctx, db := s.ctx, s.replica
	switch e.Op {
	case opBootstrap:
		issued, err := db.BootstrapUser(ctx, *e.User, *e.Token)
		return result{err: err, issued: issued}
	case opCreateUser:
		return result{err: db.CreateUser(ctx, *e.User)}
	case opPutUser:
		return result{err: db.PutUser(ctx, *e.User)}
	case opPutToken:
		return result{err: db.PutToken(ctx, *e.Token)}
	case opDeleteToken:
		return result{err: db.DeleteToken(ctx, e.ID)}
	case opPutAgent:
		return result{err: db.PutAgent(ctx, *e.Agent, *e.Token)}
	case opDeleteAgent:
		return result{err: db.DeleteAgent(ctx, e.ID)}
	case opCreateWorkspace:
		return result{err: db.CreateWorkspace(ctx, *e.Workspace)}
	case opPutBlueprint:
		code, err := s.blobs.get(ctx, e.Blob)
		if err != nil {
			return result{err: fmt.Errorf("store blueprint %s: %w", e.Blueprint.Title, err)}
		}
		return result{err: db.PutBlueprint(ctx, *e.Blueprint, code)}
	case opPutGatekeeper:
		archive, err := s.blobs.get(ctx, e.Blob)
		if err != nil {
			return result{err: fmt.Errorf("put gatekeeper: %w", err)}
		}
		return result{err: db.PutGatekeeper(ctx, *e.Gatekeeper, archive)}
	case opDeleteGatekeeper:
		return result{err: db.DeleteGatekeeper(ctx, e.ID)}
	case opPutAccount:
		return result{err: db.PutAccount(ctx, *e.Account)}
	case opUpdateAccount:
		return result{err: db.UpdateAccount(ctx, *e.Account)}
	case opUpdateGatekeeper:
		return result{err: db.UpdateGatekeeper(ctx, *e.Gatekeeper)}
	case opDeleteAccount:
		return result{err: db.DeleteAccount(ctx, e.ID)}
	case opUpdateAccountState:
		return result{err: db.UpdateAccountState(ctx, e.ID, e.StateOps, e.Quota)}
	case opPutQuotas:
		return result{err: db.PutQuotas(ctx, *e.Quotas)}
	case opPutModel:
		return result{err: db.PutModel(ctx, *e.Model)}
	case opDeleteModel:
		return result{err: db.DeleteModel(ctx, e.ID)}
	case opPutInstructions:
		return result{err: db.PutAgentInstructions(ctx, *e.Instructions)}
	case opRetention:
		// Between entries no commit of the replica is in flight.
		db.SetRetention(*e.Retention)
		s.mu.Lock()
		s.retention = *e.Retention
		s.mu.Unlock()
		return result{}
	case opEpoch:
		return result{err: s.applyEpoch(seq, e)}
	}
	return result{err: fmt.Errorf("%w: op %q", errMalformed, e.Op)} // decodeEntry lets no other op through
}

// applyEpoch makes entry seq the workspace's current epoch: the replica's own lease is taken
// anew (so the replica's commits of an older epoch would be refused), and a lease this node
// holds under an older epoch is lost.
func (s *Store) applyEpoch(seq uint64, e entry) error {
	l, err := s.replica.Acquire(s.ctx, e.WS)
	if err != nil {
		return err
	}
	w, err := s.replica.Open(s.ctx, e.WS, l)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.workspaces[e.WS] = &replicaWS{epoch: seq, ws: w}
	held := s.held[e.WS]
	s.mu.Unlock()
	if held != nil && uint64(held.epoch) < seq {
		held.lose()
	}
	return nil
}

// applyCommit submits the commits of a commit entry to the replica in order, each atomic, and
// returns the function that waits for their results; the commits of one chain after a failed
// one fail with store.ErrChainBroken (store.Bolt's CommitChain does both). The NATS server
// appended the entry only while its epoch was the workspace's latest, so the epoch check here
// holds for every entry it let through.
func (s *Store) applyCommit(e entry) func() result {
	errs := make([]error, len(e.Commits))
	s.mu.Lock()
	w := s.workspaces[e.WS]
	s.mu.Unlock()
	if w == nil || w.epoch != e.Epoch {
		why := store.ErrFenced
		if w == nil {
			why = fmt.Errorf("workspace %s: %w", e.WS, store.ErrNotFound) // deleted (as store.Bolt says)
		}
		refuseAll(e, errs, why)
		return func() result { return result{commits: errs} }
	}
	// Blobs are read until they arrive, so a failure means the store is closing: the entry
	// then fails as a whole (the replica is rebuilt on the next start anyway).
	muts := make([][]store.Mutation, len(e.Commits))
	for i, c := range e.Commits {
		muts[i] = make([]store.Mutation, len(c.Muts))
		for j, m := range c.Muts {
			if m.Kind == store.MutPutCode && m.Blob != "" {
				code, err := s.blobs.get(s.ctx, m.Blob)
				if err != nil {
					refuseAll(e, errs, err)
					return func() result { return result{commits: errs} }
				}
				m.Value = code
			}
			muts[i][j] = m.Mutation
		}
	}
	chains := map[uint64]store.CommitChain{}
	pending := make([]*store.Pending, len(e.Commits))
	for i, c := range e.Commits {
		chain := chains[c.Chain]
		if chain == nil {
			chain = w.ws.Chain()
			if c.Chain != 0 {
				chains[c.Chain] = chain
			}
		}
		pending[i] = chain.Submit(muts[i])
	}
	deletes := slices.ContainsFunc(muts, hasDeleteWorkspace)
	if deletes { // later entries of the workspace must see it gone
		wait := s.waitCommits(pending, errs)
		s.forgetDeleted(e.WS, muts, errs)
		return func() result { return wait }
	}
	return func() result { return s.waitCommits(pending, errs) }
}

// refuseAll fails every commit of e with why, except that a chain's commits after its first
// fail with store.ErrChainBroken, as they do when the replica applies them.
func refuseAll(e entry, errs []error, why error) {
	failed := map[uint64]error{}
	for i, c := range e.Commits {
		err := fmt.Errorf("commit to workspace %s: %w", e.WS, why)
		if first := failed[c.Chain]; c.Chain != 0 && first != nil {
			err = fmt.Errorf("commit to workspace %s: %w: %w", e.WS, store.ErrChainBroken, first)
		} else if c.Chain != 0 {
			failed[c.Chain] = err
		}
		errs[i] = err
	}
}

// waitCommits waits for the submitted commits and returns their results.
func (s *Store) waitCommits(pending []*store.Pending, errs []error) result {
	for i, p := range pending {
		errs[i] = p.Wait()
	}
	return result{commits: errs}
}

// forgetDeleted drops the applier's state of a workspace one of whose commits deleted it.
func (s *Store) forgetDeleted(ws store.WorkspaceID, muts [][]store.Mutation, errs []error) {
	for i := range muts {
		if errs[i] == nil && hasDeleteWorkspace(muts[i]) {
			s.mu.Lock()
			delete(s.workspaces, ws)
			s.mu.Unlock()
			return
		}
	}
}

func hasDeleteWorkspace(muts []store.Mutation) bool {
	for _, m := range muts {
		if m.Kind == store.MutDeleteWorkspace {
			return true
		}
	}
	return false
}
