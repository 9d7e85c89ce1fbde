package kernel

import (
	"context"
	"strings"
	"unicode"

	"atelier/capnweb"
	"atelier/host/runtime/wit"
	"atelier/host/store"
)

// API is the main object of every Cap'n Web session at /api: it lists, deploys and opens
// gadgets. Its methods are the RPC surface (see package capnweb for the naming rules).
type API struct {
	capnweb.Target
	k *Kernel
}

// NewAPI returns the API object over k.
func NewAPI(k *Kernel) *API { return &API{k: k} }

// GadgetInfo describes a gadget to clients.
type GadgetInfo struct {
	Name     string          `json:"name"`
	Grants   []string        `json:"grants"`
	Current  int             `json:"current"`
	Versions []store.Version `json:"versions"`
}

func infoOf(g store.Gadget) GadgetInfo {
	return GadgetInfo{Name: g.Name, Grants: g.Grants, Current: g.Current, Versions: g.Versions}
}

// Gadgets lists the gadgets.
func (a *API) Gadgets(ctx context.Context) ([]GadgetInfo, error) {
	gs, err := a.k.Gadgets(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]GadgetInfo, len(gs))
	for i, g := range gs {
		out[i] = infoOf(g)
	}
	return out, nil
}

// Deploy stores code (a component) as the new current version of gadget name, granted the
// listed interfaces (for example "atelier:host/kv").
func (a *API) Deploy(ctx context.Context, name string, code []byte, grants []string) (GadgetInfo, error) {
	g, err := a.k.Deploy(ctx, name, code, grants)
	return infoOf(g), err
}

// Rollback makes an earlier version of gadget name current.
func (a *API) Rollback(ctx context.Context, name string, version int) (GadgetInfo, error) {
	g, err := a.k.Rollback(ctx, name, version)
	return infoOf(g), err
}

// Delete removes gadget name and its state.
func (a *API) Delete(ctx context.Context, name string) error { return a.k.Delete(ctx, name) }

// Inspect returns the imports and exports of gadget name, one line each.
func (a *API) Inspect(ctx context.Context, name string) ([]string, error) {
	au, err := a.k.Audit(ctx, name)
	if err != nil {
		return nil, err
	}
	return au.Lines(), nil
}

// Gadget returns a stub whose methods are gadget name's exported functions, in camelCase
// (`make-counter` is called as `makeCounter`). Exported interfaces are properties holding
// their functions the same way.
func (a *API) Gadget(ctx context.Context, name string) (*GadgetStub, error) {
	au, err := a.k.Audit(ctx, name)
	if err != nil {
		return nil, err
	}
	return newGadgetStub(a.k, name, au.Exports, ""), nil
}

// GadgetStub is a gadget as a Cap'n Web object: a call on it runs on the gadget's actor.
type GadgetStub struct {
	k     *Kernel
	name  string
	funcs map[string]string // RPC method name -> export name the runtime calls
	// ifaces maps an exported interface's property name to its functions.
	ifaces map[string]*GadgetStub
}

// CallMethod implements capnweb.DynamicTarget.
func (g *GadgetStub) CallMethod(ctx context.Context, method string, args []any) (any, error) {
	fn, ok := g.funcs[method]
	if !ok {
		return nil, capnweb.TypeError("gadget %s has no exported function %q", g.name, method)
	}
	return g.k.Call(ctx, g.name, fn, args)
}

// GetProperty implements capnweb.DynamicTarget: exported interfaces are properties.
func (g *GadgetStub) GetProperty(_ context.Context, name string) (any, error) {
	if s, ok := g.ifaces[name]; ok {
		return s, nil
	}
	return capnweb.Undefined, nil
}

// newGadgetStub maps the RPC names of the functions in items to the names the runtime calls
// them by ("fn" at top level, "iface#fn" inside the exported instance iface).
func newGadgetStub(k *Kernel, name string, items []wit.Item, iface string) *GadgetStub {
	g := &GadgetStub{k: k, name: name, funcs: map[string]string{}, ifaces: map[string]*GadgetStub{}}
	for _, it := range items {
		switch {
		case it.Kind == wit.ItemFunc && iface == "":
			g.funcs[camelCase(it.Name)] = it.Name
		case it.Kind == wit.ItemFunc:
			g.funcs[camelCase(it.Name)] = iface + "#" + it.Name
		case it.Kind == wit.ItemInstance && iface == "":
			g.ifaces[camelCase(it.Name)] = newGadgetStub(k, name, it.Exports, it.Name)
		}
	}
	return g
}

// camelCase turns a WIT kebab-case name into the JavaScript convention: "make-counter" ->
// "makeCounter"; a trailing version or package prefix is dropped ("acme:app/api@1.0.0" -> "api").
func camelCase(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	name, _, _ = strings.Cut(name, "@")
	var b strings.Builder
	up := false
	for _, r := range name {
		if r == '-' {
			up = true
			continue
		}
		if up {
			r = unicode.ToUpper(r)
			up = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

var _ capnweb.DynamicTarget = (*GadgetStub)(nil)
