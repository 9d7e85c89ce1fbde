// Package jssandbox runs JavaScript for `atelier build` (builder.Options.RunJS) the way Code
// Mode runs an agent's snippet: in the embedded QuickJS engine, inside a component instance on
// a runtime of its own, with no bindings, so that the code reaches no file, network or
// environment, and its limits (2 s, a 64 MiB heap) stop it.
package jssandbox

import (
	"context"
	"fmt"
	"time"

	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/jsruntime"
)

// limits bound a run: a module's top level, which Build runs, declares its exports and is
// quick and small; past them the engine is stopped (time) or allocation throws (memory).
var limits = jsruntime.Limits{Timeout: 2 * time.Second, Memory: 64 << 20, Stack: jsruntime.DefaultStack}

// Run runs module, an ES module whose default export is an async function, and returns the
// function's result as encoding/json decodes it. cacheDir keeps the engine's compiled
// artifacts across runs ("" keeps none).
func Run(ctx context.Context, cacheDir, module string) (any, error) {
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		return nil, fmt.Errorf("jssandbox: start runtime: %w", err)
	}
	defer rt.Close()
	eng, err := jsruntime.New(ctx, rt)
	if err != nil {
		return nil, fmt.Errorf("jssandbox: %w", err)
	}
	defer eng.Close()
	res, err := eng.ExecuteCode(ctx, jsruntime.Code{Source: module}, jsruntime.Env{}, limits)
	if err != nil {
		return nil, fmt.Errorf("jssandbox: %w", err)
	}
	return res.Value, nil
}
