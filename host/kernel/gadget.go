package kernel

import (
	"context"
	"maps"
	"slices"
	"strings"

	"atelier/capnweb"
	"atelier/host/runtime/wit"
	"atelier/host/runtime/wit/tsdecl"
	"atelier/host/store"
)

// Gadget is a gadget as a Cap'n Web object (docs/api.md, "Gadget"). It is resolved by name on
// first use and by id after that, so a renamed gadget keeps its stubs.
type Gadget struct {
	capnweb.Target
	w    *Workspace
	name string
	id   store.GadgetID // "" until resolved
}

// enter runs fn with the gadget's current record once the caller's role includes need and
// (for an agent) the gadget is in its scope.
func (g *Gadget) enter(ctx context.Context, need store.Role, what string, fn func(ov *overseer, rec store.Gadget) error) error {
	return g.w.enter(ctx, need, what, func(ov *overseer) error {
		var rec store.Gadget
		var err error
		if g.id == "" {
			rec, err = ov.gadgetByName(g.name)
		} else {
			rec, err = ov.gadget(g.id)
		}
		if err != nil {
			return err
		}
		if err := g.w.p.checkGadget(g.w.id, rec.Name); err != nil {
			return err
		}
		if g.id == "" {
			g.id = rec.ID // calls on an unresolved target run one at a time: no race
		}
		return fn(ov, rec)
	})
}

// Info describes the gadget.
func (g *Gadget) Info(ctx context.Context) (info GadgetInfo, err error) {
	err = g.enter(ctx, store.RoleUse, "info", func(ov *overseer, rec store.Gadget) error {
		info = ov.infoOf(rec)
		return nil
	})
	return info, err
}

// Versions lists the gadget's code versions.
func (g *Gadget) Versions(ctx context.Context) (vs []store.Version, err error) {
	err = g.enter(ctx, store.RoleUse, "versions", func(_ *overseer, rec store.Gadget) error {
		vs = rec.Versions
		return nil
	})
	return vs, err
}

// Deploy makes code (as for Workspace.CreateGadget: a component or a JS gadget's sources) the
// new current version, keeping the state; grants stay unchanged when omitted. client, when
// given, is the new version's UI script ("" for none; see Workspace.CreateGadget); without it
// the version keeps the current UI.
func (g *Gadget) Deploy(ctx context.Context, code any, grants []string, client *string) (info GadgetInfo, err error) {
	bin, client, err := g.w.k.readUpload(code, client)
	if err != nil {
		return info, wrapErr(err, "deploy %s", g.name)
	}
	err = g.enter(ctx, store.RoleBuild, "deploy", func(ov *overseer, rec store.Gadget) error {
		rec, err := ov.deploy(ctx, g.w.p, rec.ID, bin, client, grants, "")
		info = ov.infoOf(rec)
		return err
	})
	return info, wrapErr(err, "deploy %s", g.name)
}

// Rollback makes an earlier version current again.
func (g *Gadget) Rollback(ctx context.Context, version int) (info GadgetInfo, err error) {
	err = g.enter(ctx, store.RoleBuild, "rollback", func(ov *overseer, rec store.Gadget) error {
		rec, err := ov.rollback(ctx, g.w.p, rec.ID, version)
		info = ov.infoOf(rec)
		return err
	})
	return info, wrapErr(err, "roll back %s", g.name)
}

// Rename renames the gadget.
func (g *Gadget) Rename(ctx context.Context, name string) error {
	if err := validName("gadget", name); err != nil {
		return err
	}
	return g.enter(ctx, store.RoleBuild, "rename", func(ov *overseer, rec store.Gadget) error {
		if err := g.w.p.checkGadget(g.w.id, name); err != nil {
			return err
		}
		if _, err := ov.renameGadget(ctx, g.w.p, rec.ID, name); err != nil {
			return err
		}
		g.w.k.metrics.renamed(rec.ID, name)
		return nil
	})
}

