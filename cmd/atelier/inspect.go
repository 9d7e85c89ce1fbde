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
		usage:   "[--grant NAME,...] [--wit | --json] FILE.wasm|FILE.wat",
		summary: "list a component's imports and exports with their signatures",
		details: `Compiles a component (binary or component WAT text) and prints every import and export
with its full WIT signature, read from the component's type before anything runs. Types are
written as the component declares them: each named type under its own name (records with the
same fields keep their names, aliases and uses stay), resources by name in signatures.

With --wit, prints the component's WIT instead: its world (root:component/root, as
` + "`jco wit`" + ` names it) and every interface it imports or exports, package by package.

With --grant, also checks the imports against that grant set (the WASI baseline is always
included) and exits 1 naming each import the grants do not cover.

Examples:
  atelier inspect counter.wasm
  atelier inspect --wit counter.wasm
  atelier inspect --json counter.wasm
  atelier inspect --grant atelier:host/kv,atelier:host/log counter.wasm`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			grants := &grantList{}
			fs.Var(grants, "grant", "interfaces to check the imports against, comma-separated or repeated, e.g. atelier:host/kv")
			cacheDir := fs.String("cache", "", "artifact cache directory (default: the user cache dir)")
			asWIT := fs.Bool("wit", false, "print the component's WIT (world and interfaces) instead of one line per item")
			asJSON := fs.Bool("json", false, `print {"imports": [...], "exports": [...], "wit": "..."} as JSON`)
			return func(ctx context.Context, args []string) error {
				if len(args) != 1 {
					return usageError{"want exactly one component file"}
				}
				if *asWIT && *asJSON {
					return usageError{"--wit and --json exclude each other"}
				}
				return inspect(ctx, args[0], *cacheDir, grants, *asWIT, *asJSON)
			}
		},
	}
}

func inspect(ctx context.Context, path, cacheDir string, grants *grantList, asWIT, asJSON bool) error {
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
	st := stdio(ctx)
	out := st.out
	desc, err := comp.Describe(src)
	if err != nil {
		// Wasmtime took the component, so the reader met something it does not know:
		// the structural types still say everything but the names.
		fmt.Fprintf(st.err, "note: %s: showing structural types (names may be lost): %v\n", path, err)
	}
	switch {
	case asJSON:
		if err := printJSON(out, desc); err != nil {
			return err
		}
	case asWIT:
		if desc.WIT == "" {
			return fmt.Errorf("%s: no WIT to print: --wit reads a component binary: convert the WAT text with `sdk/build-gadget.sh --lang wat DIR OUT.wasm` (DIR holding the .wat file)", path)
		}
		fmt.Fprint(out, desc.WIT)
	default:
		for _, l := range desc.Lines() {
			fmt.Fprintln(out, l)
		}
	}
	if !grants.set {
		return nil
	}
	if err := comp.Audit().Check(rt, append(runtime.WASIBaseline(), grants.grants...)); err != nil {
		return err
	}
	verdict := out
	if asWIT || asJSON { // keep standard output WIT or JSON
		verdict = st.err
	}
	fmt.Fprintln(verdict, "grants: every import is covered")
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
