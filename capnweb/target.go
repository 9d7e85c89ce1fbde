package capnweb

import (
	"context"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"unicode"
)

// Target marks a Go type whose values are passed by reference: embed it in a struct and pointers
// to that struct become capabilities (like JavaScript's RpcTarget) instead of being copied.
type Target struct{}

func (Target) rpcTarget() {}

// target is implemented by every type that embeds Target.
type target interface{ rpcTarget() }

// DynamicTarget is a target whose surface is decided at run time (for instance a gadget whose
// methods come from its WIT exports). It is used instead of reflection on the Go type.
type DynamicTarget interface {
	// CallMethod calls the named method with protocol values as arguments.
	CallMethod(ctx context.Context, method string, args []any) (any, error)
	// GetProperty reads the named property; return Undefined for an unknown name.
	GetProperty(ctx context.Context, name string) (any, error)
}

// Disposer is implemented by targets that want to know when the session holds no reference to
// them any more (the peer released every stub, or the session ended). Dispose may run on the
// session's read loop and must not block.
type Disposer interface {
	Dispose()
}

// Inline is implemented by targets whose methods return promptly without waiting for anything:
// no I/O, no lock that another call may hold for long, no stream reads or writes. When
// CallsInline returns true, calls from the peer of a server's WebSocket session run on the
// session's read loop instead of a pooled goroutine, which saves a goroutine hand-over per call;
// while one runs the session reads nothing, so a slow method delays every call of the session.
// A method that awaits a promise (with its handler context), calls Unblock or reads or writes a
// stream hands the reading to a new goroutine first, so it may still call back into the peer.
// It must not call Session.Close, which waits for the read loop. CallsInline is not an RPC
// method.
type Inline interface {
	// CallsInline reports whether the target's calls may run on the read loop.
	CallsInline() bool
}

