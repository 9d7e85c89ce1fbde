package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"atelier/host/runtime/wit/tsdecl"
	"atelier/sdk/wit"
	"atelier/sdk/wit/gogen"
	"atelier/sdk/wit/tsgen"
)

func bindgenCommand() command {
	return command{
		name:    "bindgen",
		usage:   "--lang go|ts --world NAME --out DIR [--package NAME] [--cabi PATH] WIT_PATH...",
		summary: "generate guest bindings (Go) or TypeScript declarations from a WIT world",
		details: `Reads WIT (each WIT_PATH is a .wit file or a directory holding one package, with its
dependencies in deps/), picks the world, and writes bindings into DIR.

The world is looked up in the package of the first WIT_PATH: a plain name ("gadget"), or a
full name ("atelier:gadget/gadget@0.1.0") to pick a world of any package read. Without --world,
that package's only world.

  --lang go   writes a Go package (types.go, abi_wasip1.go) for guests built with
              GOOS=wasip1 GOARCH=wasm -buildmode=c-shared: typed functions for the imports, Go
              interfaces to implement for the exports, and the canonical ABI between them. It
              uses atelier/sdk/go/cabi, or the copy --cabi names (projects made by atelier new
              have one in internal/cabi). The package name defaults to the world's name.
  --lang ts   writes TypeScript declarations (--package names the declared binding, default:
              the world's name):
                NAME.d.ts         what callers see of the world's exports in the JSON mapping
                                  of bindings and Code Mode, as describe_binding shows it;
                NAME.client.d.ts  the same over Cap'n Web (connect()): resource handles are
                                  stubs with methods;
                imports.d.ts      the modules a JS or TS component of the world imports, as
                                  componentize-qjs presents them, documented from the WIT
                                  (the TS templates ship it as atelier.d.ts).

Example:
  atelier bindgen --lang go --world counter --out gadgets/counter-gen/bindings gadgets/counter-gen/wit wit/gadget wit/host`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			lang := fs.String("lang", "", "target language: go or ts")
			world := fs.String("world", "", "the world to generate bindings for (default: the only one)")
			out := fs.String("out", "", "output directory (created if missing)")
			pkg := fs.String("package", "", "Go package name (go) or binding name (ts); default: the world's name")
			cabi := fs.String("cabi", gogen.DefaultCABI, "import path of the canonical-ABI helper package the Go bindings use (a copy of atelier/sdk/go/cabi in your module)")
			return func(ctx context.Context, args []string) error {
				if len(args) == 0 {
					return usageError{"want at least one WIT file or directory"}
				}
				if *out == "" {
					return usageError{"--out is required"}
				}
				if *lang != "go" && *lang != "ts" {
					return usageError{fmt.Sprintf("--lang must be go or ts, not %q", *lang)}
				}
				files, err := bindgen(*lang, *world, *pkg, *cabi, args)
				if err != nil {
					return err
				}
				if err := os.MkdirAll(*out, 0o755); err != nil {
					return fmt.Errorf("create %s: %w", *out, err)
				}
				for _, f := range files {
					path := filepath.Join(*out, f.Name)
					if err := os.WriteFile(path, f.Src, 0o644); err != nil {
						return fmt.Errorf("write %s: %w", path, err)
					}
					fmt.Fprintln(stdio(ctx).out, path)
				}
				return nil
			}
		},
	}
}

// bindgen loads the WIT at paths, selects the world and generates the files for lang.
func bindgen(lang, world, name, cabi string, paths []string) ([]gogen.File, error) {
	w, err := wit.LoadWorld(world, paths...)
	if err != nil {
		return nil, err
	}
	if lang == "go" {
		return gogen.Generate(w, gogen.Options{Package: name, CABI: cabi})
	}
	if name == "" {
		name = tsdecl.Name(w.Name)
	}
	return []gogen.File{
		{Name: name + ".d.ts", Src: []byte(tsgen.Declare(w, name, tsdecl.JSON))},
		{Name: name + ".client.d.ts", Src: []byte(tsgen.Declare(w, name, tsdecl.CapnWeb))},
		{Name: "imports.d.ts", Src: []byte(tsgen.Modules(w))},
	}, nil
}
