package main

import (
	"context"
	"flag"
	"fmt"
	"os"

	"atelier/host/capability/events"
	"atelier/host/kernel"
	"atelier/host/runtime"
)

func inspectCommand() command {
	return command{
		name:    "inspect",
		usage:   "[--grant NAME,...] FILE.wasm|FILE.wat",
		summary: "list a component's imports and exports with their signatures",
		details: `Compiles a component (binary or component WAT text) and prints every import and export
with its full WIT signature, read from the component's type before anything runs.

With --grant, also checks the imports against that grant set (the WASI baseline is always
included) and exits 1 naming each import the grants do not cover.

Example:
  atelier inspect --grant atelier:host/kv,atelier:host/log counter.wasm`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			grants := &grantList{}
			fs.Var(grants, "grant", "interfaces to check the imports against, comma-separated or repeated, e.g. atelier:host/kv")
			cacheDir := fs.String("cache", "", "artifact cache directory (default: the user cache dir)")
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want exactly one component file"}
				}
				return inspect(ctx, args[0], *cacheDir, grants)
			}
		},
	}
}

func inspect(ctx context.Context, path, cacheDir string, grants *grantList) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	rt, comp, err := compileComponent(ctx, src, cacheDir)
	if err != nil {
		return fmt.Errorf("compile %s: %w", path, err)
	}
	defer rt.Close()
	defer comp.Close()
	out := stdio(ctx).out
	fmt.Fprintln(out, comp.Audit())
	if !grants.set {
		return nil
	}
	if err := comp.Audit().Check(rt, append(runtime.WASIBaseline(), grants.grants...)); err != nil {
		return err
	}
	fmt.Fprintln(out, "grants: every import is covered")
	return nil
}

// compileComponent starts a runtime with the kernel's host interfaces (those gadgets can be
// granted) and compiles src, a component or component WAT text, with it. The caller closes
// both.
func compileComponent(ctx context.Context, src []byte, cacheDir string) (*runtime.Runtime, *runtime.Component, error) {
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: kernel.HostInterfaces(events.NewBus())})
	if err != nil {
		return nil, nil, fmt.Errorf("start runtime: %w", err)
	}
	comp, err := rt.Compile(ctx, src)
	if err != nil {
		rt.Close()
		return nil, nil, err
	}
	return rt, comp, nil
}