// Delete deletes the gadget and its state.
func (g *Gadget) Delete(ctx context.Context) error {
	return g.enter(ctx, store.RoleBuild, "delete", func(ov *overseer, rec store.Gadget) error {
		if err := ov.deleteGadget(ctx, g.w.p, rec.ID); err != nil {
			return err
		}
		g.w.k.metrics.forget(g.w.id, rec.ID)
		return nil
	})
}

// Inspect returns the lines of the current version's imports and exports, each type under
// the name the component gives it (runtime.Component.Describe).
func (g *Gadget) Inspect(ctx context.Context) (lines []string, err error) {
	err = g.enter(ctx, store.RoleUse, "inspect", func(ov *overseer, rec store.Gadget) error {
		a, err := ov.actor(ctx, rec.ID)
		if err != nil {
			return err
		}
		if a.prog.comp != nil {
			code, err := g.w.k.st.Code(ctx, a.sha)
			if err != nil {
				return wrapErr(err, "inspect gadget %s", rec.Name)
			}
			// A component Wasmtime runs but witdecode cannot read is described by its
			// structural types: Describe returns those lines with the error.
			d, _ := a.prog.comp.Describe(code)
			lines = d.Lines()
		} else {
			lines = jsAudit(a.prog.files, slices.Sorted(maps.Keys(a.exports)))
		}
		return nil
	})
	return lines, err
}

// Subscribe calls cb({topic, payload}) for each event the gadget publishes.
func (g *Gadget) Subscribe(ctx context.Context, cb *capnweb.Stub) (*Subscription, error) {
	return g.subscribe(ctx, store.RoleUse, "subscribe", eventsTopic, cb)
}

// Logs calls cb({gadget, stream, level, text, time}) for each of the gadget's console lines.
func (g *Gadget) Logs(ctx context.Context, cb *capnweb.Stub) (*Subscription, error) {
	return g.subscribe(ctx, store.RoleBuild, "logs", consoleTopic, cb)
}

func (g *Gadget) subscribe(ctx context.Context, need store.Role, what string, topic func(store.WorkspaceID, store.GadgetID) string, cb *capnweb.Stub) (*Subscription, error) {
	var sub *Subscription
	err := g.enter(ctx, need, what, func(_ *overseer, rec store.Gadget) error {
		var err error
		sub, err = g.w.subscribe(ctx, need, what, topic(g.w.id, rec.ID), rec, cb)
		return err
	})
	return sub, err
}

// Connect returns a stub whose methods are the gadget's exported functions in camelCase.
func (g *Gadget) Connect(ctx context.Context) (*Connection, error) {
	var c *Connection
	err := g.enter(ctx, store.RoleUse, "connect", func(ov *overseer, rec store.Gadget) error {
		a, err := ov.actor(ctx, rec.ID)
		if err != nil {
			return err
		}
		// The connection gets its own resolved Gadget: it runs calls concurrently with g's.
		c = newConnection(&Gadget{w: g.w, name: rec.Name, id: rec.ID}, a.exports)
		return nil
	})
	return c, err
}

// Connection is a gadget's RPC surface: a call on it checks the caller's access, then runs on
// the gadget's actor.
type Connection struct {
	g     *Gadget
	funcs map[string]exportFunc // RPC method name -> the export
	// props maps an exported interface's (or resource's) property name to its functions.
	props map[string]*Connection
}

// exportFunc is an exported function: the name the runtime calls it by, and its type (nil
// for a JS gadget's method, which takes any arguments).
type exportFunc struct {
	name  string
	ft    *wit.FuncType
	scope string // the exported interface holding it ("" at top level): its resources' scope
	res   bool   // it takes or returns a resource
}

// checkArity refuses a call with the wrong number of arguments before it reaches the runtime.
func (f exportFunc) checkArity(method string, args []any) error {
	if f.ft == nil {
		return nil
	}
	return checkArity(method, len(f.ft.Params), f.ft, args)
}

// checkJSON is checkArity for callers that carry JSON only (Code Mode, bindings, schedules),
// which cannot hold a resource.
func (f exportFunc) checkJSON(method string, args []any) error {
	if f.res {
		return fail(CodeFailedPrecondition, "%s takes or returns a resource (%s), which only a connect() stub can hold; Code Mode, bindings and schedules carry JSON only", method, f.ft)
	}
	return f.checkArity(method, args)
}

