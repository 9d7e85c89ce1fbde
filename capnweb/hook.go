package capnweb

import (
	"slices"
	"strconv"
	"sync"
)

// hook is the internal form of everything calls can be made on: a local Go target, a remote
// import, a local pending result or an error. Stubs and promises wrap hooks. Hook methods are
// never called while a session lock is held.
type hook interface {
	// call follows path from the hook's value and, if isCall, calls the result with args. It
	// returns a new hook (owned by the caller) for the outcome and takes ownership of args.
	call(path []any, args []any, isCall bool) hook
	// whenSettled runs cb once with the final value or error. The value is borrowed: cb must
	// dupValue whatever it keeps. For capability hooks the value is a borrowed *Stub.
	whenSettled(cb func(v any, err error))
	// dup adds a reference.
	dup() hook
	// dispose drops a reference.
	dispose()
	// session returns the session the hook belongs to, or nil.
	session() *Session
}

// promiseHook is a local pending result: a running call, a property read or an awaited value.
type promiseHook struct {
	s       *Session
	mu      sync.Mutex
	settled bool
	// delivering is set while settle runs the waiters: a waiter added meanwhile queues behind
	// them, so calls on the promise keep their order (E-order) across its settling.
	delivering bool
	val        any
	err        error
	waiters    []func(any, error)
	refs       int
	onCancel   *callCtx // the running call's context: cancelled if the promise is dropped unsettled
}

func newPromiseHook(s *Session) *promiseHook { return &promiseHook{s: s, refs: 1} }

// resolvedHook returns a settled promise owning v.
func resolvedHook(s *Session, v any, err error) *promiseHook {
	p := newPromiseHook(s)
	p.settled, p.val, p.err = true, v, err
	return p
}

func (p *promiseHook) session() *Session { return p.s }

// settle fixes the outcome (taking ownership of v) and runs the waiters in registration order.
func (p *promiseHook) settle(v any, err error) {
	p.mu.Lock()
	if p.settled {
		p.mu.Unlock()
		disposeValue(v)
		return
	}
	p.settled, p.val, p.err, p.onCancel = true, v, err, nil
	dead := p.refs <= 0
	deliver(&p.mu, &p.waiters, &p.delivering, v, err)
	p.mu.Unlock()
	if dead {
		disposeValue(v)
	}
}

// resolveWith settles the promise with v once every promise inside v has settled.
func (p *promiseHook) resolveWith(v any, err error) {
	if err != nil {
		disposeValue(v)
		p.settle(nil, err)
		return
	}
	if !hasPromises(v) {
		p.settle(v, nil) // without making p.settle a func value
		return
	}
	awaitAll(v, p.settle)
}

// outcome returns the outcome of a promise that has settled and delivered it to every waiter
// (v is borrowed, as whenSettled's), and whether it has.
func (p *promiseHook) outcome() (done bool, v any, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.settled || p.delivering {
		return false, nil, nil
	}
	return true, p.val, p.err
}

func (p *promiseHook) whenSettled(cb func(any, error)) {
	p.mu.Lock()
	if !p.settled || p.delivering {
		p.waiters = append(p.waiters, cb)
		p.mu.Unlock()
		return
	}
	v, err := p.val, p.err
	p.mu.Unlock()
	cb(v, err)
}

func (p *promiseHook) call(path []any, args []any, isCall bool) hook {
	return callWhenSettled(p.s, p, path, args, isCall)
}

// callWhenSettled returns a promise for calling (or reading) path on the value of h once h
// settles, applied locally; args are disposed if h fails.
func callWhenSettled(s *Session, h interface{ whenSettled(func(any, error)) }, path []any, args []any, isCall bool) hook {
	r := newPromiseHook(s)
	h.whenSettled(func(v any, err error) {
		if err != nil {
			disposeList(args)
			r.settle(nil, err)
			return
		}
		r.resolveWith(applyToValue(v, path, args, isCall))
	})
	return r
}

func (p *promiseHook) dup() hook {
	p.mu.Lock()
	p.refs++
	p.mu.Unlock()
	return p
}

func (p *promiseHook) dispose() {
	p.mu.Lock()
	p.refs--
	if p.refs != 0 {
		p.mu.Unlock()
		return
	}
	var v any
	var cancel *callCtx
	if p.settled {
		v, p.val = p.val, nil
	} else if len(p.waiters) == 0 {
		cancel = p.onCancel
	}
	p.mu.Unlock()
	disposeValue(v)
	if cancel != nil {
		cancel.cancel()
	}
}

// errorHook is a broken capability or a failed result: everything on it fails with err.
type errorHook struct{ err error }

func (e errorHook) call(_ []any, args []any, _ bool) hook {
	disposeList(args)
	return e
}
func (e errorHook) whenSettled(cb func(any, error)) { cb(nil, e.err) }
func (e errorHook) dup() hook                       { return e }
func (e errorHook) dispose()                        {}
func (e errorHook) session() *Session               { return nil }

