package capnweb_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"atelier/capnweb"
)

// recorder is a target for API-convention tests.
type recorder struct {
	capnweb.Target
	mu       sync.Mutex
	order    []int
	disposed chan struct{}
}

// Record appends i; calls must arrive in push order.
func (r *recorder) Record(i int) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = append(r.order, i)
	return i
}

// locked embeds a mutex, whose methods must not become RPC methods, and a target, whose must.
type locked struct {
	sync.Mutex
	*recorder
}

// Point is a struct parameter.
type Point struct {
	X int `json:"x"`
	Y int
}

// Sum adds the fields of a struct argument.
func (*recorder) Sum(p Point) int { return p.X + p.Y }

// Small takes an int8, to test range checks.
func (*recorder) Small(n int8) int8 { return n }

// Total adds its variadic arguments.
func (*recorder) Total(ns ...float64) float64 {
	t := 0.0
	for _, n := range ns {
		t += n
	}
	return t
}

// Panic panics.
func (*recorder) Panic() string { panic("boom") }

// quotaError names its JavaScript class.
type quotaError struct{}

func (quotaError) Error() string     { return "over quota" }
func (quotaError) ErrorName() string { return "QuotaError" }

// Quota fails with a named error, wrapped.
func (*recorder) Quota() error { return fmt.Errorf("check: %w", quotaError{}) }

// Peer reports the transport from the handler context.
func (*recorder) Peer(ctx context.Context) string {
	return capnweb.SessionFrom(ctx).Peer().Transport
}

// Reenter calls back into the client, which calls Record on this target again while Reenter
// is still running.
func (r *recorder) Reenter(ctx context.Context, cb *capnweb.Stub) (any, error) {
	return cb.CallFunc(ctx).Await(ctx)
}

// Dispose reports the end of the target.
func (r *recorder) Dispose() {
	if r.disposed != nil {
		close(r.disposed)
	}
}

func pair(t *testing.T, main any) (*capnweb.Session, *capnweb.Stub) {
	a, b := capnweb.Pipe()
	server := capnweb.NewSession(a, capnweb.Options{Main: main, Peer: capnweb.PeerInfo{Transport: "pipe"},
		Logger: slog.New(slog.DiscardHandler)})
	client := capnweb.NewSession(b, capnweb.Options{})
	t.Cleanup(func() { client.Close(); server.Close() })
	return server, client.Main()
}

