package kernel

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"atelier/capnweb"
	"atelier/host/runtime/wit"
	"atelier/host/store"
)

// Resources a gadget exports reach Cap'n Web clients as stubs (docs/api.md, "Resources"): a
// call whose result holds an own<R> returns a *Resource in its place, whose methods are R's
// [method]s. Passing the stub back where a function takes borrow<R> lends it for the call;
// where it takes own<R>, moves it into the guest. Disposing the stub drops the resource.

var (
	errResourceRetired = fail(CodeFailedPrecondition,
		"the gadget's instance that made this resource was retired (a trap, deadline or memory overrun); make a new one")
	errResourceRestarted = fail(CodeFailedPrecondition,
		"the gadget restarted since this resource was made (it was idle, redeployed or stopped); make a new one")
)

// resourceType is a resource a component exports.
type resourceType struct {
	key     string                // resourceKey: which resource this is
	name    string                // its WIT name ("counter")
	methods map[string]exportFunc // RPC name ("increment") -> its [method] export
}

// resourceKey names resource name (as WIT spells it) exported at top level (scope "") or by
// the exported interface scope.
func resourceKey(scope, name string) string { return scope + "#" + name }

// mapResources returns v, a value of type t, with each value at an own<R> or borrow<R>
// position replaced by f's result. Parts of v whose type holds no resource, or whose shape
// does not fit t (lowering reports those), are kept as they are.
func mapResources(t *wit.Type, v any, f func(t *wit.Type, v any) (any, error)) (any, error) {
	if !wit.HasResource(t) || v == nil {
		return v, nil
	}
	seq := func(elem func(int) *wit.Type) (any, error) {
		l, ok := v.([]any)
		if !ok {
			return v, nil
		}
		out := make([]any, len(l))
		for i, x := range l {
			var err error
			if out[i], err = mapResources(elem(i), x, f); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	// field maps the member name of the object v with type ft.
	field := func(name string, ft *wit.Type) (any, error) { return mapMember(v, name, ft, f) }
	isObj := isObject(v)
	switch t.Kind {
	case wit.Own, wit.Borrow:
		return f(t, v)
	case wit.Option:
		if t.Elem.Kind == wit.Option && isObj { // option<option<T>>: {"some": inner}
			return field("some", t.Elem)
		}
		return mapResources(t.Elem, v, f)
	case wit.List:
		return seq(func(int) *wit.Type { return t.Elem })
	case wit.Tuple:
		if l, ok := v.([]any); !ok || len(l) != len(t.Elems) {
			return v, nil
		}
		return seq(func(i int) *wit.Type { return t.Elems[i] })
	case wit.Record:
		for _, fl := range t.Fields {
			if !isObj {
				break
			}
			var err error
			if v, err = field(fl.Name, fl.Type); err != nil {
				return nil, err
			}
		}
	case wit.Variant:
		x, _ := objectMember(v, "tag")
		if tag, _ := x.(string); isObj {
			for _, c := range t.Cases {
				if c.Name == tag && c.Type != nil {
					return field("val", c.Type)
				}
			}
		}
	case wit.Result:
		if isObj {
			if _, ok := objectMember(v, "ok"); ok {
				return field("ok", t.Ok)
			}
			return field("err", t.Err)
		}
	}
	return v, nil
}

// isObject reports whether v is an object: a map, or a capnweb.Object (from Cap'n Web, or a
// record from wit.Lift).
func isObject(v any) bool {
	switch v.(type) {
	case map[string]any, capnweb.Object:
		return true
	}
	return false
}

// objectMember returns member name of the object v (see isObject), and whether it is there.
func objectMember(v any, name string) (any, bool) {
	switch o := v.(type) {
	case map[string]any:
		x, ok := o[name]
		return x, ok
	case capnweb.Object:
		return o.Get(name)
	}
	return nil, false
}

// mapMember returns the object v with its member name, of type ft, mapped by mapResources
// with f: a copy of v when that member is there, v itself otherwise. A capnweb.Object keeps
// its key order.
func mapMember(v any, name string, ft *wit.Type, f func(t *wit.Type, v any) (any, error)) (any, error) {
	switch o := v.(type) {
	case map[string]any:
		x, ok := o[name]
		if !ok {
			return v, nil
		}
		y, err := mapResources(ft, x, f)
		if err != nil {
			return nil, err
		}
		o = maps.Clone(o)
		o[name] = y
		return o, nil
	case capnweb.Object:
		var out capnweb.Object
		for i, fl := range o {
			if fl.Key != name {
				continue
			}
			y, err := mapResources(ft, fl.Value, f)
			if err != nil {
				return nil, err
			}
			if out == nil {
				out = slices.Clone(o)
			}
			out[i].Value = y
		}
		if out != nil {
			return out, nil
		}
	}
	return v, nil
}

// Resource is a resource of a gadget's instance as a Cap'n Web object: its methods are the
// resource's [method]s in camelCase; disposing it drops the resource in the guest.
type Resource struct {
	g   *Gadget // resolved: calls check the caller's role and scope like a connection's
	typ *resourceType
	a   *actor     // the actor whose instance made it
	gen uint64     // which of a's instances made it
	h   wit.Handle // its handle in that instance

	// state is where the resource is; guarded by a's turn.
	state resourceState
	// disposed is set once Dispose has run.
	disposed atomic.Bool
}

// resourceState says whether a resource is still the stub's.
type resourceState uint8

const (
	resourceLive    resourceState = iota
	resourceMoved                 // passed as an own<R> argument: the guest has it
	resourceDropped               // disposed
)

var (
	_ capnweb.DynamicTarget = (*Resource)(nil)
	_ capnweb.Disposer      = (*Resource)(nil)
)

// newResource wraps handle h, which a's live instance gen returned as an own<R> of type typ;
// the caller holds a's turn.
func (a *actor) newResource(g *Gadget, typ *resourceType, gen uint64, h wit.Handle) *Resource {
	r := &Resource{g: g, typ: typ, a: a, gen: gen, h: h}
	a.comp.live++
	return r
}

// resourceType returns the exported resource of that key (a type without methods when the
// component exports none for it).
func (a *actor) resourceType(key, name string) *resourceType {
	if rt := a.resources[key]; rt != nil {
		return rt
	}
	return &resourceType{key: key, name: name}
}

// CallMethod implements capnweb.DynamicTarget: the resource's methods.
func (r *Resource) CallMethod(ctx context.Context, method string, args []any) (any, error) {
	fn, ok := r.typ.methods[method]
	if !ok {
		return nil, &capnweb.Error{Name: "TypeError", Message: "resource " + r.typ.name + " of gadget " + r.g.name + ` has no method "` + method + `"`, Props: map[string]any{"code": string(CodeNotFound)}}
	}
	what := r.typ.name + "." + method
	if err := checkArity(what, len(fn.ft.Params)-1, fn.ft, args); err != nil {
		return nil, wrapErr(err, "gadget %s", r.g.name)
	}
	return r.g.stubCall(ctx, what, fn, r, append([]any{r}, args...))
}

// GetProperty implements capnweb.DynamicTarget: a resource has no properties.
func (r *Resource) GetProperty(context.Context, string) (any, error) {
	return capnweb.Undefined, nil
}

// Dispose implements capnweb.Disposer: the resource is dropped in the guest (its destructor
// runs) on the actor, unless it was moved into the guest or its instance is gone. It does not
// check the caller's role: dropping only gives up what the caller holds.
func (r *Resource) Dispose() {
	if r.disposed.Swap(true) {
		return
	}
	go r.drop()
}

// drop drops the resource on its actor like a call (writes and events of the destructor are
// committed and published the same way), without counting it in the call metrics.
func (r *Resource) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), r.a.ov.k.callTimeout())
	defer cancel()
	rep, err := r.a.run(ctx, "", nil, &rpcCall{drop: r})
	if err == nil {
		_, err = rep.release()
	}
	if err != nil && !errors.Is(err, errStopped) {
		r.a.ov.k.log.Warn("drop resource", "gadget", r.g.name, "resource", r.typ.name, "err", err)
	}
}

