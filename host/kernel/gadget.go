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
// new current version, keeping the state; grants stay unchanged when omitted.
func (g *Gadget) Deploy(ctx context.Context, code any, grants []string) (info GadgetInfo, err error) {
	bin, client, err := g.w.k.normalizeCode(code)
	if err != nil {
		return info, wrapErr(err, "deploy %s", g.name)
	}
	err = g.enter(ctx, store.RoleBuild, "deploy", func(ov *overseer, rec store.Gadget) error {
		rec, err := ov.deploy(ctx, g.w.p, rec.ID, bin, client, grants)
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

// Inspect returns the audit lines of the current version's imports and exports.
func (g *Gadget) Inspect(ctx context.Context) (lines []string, err error) {
	err = g.enter(ctx, store.RoleUse, "inspect", func(ov *overseer, rec store.Gadget) error {
		a, err := ov.actor(ctx, rec.ID)
		if err != nil {
			return err
		}
		if a.prog.comp != nil {
			lines = a.prog.comp.Audit().Lines()
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
	// ifaces maps an exported interface's property name to its functions.
	ifaces map[string]*Connection
}

// exportFunc is an exported function: the name the runtime calls it by, and its type (nil
// for a JS gadget's method, which takes any arguments).
type exportFunc struct {
	name string
	ft   *wit.FuncType
}

// checkArity refuses a call with the wrong number of arguments before it reaches the runtime.
func (f exportFunc) checkArity(method string, args []any) error {
	if f.ft == nil {
		return nil
	}
	if want := len(f.ft.Params); len(args) != want {
		noun := "arguments"
		if want == 1 {
			noun = "argument"
		}
		return fail(CodeInvalidArgument, "%s takes %d %s (%s), got %d", method, want, noun, f.ft, len(args))
	}
	return nil
}

var _ capnweb.DynamicTarget = (*Connection)(nil)

// newConnection builds the surface of exports ("fn" and "iface.fn", see exportNames): top-level
// functions are methods, exported interfaces are properties.
func newConnection(g *Gadget, exports map[string]exportFunc) *Connection {
	c := &Connection{g: g, funcs: map[string]exportFunc{}, ifaces: map[string]*Connection{}}
	for name, fn := range exports {
		iface, method, nested := strings.Cut(name, ".")
		if !nested {
			c.funcs[name] = fn
			continue
		}
		sub := c.ifaces[iface]
		if sub == nil {
			sub = &Connection{g: g, funcs: map[string]exportFunc{}}
			c.ifaces[iface] = sub
		}
		sub.funcs[method] = fn
	}
	return c
}

// exportNames maps the RPC names of a component's exports to the functions: "fn" at top
// level, "iface.fn" inside an exported interface.
func exportNames(items []wit.Item) map[string]exportFunc {
	out := map[string]exportFunc{}
	for _, it := range items {
		switch it.Kind {
		case wit.ItemFunc:
			out[tsdecl.Name(it.Name)] = exportFunc{it.Name, it.Func}
		case wit.ItemInstance:
			for _, f := range it.Exports {
				if f.Kind == wit.ItemFunc {
					out[tsdecl.Name(it.Name)+"."+tsdecl.Name(f.Name)] = exportFunc{it.Name + "#" + f.Name, f.Func}
				}
			}
		}
	}
	return out
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
	var r *reply
	err := c.g.enter(ctx, store.RoleUse, "call", func(ov *overseer, rec store.Gadget) error {
		a, err := ov.actor(ctx, rec.ID)
		if err != nil {
			return err
		}
		r, err = a.run(ctx, fn.name, args)
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
	return nil, wrapErr(err, "gadget %s: %s", c.g.name, method)
}

// GetProperty implements capnweb.DynamicTarget: exported interfaces are properties.
func (c *Connection) GetProperty(_ context.Context, name string) (any, error) {
	if s, ok := c.ifaces[name]; ok {
		return s, nil
	}
	return capnweb.Undefined, nil
}