// checkArity refuses args unless there are want of them (the arguments of ft a caller passes).
func checkArity(method string, want int, ft *wit.FuncType, args []any) error {
	if len(args) != want {
		noun := "arguments"
		if want == 1 {
			noun = "argument"
		}
		return fail(CodeInvalidArgument, "%s takes %d %s (%s), got %d", method, want, noun, ft, len(args))
	}
	return nil
}

var _ capnweb.DynamicTarget = (*Connection)(nil)

// newConnection builds the surface of exports (RPC names "a.b.fn", see exportNames): the last
// part of a name is a method, the parts before it are properties.
func newConnection(g *Gadget, exports map[string]exportFunc) *Connection {
	c := &Connection{g: g, funcs: map[string]exportFunc{}, props: map[string]*Connection{}}
	for name, fn := range exports {
		at := c
		parts := strings.Split(name, ".")
		for _, p := range parts[:len(parts)-1] {
			sub := at.props[p]
			if sub == nil {
				sub = &Connection{g: g, funcs: map[string]exportFunc{}, props: map[string]*Connection{}}
				at.props[p] = sub
			}
			at = sub
		}
		at.funcs[parts[len(parts)-1]] = fn
	}
	return c
}

// exportNames maps the RPC names of a component's exports to the functions: "fn" at top
// level, "iface.fn" inside an exported interface; a resource's constructor is "counter.new"
// and its static functions "counter.fn" (prefixed by the interface likewise). It also returns
// the exported resources by resourceKey, whose [method]s are the methods of their stubs.
func exportNames(items []wit.Item) (map[string]exportFunc, map[string]*resourceType) {
	out := map[string]exportFunc{}
	types := map[string]*resourceType{}
	add := func(scope, prefix, call string, f wit.Item) {
		fn := exportFunc{name: call, ft: f.Func, scope: scope, res: wit.FuncHasResource(f.Func)}
		res, member, method := tsdecl.Member(f.Name)
		switch {
		case method:
			key := resourceKey(scope, res)
			rt := types[key]
			if rt == nil {
				rt = &resourceType{key: key, name: res, methods: map[string]exportFunc{}}
				types[key] = rt
			}
			if len(f.Func.Params) > 0 { // self: always, in a valid component
				rt.methods[member] = fn
			}
		case res != "":
			out[prefix+tsdecl.Name(res)+"."+member] = fn
		default:
			out[prefix+member] = fn
		}
	}
	for _, it := range items {
		switch it.Kind {
		case wit.ItemFunc:
			add("", "", it.Name, it)
		case wit.ItemInstance:
			for _, f := range it.Exports {
				if f.Kind == wit.ItemFunc {
					add(it.Name, tsdecl.Name(it.Name)+".", it.Name+"#"+f.Name, f)
				}
			}
		}
	}
	return out, types
}

// CallMethod implements capnweb.DynamicTarget. Once the call has run in the instance, the
// next call on this connection may start while this one's reply waits at the output gate.
func (c *Connection) CallMethod(ctx context.Context, method string, args []any) (any, error) {
	fn, ok := c.funcs[method]
	if !ok {
		return nil, &capnweb.Error{Name: "TypeError", Message: "gadget " + c.g.name + ` has no exported function "` + method + `"`, Props: map[string]any{"code": string(CodeNotFound)}}
	}
	if err := fn.checkArity(method, args); err != nil {
		return nil, wrapErr(err, "gadget %s", c.g.name)
	}
	return c.g.stubCall(ctx, method, fn, nil, args)
}

// GetProperty implements capnweb.DynamicTarget: exported interfaces and resources (their
// constructors and static functions) are properties.
func (c *Connection) GetProperty(_ context.Context, name string) (any, error) {
	if s, ok := c.props[name]; ok {
		return s, nil
	}
	return capnweb.Undefined, nil
}
