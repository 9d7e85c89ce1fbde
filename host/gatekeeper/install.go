package gatekeeper

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"atelier/host/capability/approvals"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/capability/outboundhttp"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// Connector is the interface every gatekeeper exports (unversioned, as calls name it).
const Connector = "atelier:gatekeeper/connector"

// connectorExports are the exports the gatekeeper world requires, rendered as
// runtime.Audit.Lines renders them without the "export <interface>." prefix.
var connectorExports = []string{
	"vendor: type record vendor { display-name: string, url: string, tagline: string, description: string }",
	"resource-kind: type record resource-kind { kind: string, title: string, description: string }",
	"resource: type record resource { url: string, title: string, snippet: string, suggested-binding-name: string }",
	"describe: func() -> vendor",
	"resource-kinds: func() -> list<resource-kind>",
	"describe-resource: func(url: string) -> result<resource, string>",
	"typescript-types: func() -> string",
	"open-session: func(url: string, caller: string) -> result<u64, string>",
	"invoke: func(session: u64, method: string, args: string) -> result<string, string>",
	"close-session: func(session: u64)",
	"apply-action: func(id: u64, payload: string) -> result<string, string>",
	"reject-action: func(id: u64, payload: string)",
	"revert-action: func(id: u64, payload: string) -> result<string, string>",
}

// Grants returns what a gatekeeper instance is granted: the harmless WASI baseline, its
// outbound HTTP and approvals, its own kv and log. Gadgets never get the first two.
func Grants() []string {
	return append(runtime.WASIBaseline(), outboundhttp.Grant, approvals.Grant, kv.Grant, log.Grant)
}

// Interfaces returns every host interface Grants names (outbound HTTP, approvals, kv, log): the
// runtime.Config.Interfaces of the runtime that runs gatekeepers. That runtime is theirs alone,
// so that outbound HTTP and approvals can never be granted to a gadget.
func Interfaces(egress outboundhttp.Options) ([]runtime.HostInterface, error) {
	out, err := outboundhttp.New(egress)
	if err != nil {
		return nil, err
	}
	return []runtime.HostInterface{out, approvals.New(), kv.New(kv.Limits{}), log.New()}, nil
}

// Vendor is the gatekeeper's description of itself.
type Vendor struct {
	DisplayName, URL, Tagline, Description string
}

// ResourceKind is a kind of resource the gatekeeper serves.
type ResourceKind struct {
	Kind, Title, Description string
}

// Gatekeeper is an installed package: compiled, audited and checked against its manifest.
// It is safe for concurrent use; Start creates instances.
type Gatekeeper struct {
	Package *Package
	// Vendor and Kinds are what the gatekeeper said about itself at installation.
	Vendor Vendor
	Kinds  []ResourceKind

	code Code
	// grant, when set, replaces the manifest's resource patterns (a built-in gatekeeper).
	grant func(resource string) (*Grant, error)
}

// Install compiles a component package on rt and refuses it unless its imports stay within
// Grants (checked before anything runs), it exports the connector interface of its world with
// the right signatures (and the hooks interface, when the manifest names WorldWithHooks), and the resource kinds it reports are exactly the manifest's. rt must
// provide the gatekeeper interfaces (see Interfaces) and kv and log. Packages of other
// formats have their own installers (host/gatekeeper/extism).
func Install(ctx context.Context, rt *runtime.Runtime, p *Package) (*Gatekeeper, error) {
	if f := p.Manifest.PackageFormat(); f != FormatComponent {
		return nil, fmt.Errorf("install %s: %w: the package format is %s, not %s", p, ErrNotComponent, f, FormatComponent)
	}
	comp, err := rt.Compile(ctx, p.Wasm)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w: %v", p, ErrNotComponent, err)
	}
	hooks, err := checkComponent(rt, comp, &p.Manifest)
	if err != nil {
		comp.Close()
		return nil, fmt.Errorf("install %s: %w", p, err)
	}
	return InstallCode(ctx, p, &componentCode{rt: rt, comp: comp, hooks: hooks})
}