// isTarget reports whether v is passed by reference.
func isTarget(v any) bool {
	switch v.(type) {
	case target, DynamicTarget:
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Func && !rv.IsNil()
}

// localTarget is a Go target as seen by one session: its reference count and its call queue.
type localTarget struct {
	s       *Session // nil for stubs made by NewStub
	val     any
	key     any // key in s.targets, if registered
	dynamic DynamicTarget
	fn      reflect.Value // set for funcs and bound methods
	methods map[string]*methodInfo
	recv    reflect.Value
	inline  bool // calls may run on the session's read loop (Inline)

	mu   sync.Mutex
	refs int
	q    callQueue
}

// newLocalTarget returns the session's target for v with one new reference. Pointer targets are
// shared per session, so that all their stubs use one call queue and one dispose.
func newLocalTarget(s *Session, v any) (*localTarget, error) {
	if !isTarget(v) {
		return nil, TypeError("%T is not a target (embed capnweb.Target, implement DynamicTarget, or pass a func)", v)
	}
	rv := reflect.ValueOf(v)
	var key any
	if s != nil && rv.Kind() == reflect.Pointer {
		key = v
		s.mu.Lock()
		if lt := s.targets[key]; lt != nil {
			s.mu.Unlock()
			lt.addRef()
			return lt, nil
		}
		s.mu.Unlock()
	}
	lt := &localTarget{s: s, val: v, refs: 1}
	if in, ok := v.(Inline); ok {
		lt.inline = in.CallsInline()
	}
	switch {
	case rv.Kind() == reflect.Func:
		lt.fn = rv
	default:
		if d, ok := v.(DynamicTarget); ok {
			lt.dynamic = d
		} else {
			lt.recv = rv
			lt.methods = methodsOf(rv.Type())
		}
	}
	if key != nil {
		s.mu.Lock()
		if other := s.targets[key]; other != nil {
			s.mu.Unlock()
			other.addRef()
			return other, nil
		}
		lt.key = key
		s.targets[key] = lt
		s.mu.Unlock()
	}
	return lt, nil
}

func (lt *localTarget) addRef() {
	lt.mu.Lock()
	lt.refs++
	lt.mu.Unlock()
}

// release drops a reference; the last one unregisters and disposes the target.
func (lt *localTarget) release() {
	lt.mu.Lock()
	lt.refs--
	last := lt.refs == 0
	lt.mu.Unlock()
	if !last {
		return
	}
	if lt.key != nil {
		lt.s.mu.Lock()
		if lt.s.targets[lt.key] == lt {
			delete(lt.s.targets, lt.key)
		}
		lt.s.mu.Unlock()
	}
	if d, ok := lt.val.(Disposer); ok {
		d.Dispose()
	}
}

// targetHook is a reference to a local target.
type targetHook struct{ lt *localTarget }

func (t *targetHook) session() *Session { return t.lt.s }

func (t *targetHook) dup() hook {
	t.lt.addRef()
	return t
}

func (t *targetHook) dispose() { t.lt.release() }

func (t *targetHook) whenSettled(cb func(any, error)) { cb(&Stub{h: t, borrowed: true}, nil) }

// call queues the call on the target. Promises in args are awaited first; calls then start in the
// order they were queued (E-order).
func (t *targetHook) call(path []any, args []any, isCall bool) hook {
	lt := t.lt
	s := lt.s
	base := context.Background()
	if s != nil {
		base = s.ctx
		s.mu.Lock()
		if s.pending >= s.lim.MaxPendingCalls {
			s.mu.Unlock()
			disposeValue(args)
			return errorHook{RangeError("too many calls in progress (limit %d)", s.lim.MaxPendingCalls)}
		}
		s.pending++
		s.mu.Unlock()
	}
	lt.addRef()
	c := &localCall{lt: lt, path: path, isCall: isCall, ctx: callCtx{parent: base}, result: newPromiseHook(s)}
	c.result.onCancel = &c.ctx
	switch {
	case !isCall:
		lt.q.push(c)
	case hasPromises(args):
		awaitAll(args, c.start)
	default:
		c.args = args // without boxing args or making c.start a closure
		lt.q.push(c)
	}
	return c.result
}

// localCall is one call (or property read) on a local target, from queueing to its result.
type localCall struct {
	lt     *localTarget
	path   []any
	isCall bool
	args   []any // the arguments, promises resolved
	ctx    callCtx
	turn   turn
	result *promiseHook
}

// start queues the call once the promises among its arguments have resolved.
func (c *localCall) start(args any, err error) {
	if err != nil {
		c.finish(nil, err)
		return
	}
	c.args, _ = args.([]any)
	c.lt.q.push(c)
}

// run runs the call in its turn (c.turn).
func (c *localCall) run() {
	c.ctx.turn = &c.turn
	v, err := c.lt.invoke(&c.ctx, c.path, c.args, c.isCall)
	disposeList(c.args)
	s := c.lt.s
	if s == nil {
		c.finish(v, err)
		return
	}
	// Send the resolution from here unless more calls wait on this target, in which case the
	// writer goroutine collects the results of several calls in one write.
	s.holdFlush()
	c.finish(v, err)
	s.releaseFlush(!c.lt.q.hasMore())
}

// finish settles the result and releases what the call held.
func (c *localCall) finish(v any, err error) {
	c.ctx.cancel()
	c.lt.release()
	if s := c.lt.s; s != nil {
		s.mu.Lock()
		s.pending--
		s.mu.Unlock()
	}
	c.result.resolveWith(v, err)
}

// invoke runs one call or property read on the target; the result is a canonical value owned by
// the caller.
func (lt *localTarget) invoke(ctx context.Context, path []any, args []any, isCall bool) (v any, err error) {
	defer func() {
		if p := recover(); p != nil {
			lt.logger().Error("capnweb: handler panicked", "panic", p, "path", pathString(path), "stack", string(debug.Stack()))
			v, err = nil, &Error{Name: "Error", Message: "internal error"}
		}
	}()
	if len(path) == 0 {
		if !isCall {
			lt.addRef()
			return &Stub{h: &targetHook{lt: lt}}, nil
		}
		if !lt.fn.IsValid() {
			return nil, TypeError("'' is not a function.")
		}
		return callFunc(ctx, lt.s, lt.fn, reflect.Value{}, funcInfoOf(lt.fn.Type()), args)
	}
	name, _ := path[0].(string)
	rest := path[1:]
	var prop any
	switch {
	case lt.dynamic != nil && len(rest) == 0 && isCall:
		res, err := lt.dynamic.CallMethod(ctx, name, args)
		if err != nil {
			return nil, err
		}
		return canonicalize(lt.s, res)
	case lt.dynamic != nil:
		res, err := lt.dynamic.GetProperty(ctx, name)
		if err != nil {
			return nil, err
		}
		if prop, err = canonicalize(lt.s, res); err != nil {
			return nil, err
		}
	default:
		m := lt.methods[name]
		if name == "" || blockedMember(name) {
			m = nil
		}
		switch {
		case len(rest) == 0 && isCall:
			if m == nil {
				return nil, TypeError("'%s' is not a function.", pathString(path))
			}
			return callFunc(ctx, lt.s, m.fn, lt.recv, m.fi, args)
		case m == nil:
			prop = Undefined
		case m.getter:
			if prop, err = callFunc(ctx, lt.s, m.fn, lt.recv, m.fi, nil); err != nil {
				return nil, err
			}
		default:
			bound, err := newLocalTarget(nil, lt.recv.Method(m.index).Interface())
			if err != nil {
				return nil, err
			}
			bound.s = lt.s
			prop = &Stub{h: &targetHook{lt: bound}}
		}
	}
	res, err := applyToValue(prop, rest, args, isCall)
	disposeValue(prop)
	return res, err
}

func (lt *localTarget) logger() *slog.Logger {
	if lt.s != nil {
		return lt.s.log
	}
	return slog.Default()
}

// methodInfo describes one exported method of a target type.
type methodInfo struct {
	index  int
	fn     reflect.Value // the method as a func taking the receiver first
	fi     *funcInfo
	getter bool // no parameters and a result: a property read runs it
}

// funcInfo describes how to call a Go func from the protocol.
type funcInfo struct {
	hasCtx    bool
	params    []reflect.Type
	variadic  bool
	hasResult bool
	hasErr    bool
}

var (
	methodCache sync.Map // reflect.Type -> map[string]*methodInfo
	funcCache   sync.Map // reflect.Type -> *funcInfo
	ctxType     = reflect.TypeFor[context.Context]()
	errType     = reflect.TypeFor[error]()
)

// methodsOf returns the RPC methods of a type keyed by their JavaScript name. Methods promoted
// from an embedded field are left out unless that field is itself a target, so that embedding
// e.g. a sync.Mutex does not expose Lock to the peer.
func methodsOf(t reflect.Type) map[string]*methodInfo {
	if m, ok := methodCache.Load(t); ok {
		return m.(map[string]*methodInfo)
	}
	hidden := promotedMethods(t)
	out := map[string]*methodInfo{}
	for i := range t.NumMethod() {
		m := t.Method(i)
		if !m.IsExported() || m.Name == "Dispose" || m.Name == "CallsInline" || hidden[m.Name] {
			continue
		}
		fi := analyzeFunc(m.Type, 1) // skip the receiver
		getter := len(fi.params) == 0 && !fi.variadic && fi.hasResult
		out[jsName(m.Name)] = &methodInfo{index: i, fn: m.Func, fi: fi, getter: getter}
	}
	methodCache.Store(t, out)
	return out
}

// promotedMethods lists the methods a struct type (or pointer to one) gets from embedded
// fields that are not targets.
func promotedMethods(t reflect.Type) map[string]bool {
	st := t
	if st.Kind() == reflect.Pointer {
		st = st.Elem()
	}
	hidden := map[string]bool{}
	if st.Kind() != reflect.Struct {
		return hidden
	}
	targetType := reflect.TypeFor[target]()
	for i := range st.NumField() {
		f := st.Field(i)
		if !f.Anonymous || f.Type.Implements(targetType) || reflect.PointerTo(f.Type).Implements(targetType) {
			continue
		}
		for _, ft := range []reflect.Type{f.Type, reflect.PointerTo(f.Type)} {
			for j := range ft.NumMethod() {
				hidden[ft.Method(j).Name] = true
			}
		}
	}
	return hidden
}

// jsName converts a Go method name to the JavaScript convention: "MakeCounter" -> "makeCounter",
// "ID" -> "id", "HTTPGet" -> "httpGet".
func jsName(name string) string {
	runes := []rune(name)
	n := 0
	for n < len(runes) && unicode.IsUpper(runes[n]) {
		n++
	}
	switch {
	case n == 0:
		return name
	case n == 1 || n == len(runes):
	default:
		n-- // keep the capital that starts the next word
	}
	for i := range n {
		runes[i] = unicode.ToLower(runes[i])
	}
	return string(runes)
}

// funcInfoOf analyses a func type (a func value used as a target), with caching.
func funcInfoOf(t reflect.Type) *funcInfo {
	if fi, ok := funcCache.Load(t); ok {
		return fi.(*funcInfo)
	}
	fi := analyzeFunc(t, 0)
	funcCache.Store(t, fi)
	return fi
}

// analyzeFunc describes a func type whose parameters start at index first.
func analyzeFunc(t reflect.Type, first int) *funcInfo {
	fi := &funcInfo{variadic: t.IsVariadic()}
	for i := first; i < t.NumIn(); i++ {
		pt := t.In(i)
		if i == first && pt == ctxType {
			fi.hasCtx = true
			continue
		}
		fi.params = append(fi.params, pt)
	}
	switch t.NumOut() {
	case 1:
		if t.Out(0) == errType {
			fi.hasErr = true
		} else {
			fi.hasResult = true
		}
	case 2:
		fi.hasResult = true
		fi.hasErr = t.Out(1) == errType
	}
	return fi
}

// callFunc converts args to fn's parameter types, calls it (with recv first, if valid) and
// canonicalizes the result. Missing arguments are zero values; extra arguments are ignored, as
// in JavaScript.
func callFunc(ctx context.Context, s *Session, fn, recv reflect.Value, fi *funcInfo, args []any) (any, error) {
	var small [6]reflect.Value
	in := small[:0]
	if recv.IsValid() {
		in = append(in, recv)
	}
	if fi.hasCtx {
		in = append(in, reflect.ValueOf(ctx))
	}
	for i, pt := range fi.params {
		if fi.variadic && i == len(fi.params)-1 {
			for j := i; j < len(args); j++ {
				v := reflect.New(pt.Elem()).Elem()
				if err := assign(v, args[j]); err != nil {
					return nil, TypeError("argument %d: %v", j+1, err)
				}
				in = append(in, v)
			}
			break
		}
		v := reflect.New(pt).Elem()
		var a any = Undefined
		if i < len(args) {
			a = args[i]
		}
		if err := assign(v, a); err != nil {
			return nil, TypeError("argument %d: %v", i+1, err)
		}
		in = append(in, v)
	}
	out := fn.Call(in)
	if fi.hasErr {
		if e := out[len(out)-1]; !e.IsNil() {
			return nil, e.Interface().(error)
		}
	}
	if !fi.hasResult {
		return Undefined, nil
	}
	return canonicalize(s, out[0].Interface())
}

// callQueue runs the calls of one target one after another in arrival order. A call holds the
// queue until it returns, awaits a promise, or calls Unblock.
type callQueue struct {
	mu      sync.Mutex
	items   []*localCall // items[head:] wait
	head    int
	running bool
}

// turn is a running call's hold on its queue.
type turn struct {
	q      *callQueue
	state  atomic.Int32            // 0 holding, 1 released early, 2 finished
	reader atomic.Pointer[Session] // set while the call runs on this session's read loop
}

type turnKey struct{}

func (q *callQueue) push(c *localCall) {
	q.mu.Lock()
	if len(q.items) == cap(q.items) && q.head > 0 { // move the waiting calls to the front
		n := copy(q.items, q.items[q.head:])
		clear(q.items[n:])
		q.items, q.head = q.items[:n], 0
	}
	q.items = append(q.items, c)
	start := !q.running
	q.running = true
	q.mu.Unlock()
	if start && !(c.lt.inline && c.lt.s != nil && c.lt.s.queueInline(q)) {
		goWork(q.run)
	}
}

// hasMore reports whether calls are waiting in the queue.
func (q *callQueue) hasMore() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.head < len(q.items)
}

