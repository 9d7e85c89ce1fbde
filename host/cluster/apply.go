package cluster

import (
	"context"
	"errors"
	"fmt"
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

// startApplier starts the goroutine that applies the log to the replica, from its first
// entry, through an ordered consumer (which recreates itself after a gap or a lost server).
func (s *Store) startApplier(ctx context.Context) error {
	cons, err := s.js.OrderedConsumer(ctx, logStream, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	msgs, err := cons.Messages(jetstream.PullMaxBytes(64 << 20))
	if err != nil {
		return fmt.Errorf("read the log: %w", err)
	}
	s.msgs = msgs
	go s.applyLoop()
	return nil
}

func (s *Store) applyLoop() {
	defer close(s.done)
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
		if seq <= s.Applied() {
			continue
		}
		r := s.applyMsg(seq, msg.Data())
		id := msg.Headers().Get(jetstream.MsgIDHeader)
		s.mu.Lock()
		s.applied = seq
		close(s.advanced)
		s.advanced = make(chan struct{})
		waiter := s.waiters[id]
		delete(s.waiters, id)
		s.mu.Unlock()
		if waiter != nil {
			waiter <- r
		}
	}
}

// applyMsg decodes and applies the entry with stream sequence seq. Every replica gets the
// same result for it, since the replicas apply the same entries in the same order.
func (s *Store) applyMsg(seq uint64, data []byte) result {
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
		return result{err: fmt.Errorf("log entry %d: %w", seq, err)}
	}
	r := s.apply(seq, e)
	if r.err == nil && (e.Op == opDeleteToken || e.Op == opDeleteAgent) {
		s.mu.Lock()
		fns := s.onRevoke
		s.mu.Unlock()
		for _, fn := range fns {
			go fn()
		}
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
	case opDeleteAccount:
		return result{err: db.DeleteAccount(ctx, e.ID)}
	case opUpdateAccountState:
		return result{err: db.UpdateAccountState(ctx, e.ID, e.StateOps, e.Quota)}
	case opRetention:
		// Between entries no commit of the replica is in flight.
		db.SetRetention(*e.Retention)
		s.mu.Lock()
		s.retention = *e.Retention
		s.mu.Unlock()
		return result{}
	case opEpoch:
		return result{err: s.applyEpoch(seq, e)}
	case opCommit:
		return s.applyCommit(e)
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

// applyCommit applies the commits of a commit entry in order, each atomically; the commits of
// one chain after a failed one fail with store.ErrChainBroken (store.Bolt's CommitChain does
// both). The NATS server appended the entry only while its epoch was the workspace's latest,
// so the epoch check here holds for every entry it let through.
func (s *Store) applyCommit(e entry) result {
	errs := make([]error, len(e.Commits))
	s.mu.Lock()
	w := s.workspaces[e.WS]
	s.mu.Unlock()
	if w == nil || w.epoch != e.Epoch {
		why := store.ErrFenced
		if w == nil {
			why = fmt.Errorf("workspace %s: %w", e.WS, store.ErrNotFound) // deleted (as store.Bolt says)
		}
		for i := range errs {
			errs[i] = fmt.Errorf("commit to workspace %s: %w", e.WS, why)
		}
		return result{commits: errs}
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
					for k := range errs {
						errs[k] = fmt.Errorf("commit to workspace %s: %w", e.WS, err)
					}
					return result{commits: errs}
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
	deleted := false
	for i, p := range pending {
		errs[i] = p.Wait()
		if errs[i] == nil && hasDeleteWorkspace(muts[i]) {
			deleted = true
		}
	}
	if deleted {
		s.mu.Lock()
		delete(s.workspaces, e.WS)
		s.mu.Unlock()
	}
	return result{commits: errs}
}

func hasDeleteWorkspace(muts []store.Mutation) bool {
	for _, m := range muts {
		if m.Kind == store.MutDeleteWorkspace {
			return true
		}
	}
	return false
}