// usable checks, under actor a's turn, that the resource belongs to a's live instance and is
// still the stub's.
func (r *Resource) usable(a *actor) error {
	if r.a != a {
		return errResourceRestarted
	}
	if err := a.comp.current(r.gen); err != nil {
		return err
	}
	switch r.state {
	case resourceMoved:
		return fail(CodeFailedPrecondition, "this %s was moved into the gadget by an earlier call that took ownership of it", r.typ.name)
	case resourceDropped:
		return fail(CodeFailedPrecondition, "this %s was disposed", r.typ.name)
	}
	return nil
}

// rpcCall is a call from a stub (a connection's or a resource's) as it runs on the actor: its
// resource arguments are checked and replaced by their handles under the actor's turn, and the
// resources in its result are wrapped there, where the instance that made them is known. With
// drop set, it drops that resource instead.
type rpcCall struct {
	g    *Gadget
	fn   exportFunc
	args []any // resources as *Resource
	drop *Resource
	// self is set for a resource's method: args[0] is the resource, which the caller did not
	// pass, so errors name the caller's arguments from args[1] on as args[0].
	self bool
}

// argPath names argument i of c as its caller counted it.
func (c *rpcCall) argPath(i int) string {
	if c.self {
		i--
	}
	return "args[" + strconv.Itoa(i) + "]"
}

