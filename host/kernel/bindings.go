package kernel

import (
	"context"
	"slices"
	"time"

	"atelier/host/capability/bindings"
	"atelier/host/runtime"
	"atelier/host/store"
)

// BindingsGrant is the grant that lets a gadget call the gadgets bound to it.
const BindingsGrant = bindings.Grant

func bindingsInterface() runtime.HostInterface { return bindings.New() }

// callChainKey carries the gadgets whose calls are in progress down a chain of binding calls.
type callChainKey struct{}

// withCaller adds gadget id to the call chain in ctx.
func withCaller(ctx context.Context, id store.GadgetID) context.Context {
	chain, _ := ctx.Value(callChainKey{}).([]store.GadgetID)
	return context.WithValue(ctx, callChainKey{}, append(slices.Clip(chain), id))
}

// bindingCaller runs a gadget's binding calls.
type bindingCaller struct{ a *actor }

// CallBinding implements bindings.Caller: it resolves the binding in the caller's current
// record and calls the target's export (or its gatekeeper session, gkbindings.go), refusing
// a call back into a gadget already in the chain (which would wait for itself).
func (b bindingCaller) CallBinding(ctx context.Context, name, method string, args []any) (any, error) {
	ov := b.a.ov
	g, err := ov.gadget(b.a.id)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, ov.k.callTimeout())
	defer cancel()
	if account, ok := g.Gatekeepers[name]; ok {
		return ov.callGatekeeper(ctx, g, name, account, method, args)
	}
	target, ok := g.Bindings[name]
	if !ok {
		return nil, fail(CodeNotFound, "gadget %s has no binding %q", g.Name, name)
	}
	chain, _ := ctx.Value(callChainKey{}).([]store.GadgetID)
	if slices.Contains(chain, target) {
		return nil, fail(CodeFailedPrecondition, "binding %q would call back into a gadget already in this call chain", name)
	}
	a, err := ov.actor(ctx, target)
	if err != nil {
		return nil, err
	}
	fn, ok := a.exports[method]
	if !ok {
		return nil, fail(CodeNotFound, "the gadget bound as %q has no exported function %q", name, method)
	}
	if err := fn.checkJSON(method, args); err != nil {
		return nil, err
	}
	return a.call(ctx, fn.name, args)
}

// callTimeout bounds one call of a binding: Config.Limits.Timeout, or the runtime's default.
func (k *Kernel) callTimeout() time.Duration {
	if t := k.cfg.Limits.Timeout; t > 0 {
		return t
	}
	return runtime.DefaultTimeout
}