// hookExports are the exports HooksInterface requires, rendered as connectorExports are.
var hookExports = []string{
	"header: type record header { name: string, value: string }",
	"hook: type record hook { id: string, event: string, params: string, url: string, secret: list<u8> }",
	"subscribe: func(session: u64, h: hook) -> result<_, string>",
	"unsubscribe: func(session: u64, h: hook) -> result<_, string>",
	"receive: func(session: u64, h: hook, headers: list<header>, body: list<u8>) -> result<option<string>, string>",
	"poll: func(session: u64, h: hook) -> result<option<string>, string>",
}

// checkComponent refuses a component that imports more than Grants or does not export the
// connector with the world's signatures, or, when the manifest names WorldWithHooks, the
// hooks interface. It reports whether the component exports the hooks interface.
func checkComponent(rt *runtime.Runtime, comp *runtime.Component, m *Manifest) (hooks bool, err error) {
	audit := comp.Audit()
	if err := audit.Check(rt, Grants()); err != nil {
		return false, fmt.Errorf("%w: %v", ErrExcessImports, err)
	}
	missing := missingExports(audit, Connector, connectorExports)
	if len(missing) > 0 {
		return false, fmt.Errorf("%w %s: %s does not export (or exports with another type) %s", ErrWorldMismatch, World, Connector, strings.Join(missing, "; "))
	}
	missing = missingExports(audit, HooksInterface, hookExports)
	if len(missing) > 0 && (m.World == WorldWithHooks || len(m.Hooks) > 0) {
		return false, fmt.Errorf("%w %s: the manifest declares hooks but the component does not export (or exports with another type) %s: %s; build it for the world %s",
			ErrWorldMismatch, WorldWithHooks, HooksInterface, strings.Join(missing, "; "), WorldWithHooks)
	}
	return len(missing) == 0, nil
}

// missingExports returns the members of want that the component's export of iface lacks.
func missingExports(audit *runtime.Audit, iface string, want []string) []string {
	have := map[string]bool{}
	for _, it := range audit.Exports {
		if it.Kind != wit.ItemInstance || it.Interface() != iface {
			continue
		}
		for _, line := range audit.Lines() {
			if member, ok := strings.CutPrefix(line, "export "+it.Name+"."); ok {
				have[member] = true
			}
		}
	}
	var missing []string
	for _, w := range want {
		if !have[w] {
			missing = append(missing, w)
		}
	}
	return missing
}

// InstallCode finishes installing p, whose code a format's installer has compiled and
// checked: it asks the gatekeeper to describe itself, in a guest that can reach nothing, and
// refuses it unless the resource kinds it reports are exactly the manifest's. On failure it
// closes code.
func InstallCode(ctx context.Context, p *Package, code Code) (*Gatekeeper, error) {
	g := &Gatekeeper{Package: p, code: code}
	if err := g.inspect(ctx); err != nil {
		code.Close()
		return nil, fmt.Errorf("install %s: %w", p, err)
	}
	return g, nil
}

func (g *Gatekeeper) inspect(ctx context.Context) error {
	guest, err := g.code.Start(ctx, GuestConfig{Name: g.Package.Manifest.Name + "/install"})
	if err != nil {
		return fmt.Errorf("start for inspection: %w", err)
	}
	defer guest.Close()
	if g.Vendor, err = guest.Describe(ctx); err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	if g.Kinds, err = guest.ResourceKinds(ctx); err != nil {
		return fmt.Errorf("resource-kinds: %w", err)
	}
	var got, want []string
	for _, k := range g.Kinds {
		got = append(got, k.Kind)
	}
	for _, r := range g.Package.Manifest.Resources {
		want = append(want, r.Kind)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%w: the gatekeeper serves resource kinds %v, the manifest lists %v", ErrWorldMismatch, got, want)
	}
	return nil
}

// Close releases the compiled code once its instances are closed.
func (g *Gatekeeper) Close() { g.code.Close() }

// CloseAccount releases what the gatekeeper's code keeps for account (an Account.Name) beyond
// its instances, such as the MCP gatekeeper's cached connection and hook watches: the account
// was disconnected. Code that keeps nothing per account ignores it.
func (g *Gatekeeper) CloseAccount(name string) {
	if c, ok := g.code.(interface{ CloseAccount(string) }); ok {
		c.CloseAccount(name)
	}
}