// stopIfEmptyLocked marks the queue as not running when no call waits, so that the next push
// starts it, and reports whether it did; q.mu must be held.
func (q *callQueue) stopIfEmptyLocked() bool {
	if q.head != len(q.items) {
		return false
	}
	q.items, q.head = q.items[:0], 0 // reuse the array
	q.running = false
	return true
}

// run runs the queue's calls on a pooled goroutine.
func (q *callQueue) run() { q.runOn(nil) }

// runOn runs the queue's calls one after another until none waits or one gives up its turn
// early. With a session, it runs on that session's read loop, and reports whether it still does
// when it returns: a call that hands the reading to a new goroutine (leaveReader) goes on as
// on a pooled goroutine.
func (q *callQueue) runOn(reader *Session) (stillReading bool) {
	for {
		q.mu.Lock()
		if q.stopIfEmptyLocked() {
			q.mu.Unlock()
			return reader != nil
		}
		c := q.items[q.head]
		q.items[q.head] = nil
		q.head++
		q.mu.Unlock()
		c.turn.q = q
		if reader != nil {
			c.turn.reader.Store(reader)
		}
		c.run()
		if reader != nil && c.turn.reader.Swap(nil) == nil {
			reader = nil // the call handed the reading over
		}
		if !c.turn.state.CompareAndSwap(0, 2) {
			return reader != nil // released early: another goroutine runs the rest of the queue
		}
	}
}