// callerPaths renames the argument path of a conversion error of c as its caller counted the
// arguments.
func (c *rpcCall) callerPaths(err error) error {
	if err == nil || !c.self {
		return err // before ve, which escapes: every call would allocate it
	}
	var ve *wit.ValueError
	if !errors.As(err, &ve) || !strings.HasPrefix(ve.Path, "args[") {
		return err
	}
	end := strings.IndexByte(ve.Path, ']')
	i, convErr := strconv.Atoi(ve.Path[len("args["):max(end, len("args["))])
	if end < 0 || convErr != nil {
		return err
	}
	old := ve.Path[:end+1]
	return &renamedArgs{msg: strings.Replace(err.Error(), old+":", c.argPath(i)+":", 1), err: err}
}

// renamedArgs is err with its message counting a method's arguments as its caller did.
type renamedArgs struct {
	msg string
	err error
}

func (e *renamedArgs) Error() string { return e.msg }
func (e *renamedArgs) Unwrap() error { return e.err }

// invoke runs the call in a's instance; the caller holds a's turn.
func (c *rpcCall) invoke(ctx context.Context, a *actor) (any, error) {
	if r := c.drop; r != nil {
		if r.state != resourceLive || r.a != a || a.comp.current(r.gen) != nil {
			return nil, nil // moved into the guest, or its instance is gone
		}
		r.state = resourceDropped
		return nil, a.comp.drop(ctx, r.gen, r.h)
	}
	if !c.fn.res {
		res, err := a.exec.Call(ctx, c.fn.name, c.args...)
		return res, c.callerPaths(err)
	}
	args := make([]any, len(c.args))
	var moved []*Resource
	for i, p := range c.fn.ft.Params {
		var err error
		args[i], err = mapResources(p.Type, c.args[i], func(t *wit.Type, v any) (any, error) {
			r := v.(*Resource) // resolveArgs left nothing else at a resource position
			if err := r.usable(a); err != nil {
				return nil, err
			}
			if t.Kind == wit.Own {
				moved = append(moved, r)
			}
			return r.h, nil
		})
		if err != nil {
			return nil, wrapErr(err, "%s", c.argPath(i))
		}
	}
	res, err := a.exec.Call(ctx, c.fn.name, args...)
	err = c.callerPaths(err)
	// An own<R> argument is the guest's once the call is made, whatever its outcome.
	for _, r := range moved {
		if r.state == resourceLive {
			r.state = resourceMoved
			a.comp.live--
		}
	}
	if err != nil || !wit.HasResource(c.fn.ft.Result) {
		return res, err
	}
	rt := c.fn.ft.Result
	if rt.Kind == wit.Result { // unwrapped at the boundary: res is the ok payload
		rt = rt.Ok
	}
	gen := a.comp.gen
	return mapResources(rt, res, func(t *wit.Type, v any) (any, error) {
		h, ok := v.(wit.Handle)
		if !ok {
			return v, nil
		}
		return a.newResource(c.g, a.resourceType(resourceKey(c.fn.scope, t.Resource), t.Resource), gen, h), nil
	})
}

