package capnweb

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"atelier/capnweb/ordered"
)

// ErrDisposed is returned when a disposed stub or promise is used.
var ErrDisposed = &Error{Name: "Error", Message: "Attempted to use an RPC stub after it was disposed."}

// Stub is a reference to a capability: an object of the peer (an import) or a local Go target.
// Calls on it return promises at once, so that further calls can be pipelined on the results.
//
// A stub holds one reference. Dispose drops it; when the last reference to a remote object is
// dropped the peer is told to release it. Dup makes an independent reference. Stubs received as
// call arguments are disposed when the handler returns; Dup them to keep them longer.
type Stub struct {
	mu       sync.Mutex
	h        hook
	borrowed bool // a view that does not own its reference (Dispose is a no-op)
	disposed bool
}

// NewStub wraps a local Go target (see the package documentation for what a target is) in a stub
// that is not attached to any session. Passing it to a peer exports the target.
func NewStub(target any) (*Stub, error) {
	lt, err := newLocalTarget(nil, target)
	if err != nil {
		return nil, err
	}
	return &Stub{h: &targetHook{lt: lt}}, nil
}

// hook returns the stub's hook, or an error if it was disposed.
func (s *Stub) hook() (hook, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.disposed {
		return nil, ErrDisposed
	}
	return s.h, nil
}

// Call calls method on the capability with args and returns a promise for the result. Nothing
// blocks: the call is sent (or queued on the local target) before Call returns. ctx is checked
// before sending; bound the wait with Await's context and cancel with Promise.Dispose.
func (s *Stub) Call(ctx context.Context, method string, args ...any) *Promise {
	return callPath(ctx, s, nil, []any{method}, args)
}

// CallFunc calls the capability itself (a remote function or a Go func target) with args.
func (s *Stub) CallFunc(ctx context.Context, args ...any) *Promise {
	return callPath(ctx, s, nil, nil, args)
}

// Get returns a promise for a property of the capability (a path of names or indexes). Nothing
// is sent until the promise is awaited, called or passed as an argument. The promise borrows
// the stub's reference: it needs no Dispose until it has been awaited, and is only valid while
// the stub is.
func (s *Stub) Get(path ...any) *Promise {
	h, err := s.hook()
	if err != nil {
		return &Promise{h: errorHook{err}}
	}
	return &Promise{h: h, path: normalizePath(path), borrowed: true}
}

// Dup returns a new, independently disposable reference to the same capability.
func (s *Stub) Dup() *Stub {
	h, err := s.hook()
	if err != nil {
		return &Stub{h: errorHook{err}}
	}
	return &Stub{h: h.dup()}
}

// Dispose drops this reference. It is safe to call more than once.
func (s *Stub) Dispose() {
	s.mu.Lock()
	if s.disposed {
		s.mu.Unlock()
		return
	}
	s.disposed = true
	h, borrowed := s.h, s.borrowed
	s.mu.Unlock()
	if !borrowed {
		h.dispose()
	}
}

// OnBroken registers fn to run once if the session the stub belongs to ends (peer gone, abort
// or Close) while the returned cancel function has not been called. Local stubs never break.
func (s *Stub) OnBroken(fn func(error)) (cancel func()) {
	h, err := s.hook()
	if err != nil {
		fn(err)
		return func() {}
	}
	if ih, ok := h.(*importHook); ok {
		return ih.s.onBroken(fn)
	}
	return func() {}
}

// LocalTarget returns the Go target a stub wraps when it is one of this side's own objects
// (for instance one the peer was given and passed back), and whether it is. A stub of the
// peer's object, or of a promise not yet settled, has none.
func (s *Stub) LocalTarget() (any, bool) {
	h, err := s.hook()
	if err != nil {
		return nil, false
	}
	t, ok := h.(*targetHook)
	if !ok {
		return nil, false
	}
	return t.lt.val, true
}

// IsRemote reports whether the stub refers to an object of a peer.
func (s *Stub) IsRemote() bool {
	h, err := s.hook()
	_, ok := h.(*importHook)
	return err == nil && ok
}

// Promise is the pending result of a call or property read. It can be awaited, or used at once:
// calls on it and property reads of it are pipelined to the peer, and passing it as an argument
// lets the peer substitute the value without a round trip.
//
// A promise holds one reference to its result. Dispose it when done (this cancels a call whose
// result was never needed); stubs inside an awaited value belong to the promise until then and
// must be Dup'ed to outlive it.
type Promise struct {
	mu       sync.Mutex
	h        hook
	path     []any // property path not yet applied
	borrowed bool  // a property view sharing its parent's reference
	disposed bool
}

// state returns the promise's hook and pending path.
func (p *Promise) state() (hook, []any, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.disposed {
		return nil, nil, ErrDisposed
	}
	return p.h, p.path, nil
}

// materialize applies the pending path so that the hook stands for the promised value itself
// (and is owned by p).
func (p *Promise) materialize() (hook, error) {
	p.mu.Lock()
	h, path, borrowed, disposed := p.h, p.path, p.borrowed, p.disposed
	p.mu.Unlock()
	if disposed {
		return nil, ErrDisposed
	}
	if len(path) == 0 && !borrowed {
		return h, nil
	}
	nh := h.call(path, nil, false)
	p.mu.Lock()
	if p.disposed || p.h != h {
		p.mu.Unlock()
		nh.dispose()
		return p.materialize()
	}
	p.h, p.path, p.borrowed = nh, nil, false
	p.mu.Unlock()
	if !borrowed {
		h.dispose()
	}
	return nh, nil
}

