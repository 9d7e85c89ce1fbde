package capnweb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"atelier/capnweb"
)

// waiter is a target whose handlers block until their context ends, in different ways.
type waiter struct {
	capnweb.Target
	started chan string
	ended   chan error
}

// ViaDone waits on ctx.Done.
func (w *waiter) ViaDone(ctx context.Context) {
	w.started <- "done"
	<-ctx.Done()
	w.ended <- ctx.Err()
}

// ViaErr polls ctx.Err without ever asking for Done.
func (w *waiter) ViaErr(ctx context.Context) {
	w.started <- "err"
	for ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	w.ended <- ctx.Err()
}

// ViaChild waits on a context derived from ctx.
func (w *waiter) ViaChild(ctx context.Context) {
	child, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	w.started <- "child"
	<-child.Done()
	w.ended <- child.Err()
}

// HasSession reports whether SessionFrom finds the session.
func (w *waiter) HasSession(ctx context.Context) bool {
	return capnweb.SessionFrom(ctx) != nil && ctx.Err() == nil
}

func newWaiterPair(t *testing.T) (*waiter, *capnweb.Session, *capnweb.Stub) {
	t.Helper()
	w := &waiter{started: make(chan string, 1), ended: make(chan error, 1)}
	a, b := capnweb.Pipe()
	server := capnweb.NewSession(a, capnweb.Options{Main: w})
	t.Cleanup(func() { server.Close() })
	client := capnweb.NewSession(b, capnweb.Options{})
	t.Cleanup(func() { client.Close() })
	return w, client, client.Main()
}

func awaitEnd(t *testing.T, w *waiter) {
	t.Helper()
	select {
	case err := <-w.ended:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler context ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler context not cancelled")
	}
}

// TestHandlerContextCancelledWhenResultDropped: disposing the promise of a running call cancels
// the handler's context, however the handler watches it.
func TestHandlerContextCancelledWhenResultDropped(t *testing.T) {
	for _, method := range []string{"viaDone", "viaErr", "viaChild"} {
		t.Run(method, func(t *testing.T) {
			w, _, main := newWaiterPair(t)
			ctx := context.Background()
			p := main.Call(ctx, method)
			// Awaiting would pull the result; a pushed call runs without being pulled.
			<-w.started
			p.Dispose()
			awaitEnd(t, w)
		})
	}
}

// TestHandlerContextEndsWithSession: closing the session cancels running handlers.
func TestHandlerContextEndsWithSession(t *testing.T) {
	for _, method := range []string{"viaDone", "viaErr"} {
		t.Run(method, func(t *testing.T) {
			w, client, main := newWaiterPair(t)
			p := main.Call(context.Background(), method)
			defer p.Dispose()
			<-w.started
			client.Close()
			awaitEnd(t, w)
		})
	}
}

// TestHandlerContextCarriesSession: SessionFrom works on a handler's context.
func TestHandlerContextCarriesSession(t *testing.T) {
	_, _, main := newWaiterPair(t)
	ctx := context.Background()
	v, err := main.Call(ctx, "hasSession").Await(ctx)
	if err != nil || v != true {
		t.Fatalf("hasSession: %v %v", v, err)
	}
}