// stubCall runs a call from a stub (a connection's, or resource self's method with self as
// the first argument) of export fn: resource stubs among args are resolved, the caller's
// access is checked, and the call is queued on the gadget's actor. Calls of one stub reach
// the actor in the order Cap'n Web runs them (one at a time, each until it is queued there);
// only then may the next start, while this one's reply waits at the output gate.
func (g *Gadget) stubCall(ctx context.Context, method string, fn exportFunc, self *Resource, args []any) (any, error) {
	c := &rpcCall{g: g, fn: fn, args: args, self: self != nil}
	if fn.res {
		var err error
		if c.args, err = g.resolveArgs(c); err != nil {
			return nil, wrapErr(err, "gadget %s: %s", g.name, method)
		}
	}
	var r *reply
	err := g.enter(ctx, store.RoleUse, "call", func(ov *overseer, rec store.Gadget) error {
		a, err := ov.actor(ctx, rec.ID)
		if err != nil {
			return err
		}
		if self != nil && self.a != a {
			return errResourceRestarted
		}
		r, err = a.run(ctx, fn.name, nil, c)
		return err
	})
	if err == nil {
		if r.held() {
			capnweb.Unblock(ctx)
		}
		var res any
		if res, err = r.wait(); err == nil {
			return res, nil
		}
	}
	return nil, wrapErr(err, "gadget %s: %s", g.name, method)
}

// resolveArgs returns c's arguments with the stubs at resource positions replaced by their
// *Resource, refusing a stub that is not a resource of this gadget of the type the parameter
// wants.
func (g *Gadget) resolveArgs(c *rpcCall) ([]any, error) {
	fn, args := c.fn, c.args
	out := make([]any, len(args))
	for i, p := range fn.ft.Params {
		var err error
		out[i], err = mapResources(p.Type, args[i], func(t *wit.Type, v any) (any, error) {
			r, ok := v.(*Resource) // the resource whose method this is
			if !ok {
				var err error
				if r, err = resourceOf(t, v); err != nil {
					return nil, err
				}
			}
			if r.g.id != g.id {
				return nil, fail(CodeInvalidArgument, "this %s belongs to gadget %s, not to %s", r.typ.name, r.g.name, g.name)
			}
			if want := resourceKey(fn.scope, t.Resource); r.typ.key != want {
				return nil, fail(CodeInvalidArgument, "want a %s, got a %s", t, r.typ.name)
			}
			return r, nil
		})
		if err != nil {
			return nil, wrapErr(err, "%s", c.argPath(i))
		}
	}
	return out, nil
}

// resourceOf returns the resource behind stub v, passed where a function wants type t.
func resourceOf(t *wit.Type, v any) (*Resource, error) {
	s, ok := v.(*capnweb.Stub)
	if !ok {
		return nil, fail(CodeInvalidArgument, "want a %s stub, got %s", t, jsKind(v))
	}
	target, ok := s.LocalTarget()
	if !ok {
		return nil, fail(CodeInvalidArgument, "want a %s stub this server returned, got one of the caller's own objects", t)
	}
	r, ok := target.(*Resource)
	if !ok {
		return nil, fail(CodeInvalidArgument, "want a %s stub, got a stub of another kind of object", t)
	}
	if r.disposed.Load() {
		return nil, fail(CodeFailedPrecondition, "this %s was disposed", t)
	}
	return r, nil
}

// jsKind names the kind of a protocol value for error messages.
func jsKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case float64:
		return "a number"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any, capnweb.Object:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}