func (p *Promise) whenSettled(cb func(any, error)) {
	h, err := p.materialize()
	if err != nil {
		cb(nil, err)
		return
	}
	h.whenSettled(cb)
}

// dup returns a new reference to the same promised value.
func (p *Promise) dup() *Promise {
	h, path, err := p.state()
	if err != nil {
		return &Promise{h: errorHook{err}}
	}
	return &Promise{h: h.dup(), path: path}
}

// Await waits for the result. Values are protocol values (see the package documentation):
// numbers are float64, arrays []any, objects map[string]any, capabilities *Stub. A rejection is
// returned as an error (an *Error for remote errors). Awaiting inside a handler lets the next
// queued call on the handler's target start. Objects lose their key order here: AwaitAs with
// any or Object as the type keeps it.
func (p *Promise) Await(ctx context.Context) (any, error) {
	v, err := p.await(ctx)
	return ordered.Plain(v), err
}

// await is Await with objects as received (Object).
func (p *Promise) await(ctx context.Context) (any, error) {
	unblock(ctx)
	type result struct {
		v   any
		err error
	}
	ch := make(chan result, 1)
	p.whenSettled(func(v any, err error) { ch <- result{v, err} })
	if h, _, err := p.state(); err == nil {
		if s := h.session(); s != nil {
			s.flush()
		}
	}
	select {
	case r := <-ch:
		return r.v, r.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Get returns a promise for a property path inside the result. Like Stub.Get it borrows p's
// reference until it is awaited.
func (p *Promise) Get(path ...any) *Promise {
	h, cur, err := p.state()
	if err != nil {
		return &Promise{h: errorHook{err}}
	}
	return &Promise{h: h, path: append(slices.Clone(cur), normalizePath(path)...), borrowed: true}
}

// Call pipelines a method call on the (future) result.
func (p *Promise) Call(ctx context.Context, method string, args ...any) *Promise {
	return callPath(ctx, nil, p, []any{method}, args)
}

// CallFunc pipelines a call of the (future) result itself, which must be a function.
func (p *Promise) CallFunc(ctx context.Context, args ...any) *Promise {
	return callPath(ctx, nil, p, nil, args)
}

// Dispose drops the reference; if the result was not needed yet, the call is cancelled.
func (p *Promise) Dispose() {
	p.mu.Lock()
	if p.disposed {
		p.mu.Unlock()
		return
	}
	p.disposed = true
	h, borrowed := p.h, p.borrowed
	p.mu.Unlock()
	if !borrowed {
		h.dispose()
	}
}

// AwaitAll awaits several promises together: every result is requested before waiting, so
// they cost one round trip (like JavaScript's Promise.all). It returns the values in order, or
// the first error in order.
func AwaitAll(ctx context.Context, ps ...*Promise) ([]any, error) {
	unblock(ctx)
	type result struct {
		v   any
		err error
	}
	chans := make([]chan result, len(ps))
	flushed := map[*Session]bool{}
	for i, p := range ps {
		ch := make(chan result, 1)
		chans[i] = ch
		p.whenSettled(func(v any, err error) { ch <- result{v, err} })
	}
	for _, p := range ps {
		if h, _, err := p.state(); err == nil {
			if s := h.session(); s != nil && !flushed[s] {
				flushed[s] = true
				s.flush()
			}
		}
	}
	out := make([]any, len(ps))
	var firstErr error
	for i, ch := range chans {
		select {
		case r := <-ch:
			out[i] = ordered.Plain(r.v)
			if r.err != nil && firstErr == nil {
				firstErr = r.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return out, firstErr
}

// AwaitAs awaits p and converts the result to T with the same rules as handler parameters: with
// T any, objects are Object and keep their key order.
func AwaitAs[T any](ctx context.Context, p *Promise) (T, error) {
	var out T
	v, err := p.await(ctx)
	if err != nil {
		return out, err
	}
	err = assignValue(&out, v)
	return out, err
}

// callPath calls path+args on a stub or promise.
func callPath(ctx context.Context, st *Stub, p *Promise, path []any, args []any) *Promise {
	if err := ctx.Err(); err != nil {
		return &Promise{h: errorHook{err}}
	}
	var h hook
	var err error
	if st != nil {
		h, err = st.hook()
	} else {
		var prefix []any
		h, prefix, err = p.state()
		path = append(slices.Clone(prefix), path...)
	}
	if err != nil {
		return &Promise{h: errorHook{err}}
	}
	cargs, err := canonicalArgs(h.session(), args)
	if err != nil {
		return &Promise{h: errorHook{err}}
	}
	return &Promise{h: h.call(path, cargs, true)}
}

// normalizePath converts integer path elements to float64 as on the wire. Elements other than
// strings and integers are a programming error and become the string form of the value.
func normalizePath(path []any) []any {
	out := make([]any, len(path))
	for i, k := range path {
		switch k := k.(type) {
		case string:
			out[i] = k
		case int:
			out[i] = float64(k)
		case int64:
			out[i] = float64(k)
		case float64:
			out[i] = k
		default:
			out[i] = fmt.Sprint(k)
		}
	}
	return out
}

// rejection turns the value of a reject message into a Go error.
func rejection(v any) error {
	if e, ok := v.(*Error); ok {
		return e
	}
	disposeValue(v)
	return &Error{Name: "Error", Message: "call rejected with a non-error value"}
}
