package capnweb

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// slowAPI's slow() runs until the test releases it.
type slowAPI struct {
	Target
	started chan struct{}
	release chan struct{}
}

func (a *slowAPI) Slow() string {
	a.started <- struct{}{}
	<-a.release
	return "done"
}

func (a *slowAPI) Ping() string { return "pong" }

// drainServer serves a slowAPI over WebSocket and dials it.
func drainServer(t *testing.T) (*Server, *slowAPI, *Session, string) {
	t.Helper()
	api := &slowAPI{started: make(chan struct{}, 1), release: make(chan struct{})}
	srv := &Server{NewMain: func(*http.Request) (any, error) { return api, nil }}
	hs := httptest.NewServer(http.HandlerFunc(srv.ServeWebSocket))
	t.Cleanup(hs.Close)
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	sess, err := DialWebSocket(context.Background(), url, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return srv, api, sess, url
}

// waitDraining waits until every live session of srv drains.
func waitDraining(t *testing.T, srv *Server) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		srv.sessions.mu.Lock()
		all := srv.sessions.draining
		for s := range srv.sessions.live {
			s.mu.Lock()
			all = all && s.draining
			s.mu.Unlock()
		}
		srv.sessions.mu.Unlock()
		if all {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the sessions did not start draining")
}

type awaited struct {
	v   any
	err error
}

func awaitLater(p *Promise) chan awaited {
	out := make(chan awaited, 1)
	go func() {
		v, err := p.Await(context.Background())
		out <- awaited{v, err}
	}()
	return out
}

// TestShutdownDrainsCalls: a call in progress when Shutdown begins finishes and its result
// reaches the client; a call made during the drain is rejected without running; then the
// session closes with the shutdown reason and new sessions are refused.
func TestShutdownDrainsCalls(t *testing.T) {
	srv, api, sess, url := drainServer(t)
	main := sess.Main()
	slow := awaitLater(main.Call(context.Background(), "slow"))
	<-api.started

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(ctx) }()
	waitDraining(t, srv)

	if _, err := main.Call(context.Background(), "ping").Await(context.Background()); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("a call during the drain: %v; want it refused as shutting down", err)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned while a call was in progress: %v", err)
	default:
	}
	close(api.release)
	if r := <-slow; r.err != nil || r.v != "done" {
		t.Fatalf("the call in progress = %v, %v; want its result", r.v, r.err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	<-sess.Done()
	if err := sess.Err(); err == nil || !strings.Contains(err.Error(), "shutting down") {
		t.Fatalf("the session ended with %v; want the shutdown reason", err)
	}
	if _, err := DialWebSocket(context.Background(), url, Options{}); err == nil {
		t.Fatal("a new session was accepted after Shutdown")
	}
}

// TestShutdownTimeout: a call that does not finish in time is cut off when ctx ends; Shutdown
// says so and the client's call fails.
func TestShutdownTimeout(t *testing.T) {
	srv, api, sess, _ := drainServer(t)
	defer close(api.release)
	slow := awaitLater(sess.Main().Call(context.Background(), "slow"))
	<-api.started
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := srv.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown = %v; want the deadline error", err)
	}
	if r := <-slow; r.err == nil {
		t.Fatalf("the cut-off call succeeded: %v", r.v)
	}
}