// leaveReader hands the session's reading to a new goroutine if the call runs on the read loop,
// so that it may wait for the peer.
func (t *turn) leaveReader() {
	if s := t.reader.Swap(nil); s != nil {
		s.handOverReading()
	}
}

// release gives up the turn early: the queue's next call starts on another worker, or, when
// none waits, the queue stops running and the next push starts it (a worker woken only to find
// the queue empty would cost a goroutine hand-over per call).
func (t *turn) release() {
	t.leaveReader()
	if !t.state.CompareAndSwap(0, 1) {
		return
	}
	q := t.q
	q.mu.Lock()
	stopped := q.stopIfEmptyLocked()
	q.mu.Unlock()
	if !stopped {
		goWork(q.run)
	}
}

// Unblock lets the next queued call on the handler's target start while this handler goes on.
// Await does this implicitly. Use it before blocking on anything else for long. It is a no-op
// outside a handler.
func Unblock(ctx context.Context) { unblock(ctx) }

func unblock(ctx context.Context) {
	if t, ok := ctx.Value(turnKey{}).(*turn); ok {
		t.release()
	}
}

// leaveReadLoop hands the session's reading to a new goroutine if ctx is a handler's running on
// the read loop, keeping the handler's turn: call it before waiting for the peer.
func leaveReadLoop(ctx context.Context) {
	if t, ok := ctx.Value(turnKey{}).(*turn); ok {
		t.leaveReader()
	}
}
