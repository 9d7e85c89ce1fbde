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

// Interfaces returns the host interfaces gatekeepers need beyond those gadgets already have
// (kv, log): add them to runtime.Config.Interfaces of the runtime that runs gatekeepers.
func Interfaces(egress outboundhttp.Options) ([]runtime.HostInterface, error) {
	out, err := outboundhttp.New(egress)
	if err != nil {
		return nil, err
	}
	return []runtime.HostInterface{out, approvals.New()}, nil
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
	// Vendor and Kinds are what the component said about itself at installation.
	Vendor Vendor
	Kinds  []ResourceKind

	rt   *runtime.Runtime
	comp *runtime.Component
}

// Install compiles p on rt and refuses it unless its imports stay within Grants (checked
// before anything runs), it exports the connector interface of its world with the right
// signatures, and the resource kinds it reports are exactly the manifest's. rt must provide
// the gatekeeper interfaces (see Interfaces) and kv and log.
func Install(ctx context.Context, rt *runtime.Runtime, p *Package) (*Gatekeeper, error) {
	comp, err := rt.Compile(ctx, p.Wasm)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w: %v", p, ErrNotComponent, err)
	}
	g := &Gatekeeper{Package: p, rt: rt, comp: comp}
	if err := g.check(ctx); err != nil {
		comp.Close()
		return nil, fmt.Errorf("install %s: %w", p, err)
	}
	return g, nil
}

func (g *Gatekeeper) check(ctx context.Context) error {
	audit := g.comp.Audit()
	if err := audit.Check(g.rt, Grants()); err != nil {
		return fmt.Errorf("%w: %v", ErrExcessImports, err)
	}
	have := map[string]bool{}
	for _, it := range audit.Exports {
		if it.Kind != wit.ItemInstance || it.Interface() != Connector {
			continue
		}
		for _, line := range audit.Lines() {
			if member, ok := strings.CutPrefix(line, "export "+it.Name+"."); ok {
				have[member] = true
			}
		}
	}
	var missing []string
	for _, want := range connectorExports {
		if !have[want] {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w %s: %s does not export (or exports with another type) %s", ErrWorldMismatch, g.Package.Manifest.World, Connector, strings.Join(missing, "; "))
	}
	// Ask the component what it is, in an instance that can reach nothing.
	inst, err := g.rt.Instantiate(ctx, g.comp, runtime.InstanceConfig{Name: g.Package.Manifest.Name + "/install", Grants: Grants()})
	if err != nil {
		return fmt.Errorf("start for inspection: %w", err)
	}
	defer inst.Close()
	v, err := inst.Call(ctx, Connector+"#describe")
	if err != nil {
		return fmt.Errorf("describe: %w", err)
	}
	m := v.(map[string]any)
	g.Vendor = Vendor{DisplayName: m["display-name"].(string), URL: m["url"].(string), Tagline: m["tagline"].(string), Description: m["description"].(string)}
	ks, err := inst.Call(ctx, Connector+"#resource-kinds")
	if err != nil {
		return fmt.Errorf("resource-kinds: %w", err)
	}
	var got, want []string
	for _, k := range ks.([]any) {
		k := k.(map[string]any)
		g.Kinds = append(g.Kinds, ResourceKind{Kind: k["kind"].(string), Title: k["title"].(string), Description: k["description"].(string)})
		got = append(got, k["kind"].(string))
	}
	for _, r := range g.Package.Manifest.Resources {
		want = append(want, r.Kind)
	}
	sort.Strings(got)
	sort.Strings(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("%w: the component serves resource kinds %v, the manifest lists %v", ErrWorldMismatch, got, want)
	}
	return nil
}

// Close releases the compiled component once its instances are closed.
func (g *Gatekeeper) Close() { g.comp.Close() }
