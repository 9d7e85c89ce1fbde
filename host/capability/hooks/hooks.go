// Package hooks implements atelier:host/hooks: a gadget registers, lists and removes hooks,
// callbacks the gatekeeper of one of its gatekeeper bindings fires later (see the interface in
// wit/host/host.wit). The Registry bound to the instance (runtime.InstanceConfig.Bind[Grant])
// keeps them; this package only converts between WIT values and Go.
package hooks

import (
	"context"
	"fmt"

	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:host/hooks@0.1.0"
	Grant     = "atelier:host/hooks"
)

// Info is one hook as the guest sees it (the WIT record hook-info). Secret is set only in the
// result of Register.
type Info struct {
	ID, Binding, Event, Method, Params, Source, URL string
	Secret                                          []byte
	Fires                                           int64
	Error                                           string
}

// Registry keeps the calling gadget's hooks. An error becomes the WIT result's error string.
type Registry interface {
	RegisterHook(ctx context.Context, binding, event, method, params string) (Info, error)
	ListHooks(ctx context.Context) ([]Info, error)
	RemoveHook(ctx context.Context, id string) error
}

// record is the WIT value of i.
func record(i Info) map[string]any {
	secret := i.Secret
	if secret == nil {
		secret = []byte{}
	}
	return map[string]any{"id": i.ID, "binding": i.Binding, "event": i.Event, "method": i.Method, "params": i.Params,
		"source": i.Source, "url": i.URL, "secret": secret, "fires": uint64(max(i.Fires, 0)), "last-error": i.Error}
}

// New returns the host interface.
func New() runtime.HostInterface {
	reg := func(call *runtime.HostCall) Registry { return call.State().(Registry) }
	return runtime.HostInterface{
		Name: Interface,
		Funcs: []runtime.HostFunc{
			{Name: "register", Func: func(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
				info, err := reg(call).RegisterHook(ctx, args[0].(string), args[1].(string), args[2].(string), args[3].(string))
				if err != nil {
					return nil, runtime.Fail(err.Error())
				}
				return record(info), nil
			}},
			{Name: "list", Func: func(ctx context.Context, call *runtime.HostCall, _ []any) (any, error) {
				infos, err := reg(call).ListHooks(ctx)
				if err != nil {
					return nil, err // the list has no error case: the call traps
				}
				out := make([]any, len(infos))
				for i, info := range infos {
					out[i] = record(info)
				}
				return out, nil
			}},
			{Name: "remove", Func: func(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
				if err := reg(call).RemoveHook(ctx, args[0].(string)); err != nil {
					return nil, runtime.Fail(err.Error())
				}
				return nil, nil
			}},
		},
		NewState: func(info runtime.InstanceInfo) (any, error) {
			r, ok := info.Bind.(Registry)
			if !ok {
				return nil, fmt.Errorf("hooks: binding is %T, want a hooks.Registry", info.Bind)
			}
			return r, nil
		},
	}
}
