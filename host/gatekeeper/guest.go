package gatekeeper

import (
	"context"
	"errors"
	"fmt"

	"atelier/capnweb/ordered"
	"atelier/host/capability/approvals"
	"atelier/host/capability/kv"
	"atelier/host/capability/outboundhttp"
	"atelier/host/runtime"
)

// Code is an installed package's compiled code in one package format. Gatekeeper starts its
// guests through it; host/gatekeeper implements it for components and host/gatekeeper/extism
// for Extism plugins, so that everything above a guest (accounts, sessions, attribution of
// observations and actions, the queue) is the same for both.
type Code interface {
	// Start starts a guest bound to cfg.
	Start(ctx context.Context, cfg GuestConfig) (Guest, error)
	// Close releases the code once its guests are closed.
	Close()
}

// GuestConfig is what one guest is bound to.
type GuestConfig struct {
	// Name identifies the guest in console lines (Account.Name).
	Name string
	// Resource is the granted resource URL (Account.Resource; empty while installing).
	Resource string
	// Policy governs the guest's outbound requests; nil lets it reach nothing.
	Policy *outboundhttp.Policy
	// Sink receives the guest's observations and actions; nil refuses them.
	Sink approvals.Sink
	// Store is the guest's kv state; nil gives it an empty in-memory store.
	Store kv.Store
	// Console receives stdout, stderr and log lines (nil drops them).
	Console func(runtime.ConsoleLine)
	// Limits bound each call and the guest's memory.
	Limits runtime.Limits
	// Memory, when set, shares the memory of a component guest out with other instances
	// (runtime.InstanceConfig.Account); Extism guests are bounded by Limits alone.
	Memory runtime.MemoryAccount
}

// Guest is one running gatekeeper module: each method calls the connector function of the
// same name (see World) with ctx, which host functions the call makes receive. A guest runs
// one call at a time. An error the gatekeeper itself returned carries its message; after a
// trap or timeout the guest may refuse every later call, and the owner starts a new one.
type Guest interface {
	Describe(ctx context.Context) (Vendor, error)
	ResourceKinds(ctx context.Context) ([]ResourceKind, error)
	DescribeResource(ctx context.Context, url string) (Resource, error)
	TypeScriptTypes(ctx context.Context) (string, error)
	OpenSession(ctx context.Context, url, caller string) (uint64, error)
	Invoke(ctx context.Context, session uint64, method, args string) (string, error)
	CloseSession(ctx context.Context, session uint64) error
	ApplyAction(ctx context.Context, id uint64, payload string) (string, error)
	RejectAction(ctx context.Context, id uint64, payload string) error
	RevertAction(ctx context.Context, id uint64, payload string) (string, error)
	Close() error
}

// componentCode is the Code of a component package.
type componentCode struct {
	rt   *runtime.Runtime
	comp *runtime.Component
	// hooks: the component exports HooksInterface.
	hooks bool
}

func (c *componentCode) Close() { c.comp.Close() }

func (c *componentCode) Start(ctx context.Context, cfg GuestConfig) (Guest, error) {
	bind := map[string]any{}
	if cfg.Policy != nil {
		bind[outboundhttp.Grant] = cfg.Policy
	}
	if cfg.Sink != nil {
		bind[approvals.Grant] = cfg.Sink
	}
	if cfg.Store != nil {
		bind[kv.Grant] = cfg.Store
	}
	inst, err := c.rt.Instantiate(ctx, c.comp, runtime.InstanceConfig{
		Name: cfg.Name, Grants: Grants(), Limits: cfg.Limits, Console: cfg.Console, Bind: bind, Account: cfg.Memory,
	})
	if err != nil {
		return nil, err
	}
	return &componentGuest{inst: inst, hooks: c.hooks}, nil
}

// componentGuest calls a component instance's connector export (and its hooks export).
type componentGuest struct {
	inst  *runtime.Instance
	hooks bool
}

func (g *componentGuest) call(ctx context.Context, fn string, args ...any) (any, error) {
	return g.callIn(ctx, Connector, fn, args...)
}

// callIn calls function fn of the exported interface iface.
func (g *componentGuest) callIn(ctx context.Context, iface, fn string, args ...any) (any, error) {
	res, err := g.inst.Call(ctx, iface+"#"+fn, args...)
	if err != nil {
		var re *runtime.ResultError
		if errors.As(err, &re) {
			return nil, errors.New(fmt.Sprint(re.Value))
		}
		return nil, err
	}
	return res, nil
}

func (g *componentGuest) Describe(ctx context.Context) (Vendor, error) {
	v, err := g.call(ctx, "describe")
	if err != nil {
		return Vendor{}, err
	}
	m := v.(ordered.Object) // a record, as wit.Lift makes it
	return Vendor{DisplayName: m.Value("display-name").(string), URL: m.Value("url").(string), Tagline: m.Value("tagline").(string), Description: m.Value("description").(string)}, nil
}

func (g *componentGuest) ResourceKinds(ctx context.Context) ([]ResourceKind, error) {
	v, err := g.call(ctx, "resource-kinds")
	if err != nil {
		return nil, err
	}
	var out []ResourceKind
	for _, k := range v.([]any) {
		k := k.(ordered.Object)
		out = append(out, ResourceKind{Kind: k.Value("kind").(string), Title: k.Value("title").(string), Description: k.Value("description").(string)})
	}
	return out, nil
}

func (g *componentGuest) DescribeResource(ctx context.Context, url string) (Resource, error) {
	v, err := g.call(ctx, "describe-resource", url)
	if err != nil {
		return Resource{}, err
	}
	m := v.(ordered.Object)
	return Resource{URL: m.Value("url").(string), Title: m.Value("title").(string), Snippet: m.Value("snippet").(string), SuggestedBindingName: m.Value("suggested-binding-name").(string)}, nil
}

func (g *componentGuest) TypeScriptTypes(ctx context.Context) (string, error) {
	v, err := g.call(ctx, "typescript-types")
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (g *componentGuest) OpenSession(ctx context.Context, url, caller string) (uint64, error) {
	v, err := g.call(ctx, "open-session", url, caller)
	if err != nil {
		return 0, err
	}
	return v.(uint64), nil
}

func (g *componentGuest) Invoke(ctx context.Context, session uint64, method, args string) (string, error) {
	v, err := g.call(ctx, "invoke", session, method, args)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (g *componentGuest) CloseSession(ctx context.Context, session uint64) error {
	_, err := g.call(ctx, "close-session", session)
	return err
}

func (g *componentGuest) ApplyAction(ctx context.Context, id uint64, payload string) (string, error) {
	v, err := g.call(ctx, "apply-action", id, payload)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (g *componentGuest) RejectAction(ctx context.Context, id uint64, payload string) error {
	_, err := g.call(ctx, "reject-action", id, payload)
	return err
}

func (g *componentGuest) RevertAction(ctx context.Context, id uint64, payload string) (string, error) {
	v, err := g.call(ctx, "revert-action", id, payload)
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

func (g *componentGuest) Close() error { return g.inst.Close() }
