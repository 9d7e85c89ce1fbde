package store

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"

	bolt "go.etcd.io/bbolt"
)

// Pending is the outcome of a submitted commit: Done is closed once the commit is durable or
// has failed, and Err then tells which.
type Pending struct {
	done chan struct{}
	err  error
}

// NewPending returns an unresolved Pending, for implementations of CommitChain.
func NewPending() *Pending { return &Pending{done: make(chan struct{})} }

// Resolve records the outcome and wakes the waiters; for implementations of CommitChain. It
// must be called exactly once.
func (p *Pending) Resolve(err error) {
	p.err = err
	close(p.done)
}

// Done is closed when the commit is durable or has failed.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Err is nil when the commit is durable; it is valid once Done is closed.
func (p *Pending) Err() error { return p.err }

// Wait waits for the outcome and returns Err.
func (p *Pending) Wait() error {
	<-p.done
	return p.err
}

// commitReq is one commit waiting for the committer; it carries its own outcome.
type commitReq struct {
	Pending
	ws    WorkspaceID
	lease *lease
	muts  []Mutation
	chain *chain // nil for a lone Commit
}

// chain is a Bolt CommitChain. failed is read and written by the committer goroutine only.
type chain struct {
	w      *boltWS
	failed error
}

// Chain implements WorkspaceStore.
func (w *boltWS) Chain() CommitChain { return &chain{w: w} }

// Submit implements CommitChain.
func (c *chain) Submit(muts []Mutation) *Pending {
	return c.w.submit(context.Background(), c, muts)
}

// Commit implements WorkspaceStore.
func (w *boltWS) Commit(ctx context.Context, muts []Mutation) error {
	// Once queued, the commit happens or fails as a whole; the caller waits for the outcome
	// even if ctx ends, so that it never reports failure for a write that became durable.
	return w.submit(ctx, nil, muts).Wait()
}

// submit queues a commit; ctx bounds only the wait for room in the queue.
func (w *boltWS) submit(ctx context.Context, c *chain, muts []Mutation) *Pending {
	r := &commitReq{Pending: Pending{done: make(chan struct{})}, ws: w.id, lease: w.lease, muts: muts, chain: c}
	s := w.s
	s.cmu.RLock()
	if s.closed {
		s.cmu.RUnlock()
		r.Resolve(ErrClosed)
		return &r.Pending
	}
	select {
	case s.commits <- r:
		s.cmu.RUnlock()
	case <-ctx.Done():
		s.cmu.RUnlock()
		r.Resolve(ctx.Err())
	}
	return &r.Pending
}

// errRetrySingly aborts a group transaction so that its commits are retried one by one.
var errRetrySingly = errors.New("retry singly")

// commitLoop applies queued commits: everything waiting is applied in one transaction (one
// fsync). A commit that fails its checks fails alone (and breaks its chain); if applying one
// fails, the group is rolled back and each commit is retried in its own transaction.
func (s *Bolt) commitLoop() {
	defer s.stopped.Done()
	for {
		var group []*commitReq
		select {
		case r := <-s.commits:
			group = append(group, r)
		case <-s.stop:
			for {
				select {
				case r := <-s.commits:
					r.Resolve(ErrClosed)
				default:
					return
				}
			}
		}
		// Let the goroutines that are ready to run go first: under load they are calls about
		// to submit their commits, which then share this transaction and its fsync instead
		// of each starting a group of one or two (a group costs two fsyncs and the rewrite
		// of the pages it touches, whatever its size). With nothing else to run it returns
		// at once, so a lone commit is not delayed.
		runtime.Gosched()
	drain:
		for len(group) < 512 {
			select {
			case r := <-s.commits:
				group = append(group, r)
			default:
				break drain
			}
		}
		s.applyGroup(group)
	}
}

func (s *Bolt) applyGroup(group []*commitReq) {
	s.groups.Add(1)
	s.grouped.Add(int64(len(group)))
	results := make([]error, len(group))
	err := s.db.Update(func(tx *bolt.Tx) error {
		var broken map[*chain]error // chains broken earlier in this group
		for i, r := range group {
			if err := s.precheck(tx, r, broken[r.chain]); err != nil {
				results[i] = err
				if r.chain != nil {
					if broken == nil {
						broken = map[*chain]error{}
					}
					broken[r.chain] = err
				}
				continue
			}
			if err := s.apply(tx, r); err != nil {
				return errRetrySingly
			}
		}
		return nil
	})
	if err != nil {
		for i, r := range group {
			results[i] = s.db.Update(func(tx *bolt.Tx) error {
				if err := s.precheck(tx, r, nil); err != nil {
					return err
				}
				return s.apply(tx, r)
			})
			r.breakChain(results[i])
		}
	} else {
		for i, r := range group {
			r.breakChain(results[i])
		}
	}
	for i, r := range group {
		if results[i] != nil {
			results[i] = fmt.Errorf("commit to workspace %s: %w", r.ws, results[i])
		}
		r.muts = nil // the Pending may be kept long after: keep no values alive through it
		r.Resolve(results[i])
	}
}