// applyToValue follows path inside a settled value and, if isCall, calls what it finds. Stubs met
// on the way receive the rest of the path. The result is owned by the caller (a *Promise when the
// work continues elsewhere). It takes ownership of args.
func applyToValue(v any, path []any, args []any, isCall bool) (any, error) {
	cur := v
	for i, key := range path {
		if isTypedList(cur) {
			cur, _ = boxList(cur)
		}
		switch c := cur.(type) {
		case *Stub:
			h, err := c.hook()
			if err != nil {
				disposeList(args)
				return nil, err
			}
			return &Promise{h: h.call(path[i:], args, isCall)}, nil
		case map[string]any:
			name := keyName(key)
			next, found := c[name]
			if !found || blockedMember(name) {
				next = Undefined
			}
			cur = next
		case Object:
			name := keyName(key)
			next, found := c.Get(name)
			if !found || blockedMember(name) {
				next = Undefined
			}
			cur = next
		case []any:
			idx, ok := arrayIndex(key)
			if !ok || idx >= len(c) {
				cur = Undefined
			} else {
				cur = c[idx]
			}
		default:
			cur = Undefined
		}
	}
	if !isCall {
		return dupValue(cur), nil
	}
	if st, ok := cur.(*Stub); ok {
		h, err := st.hook()
		if err != nil {
			disposeList(args)
			return nil, err
		}
		return &Promise{h: h.call(nil, args, true)}, nil
	}
	disposeList(args)
	return nil, TypeError("'%s' is not a function.", pathString(path))
}

// keyName returns a property path element (a string or a number) as a property name.
func keyName(key any) string {
	if name, ok := key.(string); ok {
		return name
	}
	return strconv.FormatFloat(key.(float64), 'f', -1, 64)
}

// arrayIndex accepts a non-negative integer key, given as a number or a decimal string.
func arrayIndex(key any) (int, bool) {
	switch k := key.(type) {
	case float64:
		if k >= 0 && k == float64(int(k)) {
			return int(k), true
		}
	case string:
		n, err := strconv.Atoi(k)
		if err == nil && n >= 0 && strconv.Itoa(n) == k {
			return n, true
		}
	}
	return 0, false
}

// awaitAll waits for every promise inside v, then calls cb with a copy of v in which each promise
// is replaced by its value. It takes ownership of v; cb owns what it receives. The first
// rejection wins.
func awaitAll(v any, cb func(any, error)) {
	var ps []*Promise
	collectPromises(v, &ps)
	if len(ps) == 0 {
		cb(v, nil)
		return
	}
	var (
		mu        sync.Mutex
		results   = make([]any, len(ps))
		remaining = len(ps)
		firstErr  error
	)
	finish := func() {
		if firstErr != nil {
			disposeValue(v)
			for _, r := range results {
				disposeValue(r)
			}
			cb(nil, firstErr)
			return
		}
		next := 0
		out := replacePromises(v, results, &next)
		cb(out, nil)
	}
	for i, p := range ps {
		p.whenSettled(func(rv any, err error) {
			mu.Lock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
			} else {
				results[i] = dupValue(rv)
			}
			remaining--
			done := remaining == 0
			mu.Unlock()
			if done {
				finish()
			}
		})
	}
}

// hasPromises reports whether a canonical value contains a promise.
func hasPromises(v any) bool {
	switch v := v.(type) {
	case *Promise:
		return true
	case []any:
		return slices.ContainsFunc(v, hasPromises)
	case map[string]any:
		for _, e := range v {
			if hasPromises(e) {
				return true
			}
		}
	case Object:
		for _, f := range v {
			if hasPromises(f.Value) {
				return true
			}
		}
	case *Error:
		return v != nil && hasPromises(v.Props)
	}
	return false
}

func collectPromises(v any, out *[]*Promise) {
	switch v := v.(type) {
	case *Promise:
		*out = append(*out, v)
	case []any:
		for _, e := range v {
			collectPromises(e, out)
		}
	case map[string]any:
		for _, k := range sortedKeys(v) {
			collectPromises(v[k], out)
		}
	case Object:
		for _, f := range v {
			collectPromises(f.Value, out)
		}
	case *Error:
		if v != nil {
			collectPromises(v.Props, out)
		}
	}
}

// replacePromises rebuilds v with the promises (in collectPromises order) replaced by results,
// disposing each replaced promise.
func replacePromises(v any, results []any, next *int) any {
	switch v := v.(type) {
	case *Promise:
		r := results[*next]
		*next++
		v.Dispose()
		return r
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = replacePromises(e, results, next)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for _, k := range sortedKeys(v) {
			out[k] = replacePromises(v[k], results, next)
		}
		return out
	case Object:
		out := make(Object, len(v))
		for i, f := range v {
			out[i] = Field{Key: f.Key, Value: replacePromises(f.Value, results, next)}
		}
		return out
	case *Error:
		if v == nil || !hasCaps(v.Props) {
			return v
		}
		c := *v
		c.Props = replacePromises(v.Props, results, next).(map[string]any)
		return &c
	}
	return v
}

// deliver runs the waiters in *ws in registration order with v and err, with mu (held on
// entry and on return) unlocked while they run; *delivering is set meanwhile, so that a waiter
// added then is appended to *ws and runs after them (E-order across a settling).
func deliver(mu sync.Locker, ws *[]func(any, error), delivering *bool, v any, err error) {
	*delivering = true
	for len(*ws) > 0 {
		batch := *ws
		*ws = nil
		mu.Unlock()
		for _, w := range batch {
			w(v, err)
		}
		mu.Lock()
	}
	*delivering = false
}
