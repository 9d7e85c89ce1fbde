package main

import (
	"atelier/host/capability/outboundhttp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/extism"
	"atelier/host/runtime"
	"atelier/sdk/templates"
	"atelier/sdk/templates/builder"
	"atelier/sdk/templates/builder/jssandbox"
)

func buildCommand() command {
	return command{
		name:    "build",
		usage:   "[-o FILE] [--cache DIR] [DIR]",
		summary: "build a project made by 'atelier new' into a component (or gatekeeper package)",
		details: `Builds the project in DIR (default: the current folder) as its atelier.json says, and
writes build/NAME.wasm for a gadget, or build/NAME.gkp (manifest.json + gatekeeper.wasm, the
package 'atelier gatekeeper install' takes) for a gatekeeper.

Go projects are compiled with GOOS=wasip1, JS and TS ones bundled with esbuild (TypeScript
types are stripped), C ones compiled with clang for wasm32-wasi; then turned into a component
with the pinned npm tools (jco, componentize-qjs), which the first build installs into the
cache folder (about 340 MB). On Debian, missing tools are installed with apt (sudo when
not root): Node.js and npm, and for C clang, lld, wasi-libc and libclang-rt-14-dev-wasm32.
A Go gatekeeper whose atelier.json says "format": "extism" is built into an Extism plugin
(the Go build's core module; no npm tools) and packed with its sha256 in the manifest.

Before it writes anything, build checks the component: every function of the world must be
exported by the code, every import must be among the "grants" of atelier.json (gadgets), and a
gatekeeper must pass the checks of installation (manifest, imports, connector exports, resource
kinds). Unchanged projects come from the cache.

Example:
  atelier new gadget --lang go counter && atelier build counter`,
		flags: func(fs *flag.FlagSet) func(context.Context, []string) error {
			out := fs.String("o", "", "the output file (default: DIR/build/NAME.wasm or NAME.gkp)")
			cacheDir := fs.String("cache", "", "the folder for tools, builds and compiled artifacts (default: $ATELIER_CACHE or the user cache dir's atelier/)")
			return func(ctx context.Context, args []string) error {
				dir := "."
				switch len(args) {
				case 0:
				case 1:
					dir = args[0]
				default:
					return usageError{"want at most one project folder"}
				}
				return buildProject(ctx, dir, *out, *cacheDir)
			}
		},
	}
}

// buildProject builds the project in dir, checks the result and writes it to out.
func buildProject(ctx context.Context, dir, out, cacheDir string) error {
	std := stdio(ctx)
	if cacheDir == "" {
		d, err := builder.DefaultCacheDir()
		if err != nil {
			return err
		}
		cacheDir = d
	}
	artifacts := filepath.Join(cacheDir, "artifacts")
	res, err := builder.Build(ctx, dir, builder.Options{CacheDir: cacheDir, Log: std.err,
		RunJS: func(ctx context.Context, module string) (any, error) { return jssandbox.Run(ctx, artifacts, module) }})
	if err != nil {
		return err
	}
	cfg := res.Config
	data, ext := res.Component, ".wasm"
	if cfg.Kind == "gatekeeper" {
		if data, err = packGatekeeper(ctx, dir, cfg.Format, res.Component, artifacts); err != nil {
			return err
		}
		ext = ".gkp"
	} else if err := checkGadget(ctx, dir, res, artifacts); err != nil {
		return err
	}
	if out == "" {
		out = filepath.Join(dir, "build", cfg.Name+ext)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	fmt.Fprintf(std.out, "Built %s (%s)\nNext: %s\n", out, formatSize(int64(len(data))), deployHint(cfg.Kind, cfg.Name, cfg.Grants))
	return nil
}

// checkGadget compiles the component as the server will, refuses grants the server would
// refuse (runtime.CheckGrant) and checks its imports against the project's grants, naming the
// source line that imports a refused interface where it can.
func checkGadget(ctx context.Context, dir string, res *builder.Result, cacheDir string) error {
	rt, comp, err := compileComponent(ctx, res.Component, cacheDir)
	if err != nil {
		return fmt.Errorf("the built component does not compile: %w", err)
	}
	defer rt.Close()
	defer comp.Close()
	for _, g := range res.Config.Grants {
		if err := rt.CheckGrant(g); err != nil {
			return fmt.Errorf("%s: %w; remove it from \"grants\" there (the server refuses it)", builder.ConfigFile, err)
		}
	}
	err = comp.Audit().Check(rt, append(runtime.WASIBaseline(), res.Config.Grants...))
	if err == nil {
		return nil
	}
	var msgs []string
	for _, e := range unjoin(err) {
		var ungranted *runtime.UngrantedImportError
		if !errors.As(e, &ungranted) {
			msgs = append(msgs, e.Error())
			continue
		}
		how, at := "stop using it", findImport(dir, ungranted.Grant)
		if lang := res.Config.Lang; lang == "js" || lang == "ts" {
			how = fmt.Sprintf("remove it from world %s (componentize-qjs imports every interface the world names)", res.World.Name)
			at = res.World.Pos.String()
		}
		msg := fmt.Sprintf("the component imports %s, which %s does not grant: add %q to \"grants\" there (and to --grant when you deploy), or %s",
			ungranted.Import, builder.ConfigFile, ungranted.Grant, how)
		if at != "" {
			msg = at + ": " + msg
		}
		msgs = append(msgs, msg)
	}
	return errors.New(strings.Join(msgs, "\n"))
}

// unjoin returns the errors an errors.Join holds, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// findImport returns "file:line" of the first line of the project's own sources (not wit/,
// internal/ or build/) that uses the interface iface ("atelier:host/events"), or "": a line
// that names it (a JS import, a C import_module), or for Go a call of a function that the
// vendored internal/host declares next to the interface's //go:wasmimport.
func findImport(dir, iface string) string {
	mentions := func(line string) bool {
		return strings.Contains(line, iface+"@") || strings.Contains(line, iface+"'") || strings.Contains(line, iface+`"`)
	}
	if at := builder.FindLine(dir, false, mentions); at != "" {
		return at
	}
	// The Go functions that call the interface: those of a vendored internal/host file that
	// imports it, and the generated bindings' wrappers of its functions.
	var calls []string
	files, _ := filepath.Glob(filepath.Join(dir, "internal", "host", "*.go"))
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil || !strings.Contains(string(src), "//go:wasmimport "+iface+"@") {
			continue
		}
		for _, m := range exportedFunc.FindAllStringSubmatch(string(src), -1) {
			calls = append(calls, "host."+m[1]+"(")
		}
	}
	generated, _ := filepath.Glob(filepath.Join(dir, builder.BindingsDir, "*.go"))
	for _, f := range generated {
		src, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, m := range importWrapper.FindAllStringSubmatch(string(src), -1) {
			if m[2] == iface {
				calls = append(calls, "bindings."+m[1]+"(")
			}
		}
	}
	if len(calls) == 0 {
		return ""
	}
	return builder.FindLine(dir, false, func(line string) bool {
		for _, c := range calls {
			if strings.Contains(line, c) {
				return true
			}
		}
		return false
	})
}

