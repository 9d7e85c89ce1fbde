package kernel

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"sync"
	"time"

	"atelier/host/store"
)

// Why a run's context was cancelled (context.Cause).
var (
	errRunStopped    = errors.New("stopped")
	errRunDeleted    = errors.New("the chat was deleted")
	errRunClosed     = errors.New("the server is shutting down")
	errRunAccessLost = errors.New("the chatting user lost access to the workspace")
	errRunMoved      = errors.New("the workspace moved to another node")
)

// closeWait bounds how long Close waits for the runs it cancelled to return.
const closeWait = 10 * time.Second

// chatKey names a chat of a workspace.
type chatKey struct {
	ws   store.WorkspaceID
	chat string
}

// chatState keeps the chats' running agent runs (at most one per chat) and orders the writes
// of each chat (message ids, draft changes) through a fixed set of locks, so that it holds
// nothing per idle chat.
type chatState struct {
	seed  maphash.Seed
	once  sync.Once
	locks [64]sync.Mutex

	mu     sync.Mutex // guards runs and closed
	runs   map[chatKey]*liveRun
	closed bool
	wg     sync.WaitGroup // the run goroutines
}

// liveRun is a chat's run under way.
type liveRun struct {
	cancel context.CancelCauseFunc
	// done is closed once the run ended and was forgotten (stopAgent waits for it).
	done chan struct{}
	p    *principal // the chatting user, acting for the chat
	// pending is the id of the newest message a person added during the run, seen the id of
	// the newest message the agent read (History): when pending > seen once the run ends,
	// the chat runs again (chatagent.go).
	pending, seen uint64
	// waiting is set by RequestConnection: the run ends its turn waiting for the user.
	waiting bool
}

// lock takes the lock of chat key's writes (chat "": the workspace's chat list) and returns
// its unlock.
func (s *chatState) lock(key chatKey) func() {
	s.once.Do(func() { s.seed = maphash.MakeSeed() })
	m := &s.locks[maphash.String(s.seed, string(key.ws)+"\x00"+key.chat)%uint64(len(s.locks))]
	m.Lock()
	return m.Unlock
}

// running reports whether chat key has a run under way.
func (s *chatState) running(key chatKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runs[key] != nil
}

// cancel cancels chat key's run, if any, with cause, and returns its done channel (nil:
// no run).
func (s *chatState) cancel(key chatKey, cause error) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runs[key]
	if r == nil {
		return nil
	}
	r.pending = 0
	r.cancel(cause)
	return r.done
}

// cancelWhere cancels, with cause, the runs of workspace ws for which match holds.
func (s *chatState) cancelWhere(ws store.WorkspaceID, cause error, match func(*liveRun) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, r := range s.runs {
		if key.ws == ws && match(r) {
			r.pending = 0
			r.cancel(cause)
		}
	}
}

// recheck cancels the runs of workspace w whose chatting user no longer has access to it
// (the overseer calls it on every change of the workspace's record).
func (s *chatState) recheck(w store.Workspace) {
	s.cancelWhere(w.ID, errRunAccessLost, func(r *liveRun) bool {
		_, err := r.p.roleIn(w)
		return err != nil
	})
}

// close cancels every run and waits (up to closeWait) for them to return.
func (s *chatState) close(log *slog.Logger) {
	s.mu.Lock()
	s.closed = true
	for _, r := range s.runs {
		r.pending = 0
		r.cancel(errRunClosed)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(closeWait):
		log.Warn("chat runs did not end in time after their cancellation; closing anyway", "wait", closeWait)
	}
}
