// Package clock implements atelier:host/clock: the host's wall clock in milliseconds.
package clock

import (
	"context"
	"time"

	"atelier/host/runtime"
)

// Interface is the WIT interface this capability implements; Grant is the grant that allows it.
const (
	Interface = "atelier:host/clock@0.1.0"
	Grant     = "atelier:host/clock"
)

// New returns the host interface reading now (time.Now in production, a fake in tests).
func New(now func() time.Time) runtime.HostInterface {
	return runtime.HostInterface{
		Name: Interface,
		Funcs: []runtime.HostFunc{{
			Name: "now-ms",
			Func: func(context.Context, *runtime.HostCall, []any) (any, error) {
				return uint64(now().UnixMilli()), nil
			},
		}},
	}
}
