// Package log implements atelier:host/log: a guest writes leveled lines to its console log,
// which the host streams to subscribers (runtime.InstanceConfig.Console, Stream "log").
package log

import (
	"context"

	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:host/log@0.1.0"
	Grant     = "atelier:host/log"
)

// New returns the host interface. Messages longer than runtime.MaxConsoleLine are split.
func New() runtime.HostInterface {
	return runtime.HostInterface{
		Name: Interface,
		Funcs: []runtime.HostFunc{{
			Name: "write",
			Func: func(_ context.Context, call *runtime.HostCall, args []any) (any, error) {
				level, msg := args[0].(string), args[1].(string)
				for len(msg) > runtime.MaxConsoleLine {
					call.Console("log", level, msg[:runtime.MaxConsoleLine])
					msg = msg[runtime.MaxConsoleLine:]
				}
				call.Console("log", level, msg)
				return nil, nil
			},
		}},
	}
}
