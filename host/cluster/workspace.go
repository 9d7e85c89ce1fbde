package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// Grouping of commits into one log entry.
const (
	// maxGroup bounds the commits of one entry.
	maxGroup = 1000
	// maxGroupBytes bounds the estimated size of one entry's commits; a single larger commit
	// still goes alone (and, beyond maxEntry, through the blob store).
	maxGroupBytes = 4 << 20
)

// Open implements store.Store. Reads are served by the replica, which has applied the lease's
// epoch entry; Commit and CommitChain append to the workspace's commit subject, fenced by the
// lease's epoch. The lease must come from this store's Acquire.
func (s *Store) Open(ctx context.Context, ws store.WorkspaceID, l store.Lease) (store.WorkspaceStore, error) {
	cl, ok := l.(*lease)
	if !ok || cl.s != s || cl.ws != ws {
		return nil, fmt.Errorf("open workspace %s: the lease is not this store's lease for it", ws)
	}
	if err := s.waitApplied(ctx, uint64(cl.epoch)); err != nil {
		return nil, fmt.Errorf("open workspace %s: %w", ws, err)
	}
	s.mu.Lock()
	w := s.workspaces[ws]
	s.mu.Unlock()
	if w == nil {
		return nil, fmt.Errorf("open workspace %s: %w", ws, store.ErrNotFound)
	}
	if w.epoch != uint64(cl.epoch) {
		return nil, fmt.Errorf("open workspace %s: %w", ws, store.ErrFenced)
	}
	return &workspace{WorkspaceStore: w.ws, l: cl}, nil
}

// workspace is a WorkspaceStore of a Store: the replica's reads, the lease's commit queue.
type workspace struct {
	store.WorkspaceStore
	l *lease
}

// Commit implements store.WorkspaceStore: it returns once the commit is in the log and
// applied to the local replica, or refused. Like store.Bolt, ctx bounds only the queueing: a
// queued commit's outcome is always waited for, so that success is never misreported as a
// failure.
func (w *workspace) Commit(ctx context.Context, muts []store.Mutation) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("commit to workspace %s: %w", w.l.ws, err)
	}
	return w.l.submit(nil, muts).Wait()
}

// Chain implements store.WorkspaceStore.
func (w *workspace) Chain() store.CommitChain {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	w.l.nextChain++
	return &chain{l: w.l, id: w.l.nextChain}
}

// Close implements store.WorkspaceStore; the lease is the caller's to release.
func (w *workspace) Close() error { return nil }

// chain is a CommitChain of a workspace; failed is the first failure of its commits.
type chain struct {
	l      *lease
	id     uint64
	failed error
}

// Submit implements store.CommitChain.
func (c *chain) Submit(muts []store.Mutation) *store.Pending { return c.l.submit(c, muts) }

// queued is a commit waiting in its lease's queue.
type queued struct {
	p     *store.Pending
	chain *chain // nil for a lone Commit
	muts  []store.Mutation
	size  int
}

// submit queues a commit. The queue is run by one goroutine at a time, started when a commit
// finds it idle: in R3 only one fenced append per epoch subject may be in flight (more are
// refused while one is in process), so everything queued meanwhile goes into the next entry.
func (l *lease) submit(c *chain, muts []store.Mutation) *store.Pending {
	q := &queued{p: store.NewPending(), chain: c, muts: muts, size: estimateSize(muts)}
	l.mu.Lock()
	l.queue = append(l.queue, q)
	start := !l.running
	l.running = true
	l.mu.Unlock()
	if start {
		go l.runQueue()
	}
	return q.p
}

// estimateSize estimates the bytes muts take in a log entry: keys and values as they are,
// and an allowance for the rest (a record in JSON).
func estimateSize(muts []store.Mutation) int {
	n := 0
	for _, m := range muts {
		n += 256
		if m.Kind != store.MutPutCode {
			n += len(m.Key) + len(m.Value)
		}
	}
	return n
}

// runQueue appends the queued commits, a group per entry, until the queue is empty.
func (l *lease) runQueue() {
	for {
		l.mu.Lock()
		n, size := 0, 0
		for n < len(l.queue) && n < maxGroup && (n == 0 || size+l.queue[n].size <= maxGroupBytes) {
			size += l.queue[n].size
			n++
		}
		if n == 0 {
			l.running = false
			l.mu.Unlock()
			return
		}
		group := l.queue[:n]
		l.queue = append([]*queued(nil), l.queue[n:]...)
		l.mu.Unlock()
		l.commit(group)
	}
}

// commit appends group as one commit entry and resolves each commit with the replica's
// outcome. Commits of a chain that failed before, and commits that fail their checks, are
// resolved without being appended.
func (l *lease) commit(group []*queued) {
	fail := func(q *queued, err error) {
		if q.chain != nil && q.chain.failed == nil {
			q.chain.failed = err
		}
		q.p.Resolve(err)
	}
	var (
		live []*queued
		recs []commitRecord
	)
	for _, q := range group {
		if q.chain != nil && q.chain.failed != nil {
			q.p.Resolve(fmt.Errorf("commit to workspace %s: %w: %w", l.ws, store.ErrChainBroken, q.chain.failed))
			continue
		}
		rec, err := l.s.record(l.ctx, q)
		if err != nil {
			fail(q, fmt.Errorf("commit to workspace %s: %w", l.ws, err))
			continue
		}
		live, recs = append(live, q), append(recs, rec)
	}
	if len(live) == 0 {
		return
	}
	e := entry{Op: opCommit, WS: l.ws, Epoch: uint64(l.epoch), Commits: recs}
	a, err := l.s.appendEntry(l.ctx, commitSubject(l.ws), e,
		jetstream.WithExpectLastSequenceForSubject(uint64(l.epoch), epochSubject(l.ws)))
	var r result
	if err == nil {
		// In the log: the outcome is the replica's, however long applying takes.
		r, err = a.wait(l.s.ctx)
	}
	if err == nil && len(r.commits) != len(live) {
		err = cmp.Or(r.err, errors.New("the replica returned no outcome per commit"))
	}
	if fenced(err) {
		l.lose()
		err = store.ErrFenced
	}
	for i, q := range live {
		switch {
		case err != nil:
			fail(q, fmt.Errorf("commit to workspace %s: %w", l.ws, err))
		case r.commits[i] != nil:
			fail(q, r.commits[i])
		default:
			q.p.Resolve(nil)
		}
	}
}

// record checks a queued commit's mutations and turns them into a commit record: code goes to
// the blob store, and an audit entry without a time gets the time now (a replica must not
// choose it); audit times travel in UTC.
func (s *Store) record(ctx context.Context, q *queued) (commitRecord, error) {
	rec := commitRecord{Muts: make([]mutation, len(q.muts))}
	if q.chain != nil {
		rec.Chain = q.chain.id
	}
	for i, m := range q.muts {
		if err := m.Check(); err != nil {
			return commitRecord{}, err
		}
		wm := mutation{Mutation: m}
		switch m.Kind {
		case store.MutPutCode:
			sha, err := s.blobs.put(ctx, m.Value)
			if err != nil {
				return commitRecord{}, err
			}
			wm.Value, wm.Blob = nil, sha
		case store.MutAppendAudit:
			if t := m.Audit.Time; t.IsZero() || t.Location() != time.UTC {
				if t.IsZero() {
					t = time.Now()
				}
				a := *m.Audit
				a.Time = t.UTC()
				wm.Audit = &a
			}
		}
		rec.Muts[i] = wm
	}
	return rec, nil
}
