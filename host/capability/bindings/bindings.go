// Package bindings implements atelier:host/bindings: a gadget calls another gadget through a
// named binding its owner granted. The arguments (a JSON array) and the result are JSON text;
// the Caller bound to the instance (runtime.InstanceConfig.Bind[bindings.Grant]) resolves the
// binding and runs the call.
package bindings

import (
	"context"
	"encoding/json"
	"fmt"

	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:host/bindings@0.1.0"
	Grant     = "atelier:host/bindings"
)

// MaxArgs is the largest argument text accepted.
const MaxArgs = 1 << 20

// Caller runs a call through a binding: args are the decoded JSON array, the result is
// encoded as JSON by the capability. An error becomes the WIT result's error string.
type Caller interface {
	CallBinding(ctx context.Context, name, method string, args []any) (any, error)
}

// New returns the host interface.
func New() runtime.HostInterface {
	return runtime.HostInterface{
		Name: Interface,
		Funcs: []runtime.HostFunc{{
			Name: "call",
			Func: func(ctx context.Context, call *runtime.HostCall, args []any) (any, error) {
				name, method, text := args[0].(string), args[1].(string), args[2].(string)
				if len(text) > MaxArgs {
					return nil, runtime.Fail(fmt.Sprintf("arguments of %d bytes exceed %d", len(text), MaxArgs))
				}
				var list []any
				if err := json.Unmarshal([]byte(text), &list); err != nil {
					return nil, runtime.Fail("arguments must be a JSON array: " + err.Error())
				}
				res, err := call.State().(Caller).CallBinding(ctx, name, method, list)
				if err != nil {
					return nil, runtime.Fail(err.Error())
				}
				out, err := json.Marshal(res)
				if err != nil {
					return nil, runtime.Fail("the result is not JSON: " + err.Error())
				}
				return string(out), nil
			},
		}},
		NewState: func(info runtime.InstanceInfo) (any, error) {
			c, ok := info.Bind.(Caller)
			if !ok {
				return nil, fmt.Errorf("bindings: binding is %T, want a bindings.Caller", info.Bind)
			}
			return c, nil
		},
	}
}
