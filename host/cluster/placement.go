package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"atelier/host/store"
)

// lease is a workspace lease of a Store: a claim on ATL_LEASE (liveness) plus the epoch entry
// whose stream sequence fences the workspace's commits (safety). It also holds the commit
// queue of the workspace (one fenced append in flight at a time, see workspace.go).
type lease struct {
	s     *Store
	ws    store.WorkspaceID
	epoch store.Epoch
	claim *Claim

	ctx    context.Context // ends with Release or the store's Close; bounds publishing
	cancel context.CancelFunc
	lost   chan struct{}
	once   sync.Once

	mu      sync.Mutex // guards queue, running and nextChain
	queue   []*queued
	running bool
	// nextChain numbers the lease's chains; chain.failed is touched only by the goroutine
	// that runs the queue.
	nextChain uint64
}

// Epoch implements store.Lease: the stream sequence of the lease's epoch entry.
func (l *lease) Epoch() store.Epoch { return l.epoch }

// Lost implements store.Lease: closed when the claim ends, a newer epoch entry of the
// workspace was applied, or a commit was fenced.
func (l *lease) Lost() <-chan struct{} { return l.lost }

func (l *lease) lose() { l.once.Do(func() { close(l.lost) }) }

// Release implements store.Lease: it stops publishing this lease's commits and gives the
// claim up, so that another node can acquire the workspace at once.
func (l *lease) Release(ctx context.Context) error {
	l.cancel()
	l.lose()
	l.s.mu.Lock()
	if l.s.held[l.ws] == l {
		delete(l.s.held, l.ws)
	}
	l.s.mu.Unlock()
	return l.claim.Release(ctx)
}

// watch loses the lease when its claim ends.
func (l *lease) watch() {
	select {
	case <-l.claim.Lost():
		l.lose()
	case <-l.lost:
	case <-l.ctx.Done():
	}
}

// exists fails with store.ErrNotFound unless the workspace exists (after a barrier).
func (s *Store) exists(ctx context.Context, ws store.WorkspaceID) error {
	_, err := readMiss(ctx, s, func() (store.Epoch, error) {
		_, e, err := s.replica.Lookup(ctx, ws)
		return e, err
	})
	return err
}

// Acquire implements store.Placement: it claims the workspace's lease (a *store.OwnerError
// when another node holds it), then appends an epoch entry to the workspace's epoch subject,
// expecting the subject's last sequence it read (read again on a race). The entry's stream
// sequence is the new lease's epoch, and every later commit is appended only while that entry
// is still the subject's last one.
func (s *Store) Acquire(ctx context.Context, ws store.WorkspaceID) (store.Lease, error) {
	if !validWorkspaceID(ws) {
		return nil, fmt.Errorf("acquire workspace %q: %w", ws, store.ErrNotFound)
	}
	if err := s.exists(ctx, ws); err != nil {
		return nil, fmt.Errorf("acquire workspace %s: %w", ws, err)
	}
	claim, err := s.leases.Claim(ctx, ws)
	if err != nil {
		return nil, fmt.Errorf("acquire workspace %s: %w", ws, err)
	}
	epoch, err := s.newEpoch(ctx, ws)
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
		defer cancel()
		if rerr := claim.Release(rctx); rerr != nil {
			s.log.Warn("releasing a claim after a failed acquire", "ws", ws, "err", rerr)
		}
		return nil, fmt.Errorf("acquire workspace %s: %w", ws, err)
	}
	l := &lease{s: s, ws: ws, epoch: store.Epoch(epoch), claim: claim, lost: make(chan struct{})}
	l.ctx, l.cancel = context.WithCancel(s.ctx)
	s.mu.Lock()
	old := s.held[ws]
	s.held[ws] = l
	current := s.workspaces[ws]
	s.mu.Unlock()
	if old != nil {
		old.lose()
	}
	if current == nil || current.epoch != epoch {
		l.lose() // a newer epoch was applied already
	}
	go l.watch()
	return l, nil
}

// newEpoch appends an epoch entry for ws and returns its sequence once the replica applied it.
func (s *Store) newEpoch(ctx context.Context, ws store.WorkspaceID) (uint64, error) {
	subject := epochSubject(ws)
	for {
		var last uint64
		m, err := s.stream.GetLastMsgForSubject(ctx, subject)
		switch {
		case err == nil:
			last = m.Sequence
		case !errors.Is(err, jetstream.ErrMsgNotFound):
			return 0, fmt.Errorf("read the epoch: %w", err)
		}
		a, err := s.appendEntry(ctx, subject, entry{Op: opEpoch, WS: ws, Node: s.node.Name()},
			jetstream.WithExpectLastSequencePerSubject(last))
		if fenced(err) {
			continue // another epoch entry came in between: read it and go again
		}
		if err != nil {
			return 0, err
		}
		r, err := a.wait(ctx)
		if err != nil {
			return 0, err
		}
		return a.seq, r.err
	}
}

// Lookup implements store.Placement: the node holding the workspace's lease ("" when none)
// and the sequence of the epoch entry this replica applied last (0: never acquired).
func (s *Store) Lookup(ctx context.Context, ws store.WorkspaceID) (store.NodeID, store.Epoch, error) {
	if !validWorkspaceID(ws) {
		return "", 0, fmt.Errorf("look up workspace %q: %w", ws, store.ErrNotFound)
	}
	if err := s.exists(ctx, ws); err != nil {
		return "", 0, fmt.Errorf("look up workspace %s: %w", ws, err)
	}
	var epoch store.Epoch
	s.mu.Lock()
	if w := s.workspaces[ws]; w != nil {
		epoch = store.Epoch(w.epoch)
	}
	s.mu.Unlock()
	node, held, err := s.leases.Holder(ctx, ws)
	if err != nil {
		return "", 0, fmt.Errorf("look up workspace %s: %w", ws, err)
	}
	if !held {
		node = ""
	}
	return node, epoch, nil
}