// exportedFunc matches the declaration of an exported Go function.
var exportedFunc = regexp.MustCompile(`(?m)^func ([A-Z]\w*)\(`)

// importWrapper matches the doc comment of a generated bindings function that calls an
// imported WIT function: the Go name and the interface (without its version).
var importWrapper = regexp.MustCompile("(?m)^// (\\w+) calls the imported function `[^`]+` of ([^@\\s]+)@")

// packGatekeeper packs the component (or Extism plugin: format is atelier.json's) with the
// project's manifest.json, setting its component.sha256, and checks the package as `atelier
// gatekeeper install` will: the manifest, the imports against the gatekeeper world, the
// connector exports and the resource kinds the gatekeeper reports.
func packGatekeeper(ctx context.Context, dir, format string, wasm []byte, cacheDir string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, gatekeeper.ManifestFile))
	if err != nil {
		return nil, fmt.Errorf("a gatekeeper project needs its %s: %w", gatekeeper.ManifestFile, err)
	}
	var m gatekeeper.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, gatekeeper.ManifestFile), err)
	}
	// atelier.json's formats (sdk/templates, checked by builder.ReadConfig) named as
	// manifest.json's (host/gatekeeper): the two packages do not import each other.
	want := gatekeeper.FormatComponent
	if format == templates.FormatExtism {
		want = gatekeeper.FormatExtism
	}
	if got := m.PackageFormat(); got != want {
		return nil, fmt.Errorf("%s says format %s but %s says %s: make them agree (\"format\": %q in both for an Extism plugin, in neither for a component)",
			filepath.Join(dir, gatekeeper.ManifestFile), got, builder.ConfigFile, want, gatekeeper.FormatExtism)
	}
	archive, err := gatekeeper.Pack(m, wasm)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, gatekeeper.ManifestFile), err)
	}
	pkg, err := gatekeeper.Open(archive)
	if err != nil {
		return nil, err
	}
	if err := tryInstall(ctx, pkg, cacheDir); err != nil {
		return nil, fmt.Errorf("the package would be refused: %w", err)
	}
	return archive, nil
}

// tryInstall installs pkg as the server would, with the installer of its format, and
// uninstalls it.
func tryInstall(ctx context.Context, pkg *gatekeeper.Package, cacheDir string) error {
	if pkg.Manifest.PackageFormat() == gatekeeper.FormatExtism {
		eng, err := extism.New(extism.Options{})
		if err != nil {
			return err
		}
		defer eng.Close()
		gk, err := eng.Install(ctx, pkg)
		if err != nil {
			return err
		}
		gk.Close()
		return nil
	}
	rt, err := gatekeeperRuntime(cacheDir, outboundhttp.Options{}, nil)
	if err != nil {
		return err
	}
	defer rt.Close()
	gk, err := gatekeeper.Install(ctx, rt, pkg)
	if err != nil {
		return err
	}
	gk.Close()
	return nil
}