func TestCallsArriveInOrder(t *testing.T) {
	r := &recorder{}
	_, main := pair(t, r)
	ctx := context.Background()
	var ps []*capnweb.Promise
	for i := range 200 {
		ps = append(ps, main.Call(ctx, "record", i))
	}
	for _, p := range ps {
		if _, err := p.Await(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for i, v := range r.order {
		if v != i {
			t.Fatalf("call %d arrived as %d: %v", i, v, r.order)
		}
	}
}

func TestReentrantCallDoesNotDeadlock(t *testing.T) {
	_, main := pair(t, &recorder{})
	ctx := context.Background()
	cb := func(ctx context.Context) (any, error) {
		return main.Call(ctx, "record", 7).Await(ctx)
	}
	v, err := main.Call(ctx, "reenter", cb).Await(ctx)
	if err != nil || v != 7.0 {
		t.Fatalf("got %v %v", v, err)
	}
}

func TestParameterConversion(t *testing.T) {
	_, main := pair(t, &recorder{})
	ctx := context.Background()
	for _, c := range []struct {
		method string
		args   []any
		want   any
		err    string
	}{
		{"sum", []any{map[string]any{"x": 2, "y": 3}}, 5.0, ""},
		{"sum", []any{}, 0.0, ""},
		{"sum", []any{"nope"}, nil, "TypeError: argument 1: expected object, got string"},
		{"small", []any{300}, nil, "TypeError: argument 1: 300 overflows int8"},
		{"small", []any{1.5}, nil, "TypeError: argument 1: expected integer, got 1.5"},
		{"total", []any{1, 2, 3}, 6.0, ""},
		{"total", nil, 0.0, ""},
		{"panic", nil, nil, "Error: internal error"},
		{"quota", nil, nil, "QuotaError: check: over quota"},
		{"peer", nil, "pipe", ""},
		{"dispose", nil, nil, "TypeError: 'dispose' is not a function."},
		{"toString", nil, nil, "TypeError: 'toString' is not a function."},
	} {
		v, err := main.Call(ctx, c.method, c.args...).Await(ctx)
		if c.err != "" {
			if err == nil || err.Error() != c.err {
				t.Errorf("%s%v: got %v, %v; want error %q", c.method, c.args, v, err, c.err)
			}
			continue
		}
		if err != nil || v != c.want {
			t.Errorf("%s%v: got %v, %v; want %v", c.method, c.args, v, err, c.want)
		}
	}
}

// dynamic is a DynamicTarget.
type dynamic struct{}

func (dynamic) CallMethod(_ context.Context, method string, args []any) (any, error) {
	if method == "upper" {
		return fmt.Sprintf("%v!", args[0]), nil
	}
	return nil, capnweb.TypeError("no method %s", method)
}

func (dynamic) GetProperty(_ context.Context, name string) (any, error) {
	if name == "info" {
		return map[string]any{"kind": "dynamic"}, nil
	}
	return capnweb.Undefined, nil
}

func TestDynamicTarget(t *testing.T) {
	_, main := pair(t, dynamic{})
	ctx := context.Background()
	if v, err := main.Call(ctx, "upper", "hi").Await(ctx); err != nil || v != "hi!" {
		t.Fatalf("upper: %v %v", v, err)
	}
	if v, err := main.Get("info", "kind").Await(ctx); err != nil || v != "dynamic" {
		t.Fatalf("info.kind: %v %v", v, err)
	}
	if _, err := main.Call(ctx, "other").Await(ctx); err == nil {
		t.Fatal("unknown dynamic method succeeded")
	}
}

func TestLocalStub(t *testing.T) {
	r := &recorder{disposed: make(chan struct{})}
	st, err := capnweb.NewStub(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if v, err := st.Call(ctx, "record", 3).Await(ctx); err != nil || v != 3.0 {
		t.Fatalf("local call: %v %v", v, err)
	}
	if st.IsRemote() {
		t.Error("local stub reports remote")
	}
	// Passed to the peer, the local target is exported and called remotely.
	_, main := pair(t, &echoer{})
	if v, err := main.Call(ctx, "callRecord", st).Await(ctx); err != nil || v != 9.0 {
		t.Fatalf("exported local stub: %v %v", v, err)
	}
	st.Dispose()
	// The last reference is gone (the peer released its copy too), so the target is disposed.
	select {
	case <-r.disposed:
	case <-time.After(5 * time.Second):
		t.Fatal("local target not disposed")
	}
	if _, err := capnweb.NewStub(42); err == nil {
		t.Error("NewStub accepted a non-target")
	}
}

// echoer calls record(9) on a stub it is given.
type echoer struct{ capnweb.Target }

// CallRecord calls record on r.
func (*echoer) CallRecord(ctx context.Context, r *capnweb.Stub) (any, error) {
	return r.Call(ctx, "record", 9).Await(ctx)
}

func TestMainDisposedAtSessionEnd(t *testing.T) {
	r := &recorder{disposed: make(chan struct{})}
	server, _ := pair(t, r)
	server.Close()
	select {
	case <-r.disposed:
	case <-time.After(5 * time.Second):
		t.Fatal("main object not disposed at session end")
	}
	if server.Err() == nil {
		t.Fatal("closed session has no error")
	}
}

func TestEmbeddedMethods(t *testing.T) {
	_, main := pair(t, &locked{recorder: &recorder{}})
	ctx := context.Background()
	if _, err := main.Call(ctx, "lock").Await(ctx); err == nil || err.Error() != "TypeError: 'lock' is not a function." {
		t.Fatalf("embedded mutex reachable: %v", err)
	}
	if v, err := main.Call(ctx, "record", 4).Await(ctx); err != nil || v != 4.0 {
		t.Fatalf("embedded target method: %v %v", v, err)
	}
}

// gate is a target whose Hold gives up its turn and then waits until the test opens it.
type gate struct {
	capnweb.Target
	open chan struct{}
}

// Hold lets the next call start, then waits for the gate to open.
func (g *gate) Hold(ctx context.Context) string {
	capnweb.Unblock(ctx)
	<-g.open
	return "held"
}

// Echo returns s.
func (*gate) Echo(s string) string { return s }

// TestUnblockWithNothingQueued: a handler that gives up its turn when no call waits behind it
// lets the calls that arrive later run while it still runs, and the queue goes on working once
// it returns.
func TestUnblockWithNothingQueued(t *testing.T) {
	x, y := capnweb.Pipe()
	g := &gate{open: make(chan struct{})}
	server := capnweb.NewSession(x, capnweb.Options{Main: g})
	defer server.Close()
	client := capnweb.NewSession(y, capnweb.Options{})
	defer client.Close()
	main := client.Main()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	held := main.Call(ctx, "hold")
	for i := range 3 { // each arrives after hold gave up its turn, or queues behind it until then
		want := fmt.Sprint("echo ", i)
		if v, err := main.Call(ctx, "echo", want).Await(ctx); err != nil || v != want {
			t.Fatalf("echo while hold runs: got %v, %v; want %q", v, err, want)
		}
	}
	close(g.open)
	if v, err := held.Await(ctx); err != nil || v != "held" {
		t.Fatalf("hold: got %v, %v", v, err)
	}
	if v, err := main.Call(ctx, "echo", "after").Await(ctx); err != nil || v != "after" {
		t.Fatalf("echo after hold returned: got %v, %v", v, err)
	}
}