// breakChain records a failed commit in its chain, so that every later one fails too.
func (r *commitReq) breakChain(err error) {
	if err != nil && r.chain != nil && r.chain.failed == nil {
		r.chain.failed = err
	}
}

// precheck refuses a commit whose chain is broken (by an earlier commit, or by groupFailed in
// the same group), whose mutations are invalid, or whose lease was fenced; it writes nothing.
func (s *Bolt) precheck(tx *bolt.Tx, r *commitReq, groupFailed error) error {
	if r.chain != nil {
		if failed := cmp.Or(r.chain.failed, groupFailed); failed != nil {
			return fmt.Errorf("%w: %w", ErrChainBroken, failed)
		}
	}
	for _, m := range r.muts {
		if err := m.Check(); err != nil {
			return err
		}
	}
	b := tx.Bucket(bucketWS).Bucket([]byte(r.ws))
	if b == nil {
		return fmt.Errorf("workspace %s: %w", r.ws, ErrNotFound)
	}
	if r.lease.isLost() || readEpoch(b) != r.lease.epoch {
		return ErrFenced
	}
	return nil
}

// apply writes one commit's mutations inside tx, keeps the code reference counts and usage
// counters in step, and deletes code blobs nothing refers to any more.
func (s *Bolt) apply(tx *bolt.Tx, r *commitReq) error {
	b := tx.Bucket(bucketWS).Bucket([]byte(r.ws))
	var touched []string // code blobs whose reference count dropped or that were stored
	for _, m := range r.muts {
		var err error
		switch m.Kind {
		case MutSetKV:
			var st *bolt.Bucket
			if st, err = b.Bucket(subState).CreateBucketIfNotExists([]byte(m.Gadget)); err == nil {
				delta := int64(len(m.Key) + len(m.Value))
				if old := st.Get(m.Key); old != nil {
					delta -= int64(len(m.Key) + len(old))
				}
				if err = st.Put(m.Key, m.Value); err == nil {
					err = addUsage(b, m.Gadget, delta)
				}
			}
		case MutDeleteKV:
			if st := b.Bucket(subState).Bucket([]byte(m.Gadget)); st != nil {
				if old := st.Get(m.Key); old != nil {
					if err = st.Delete(m.Key); err == nil {
						err = addUsage(b, m.Gadget, -int64(len(m.Key)+len(old)))
					}
				}
			}
		case MutPutGadget:
			touched, err = putGadget(tx, b, m.Record, touched)
		case MutDeleteGadget:
			touched, err = deleteGadget(tx, b, m.Gadget, touched)
		case MutPutWorkspace:
			ws := *m.Workspace
			ws.ID = r.ws
			err = putWorkspace(tx, ws)
		case MutDeleteWorkspace:
			if err = dropHookIndex(tx, b); err != nil {
				break
			}
			if touched, err = deleteWorkspace(tx, b, r.ws, touched); err == nil {
				if err = dropScheduleIndex(tx, r.ws); err == nil {
					return collectCode(tx, touched) // nothing after a deletion has a place to go
				}
			}
		case MutAppendAudit:
			ab := b.Bucket(subAudit)
			e := *m.Audit
			if e.Seq, err = ab.NextSequence(); err == nil {
				if e.Time.IsZero() {
					e.Time = s.now().UTC()
				}
				if err = putJSON(ab, binary.BigEndian.AppendUint64(nil, e.Seq), e); err == nil {
					err = trimAudit(ab, e.Seq, s.retention.Audit)
				}
			}
		case MutPutAction, MutPutRule, MutDeleteRule:
			if err = applyQueue(b, m); err == nil && m.Kind == MutPutAction {
				err = trimActions(b.Bucket(subGKActions), s.retention.Actions)
			}
		case MutPutSchedule, MutDeleteSchedule:
			err = applySchedule(tx, b, r.ws, m)
		case MutPutHook, MutDeleteHook:
			err = applyHook(tx, b, r.ws, m)
		case MutPutChat, MutDeleteChat, MutPutChatMessage, MutPutDraft, MutDeleteDraft:
			err = applyChat(b, m)
		case MutPutCode:
			sha := CodeSHA(m.Value)
			if err = putCode(tx, sha, m.Value); err == nil {
				touched = append(touched, sha)
			}
		}
		if err != nil {
			return fmt.Errorf("mutation %d: %w", m.Kind, err)
		}
	}
	return collectCode(tx, touched)
}

// CommitGroups returns how many commits were applied so far and in how many transactions
// (each one fsync'd write); their ratio is the mean group size.
func (s *Bolt) CommitGroups() (commits, groups int64) {
	return s.grouped.Load(), s.groups.Load()
}
