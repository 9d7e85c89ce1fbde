// Package api is the conformance API of the Go Cap'n Web server: the same surface, with the same
// behaviour, as the API that the golden transcripts were recorded against
// (tools/capture.mjs, tests/capnweb/node/api.mjs). The conformance server serves it, and the
// capnweb package's tests replay the transcripts against it.
package api

import (
	"context"
	"sync"

	"atelier/capnweb"
)

var userNames = []string{"", "alice", "bob", "carol"}

// Counter is a counter handed out by reference; it lives until the client releases it.
type Counter struct {
	capnweb.Target
	mu        sync.Mutex
	n         float64
	onDispose func(n float64)
}

// Increment adds by (default 1) and returns the new value.
func (c *Counter) Increment(by ...float64) float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(by) == 0 {
		by = []float64{1}
	}
	c.n += by[0]
	return c.n
}

// Value is a getter: reading the property returns the current count.
func (c *Counter) Value() float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// CallsInline implements capnweb.Inline: a counter's methods only compute.
func (c *Counter) CallsInline() bool { return true }

// Dispose is called when the session drops its last reference.
func (c *Counter) Dispose() {
	if c.onDispose != nil {
		c.onDispose(c.Value())
	}
}

// User is the record returned by GetUser.
type User struct {
	ID   float64 `json:"id"`
	Name string  `json:"name"`
}

// Team is the record returned by GetTeams.
type Team struct {
	Name      string `json:"name"`
	MemberIDs []int  `json:"memberIds"`
}

// API is the main object of one session.
type API struct {
	capnweb.Target
	mu    sync.Mutex
	saved *capnweb.Stub
	// OnCounterDisposed, if set, is called with a counter's final value when it is disposed.
	OnCounterDisposed func(n float64)
}

// CallsInline implements capnweb.Inline: every method only computes, or awaits the peer with
// its handler context (which hands the session's reading to another goroutine).
func (a *API) CallsInline() bool { return true }

// Hello greets.
func (a *API) Hello(name string) string { return "Hello, " + name + "!" }

// Add adds two numbers.
func (a *API) Add(x, y float64) float64 { return x + y }

// MakeCounter returns a new counter.
func (a *API) MakeCounter(start float64) *Counter {
	return &Counter{n: start, onDispose: a.OnCounterDisposed}
}

// CallMeBack calls the client's function cb with x and returns its result plus one.
func (a *API) CallMeBack(ctx context.Context, cb *capnweb.Stub, x float64) (float64, error) {
	r, err := capnweb.AwaitAs[float64](ctx, cb.CallFunc(ctx, x))
	return r + 1, err
}

// NotifyTwice calls listener.onEvent twice and returns both answers.
func (a *API) NotifyTwice(ctx context.Context, listener *capnweb.Stub) ([]any, error) {
	first, err := listener.Call(ctx, "onEvent", "first").Await(ctx)
	if err != nil {
		return nil, err
	}
	second, err := listener.Call(ctx, "onEvent", "second").Await(ctx)
	if err != nil {
		return nil, err
	}
	return []any{first, second}, nil
}

// GetUserIds returns every user id.
func (a *API) GetUserIds() []int { return []int{1, 2, 3} }

// GetUserName returns a user's name.
func (a *API) GetUserName(id int) (string, error) {
	if id < 0 || id >= len(userNames) {
		return "", capnweb.RangeError("no user %d", id)
	}
	return userNames[id], nil
}

// GetUser returns a user record.
func (a *API) GetUser(id int) (User, error) {
	name, err := a.GetUserName(id)
	return User{ID: float64(id), Name: name}, err
}

// Fail always fails with a RangeError.
func (a *API) Fail() error { return capnweb.RangeError("bad thing happened") }

// Echo returns its argument.
func (a *API) Echo(v any) any { return v }

// Version is a getter.
func (a *API) Version() string { return "1.0" }

// GetNothing returns null.
func (a *API) GetNothing() any { return nil }

// GetCounterBox returns an object holding a label and a counter stub, in that order (as the
// JavaScript API builds it).
func (a *API) GetCounterBox(n float64) capnweb.Object {
	return capnweb.Object{{Key: "label", Value: "box"}, {Key: "counter", Value: a.MakeCounter(n)}}
}

// UseCounter calls increment(100) on a counter stub the client passes back.
func (a *API) UseCounter(ctx context.Context, c *capnweb.Stub) (any, error) {
	return c.Call(ctx, "increment", 100).Await(ctx)
}

// codeError is an error with an extra "code" property.
type codeError struct{ code int }

func (e codeError) Error() string              { return "nope" }
func (e codeError) ErrorProps() map[string]any { return map[string]any{"code": e.code} }

// FailWithCode fails with an error carrying {code: 42}.
func (a *API) FailWithCode() error { return codeError{code: 42} }

// GetTeams returns teams with member ids.
func (a *API) GetTeams() []Team {
	return []Team{{Name: "red", MemberIDs: []int{1, 2}}, {Name: "blue", MemberIDs: []int{3}}}
}

// Subscribe keeps the callback for Fire.
func (a *API) Subscribe(cb *capnweb.Stub) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.saved != nil {
		a.saved.Dispose()
	}
	a.saved = cb.Dup()
	return "subscribed"
}

// Fire calls the saved callback with x.
func (a *API) Fire(ctx context.Context, x float64) (any, error) {
	a.mu.Lock()
	cb := a.saved
	a.mu.Unlock()
	if cb == nil {
		return nil, capnweb.NewError("Error", "not subscribed")
	}
	return cb.CallFunc(ctx, x).Await(ctx)
}

// Unsubscribe drops the saved callback.
func (a *API) Unsubscribe() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.saved != nil {
		a.saved.Dispose()
		a.saved = nil
	}
	return "unsubscribed"
}

// GetStream returns a stream of two chunks.
func (a *API) GetStream() *capnweb.ReadableStream {
	return capnweb.StreamOf("chunk-a", "chunk-b")
}

// Dispose drops the saved callback when the session ends.
func (a *API) Dispose() { a.Unsubscribe() }
