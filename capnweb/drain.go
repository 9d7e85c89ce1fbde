package capnweb

import (
	"context"
	"errors"
	"net/http"
	"sync"
	"time"
)

// errDraining rejects the calls a peer makes once its session drains.
var errDraining = &Error{Name: "Error", Message: "the server is shutting down; this call was not run (retry on a new connection)"}

// ErrShuttingDown is the reason Server.Shutdown closes each session with (the WebSocket close
// frame's text).
var ErrShuttingDown = &Error{Name: "Error", Message: "the server is shutting down"}

// drainPoll is how often Drain looks whether the calls in progress are done.
const drainPoll = 5 * time.Millisecond

// roundTripper is implemented by transports that can confirm that the peer has seen
// everything sent so far, and that everything the peer sent before it has been read (a
// WebSocket ping answered by its pong).
type roundTripper interface {
	roundTrip(ctx context.Context) error
}

// Drain ends the session gracefully: the calls the peer makes from now on are rejected without
// running, the calls already received run to the end and their results are sent, then the
// session closes with reason (nil: a normal close) like Close. Over a WebSocket, Drain first
// waits for a ping's pong, so that a result the peer asked for just before the drain began is
// still sent. When ctx ends first, the session is closed at once and ctx's error returned.
func (s *Session) Drain(ctx context.Context, reason error) error {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	err := s.settle(ctx)
	if reason == nil {
		reason = errClosedLocally
	}
	s.closeWith(reason)
	return err
}

// settle waits until the session has no call in progress, no result owed to the peer and
// nothing left to write, or until ctx ends or the session does.
func (s *Session) settle(ctx context.Context) error {
	if rt, ok := s.tr.(roundTripper); ok {
		if err := rt.roundTrip(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return nil // the connection failed: nothing more can be sent
		}
	}
	tick := time.NewTicker(drainPoll)
	defer tick.Stop()
	for {
		s.mu.Lock()
		idle := s.closed || s.pending == 0 && s.obligations <= 0 && len(s.outq) == 0 && !s.writing && !s.unflushed
		s.mu.Unlock()
		if idle {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			return nil
		case <-tick.C:
		}
	}
}

// sessions tracks a Server's live WebSocket sessions for Shutdown.
type sessions struct {
	mu       sync.Mutex
	live     map[*Session]struct{}
	draining bool
}

// add registers s; it reports false once the server is shutting down.
func (t *sessions) add(s *Session) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.draining {
		return false
	}
	if t.live == nil {
		t.live = map[*Session]struct{}{}
	}
	t.live[s] = struct{}{}
	return true
}

func (t *sessions) remove(s *Session) {
	t.mu.Lock()
	delete(t.live, s)
	t.mu.Unlock()
}

func (t *sessions) isDraining() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.draining
}

// Shutdown drains the server: new WebSocket and batch requests are refused with 503, and every
// live WebSocket session is drained (Session.Drain: calls in progress finish and their results
// are sent, new calls are rejected) and then closed with ErrShuttingDown. It returns once all
// have closed, or ctx's error when ctx ended first (the sessions left are then closed at once).
// HTTP batch requests in progress are ordinary requests: http.Server.Shutdown waits for them.
func (srv *Server) Shutdown(ctx context.Context) error {
	srv.sessions.mu.Lock()
	srv.sessions.draining = true
	live := make([]*Session, 0, len(srv.sessions.live))
	for s := range srv.sessions.live {
		live = append(live, s)
	}
	srv.sessions.mu.Unlock()
	errs := make([]error, len(live))
	var wg sync.WaitGroup
	for i, s := range live {
		wg.Go(func() { errs[i] = s.Drain(ctx, ErrShuttingDown) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// refuseDraining answers a request that arrives while the server shuts down; it reports
// whether it did.
func (srv *Server) refuseDraining(w http.ResponseWriter) bool {
	if !srv.sessions.isDraining() {
		return false
	}
	http.Error(w, ErrShuttingDown.Message, http.StatusServiceUnavailable)
	return true
}
