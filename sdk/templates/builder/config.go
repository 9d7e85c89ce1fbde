// Package builder turns a project made by `atelier new` into a WebAssembly component: the Go
// equivalent of sdk/build-gadget.sh for projects outside the repository. It needs only the
// files embedded in package templates, which it extracts into a cache folder, and the tools it
// installs there on first use (the pinned npm packages) or through apt (clang for C; Node.js
// and npm when they are not on PATH).
//
// Languages:
//   - go: `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared`, then jco (componentEmbed +
//     componentNew with the wasi_snapshot_preview1 reactor adapter);
//   - js, ts: esbuild bundles the entry module (stripping TypeScript types) with the
//     `atelier:*` and `wasi:*` imports left external, then componentize-qjs --sync;
//   - c: clang --target=wasm32-wasi -mexec-model=reactor, then the same jco step as Go.
//
// A Go gatekeeper with "format": "extism" is built into an Extism plugin instead: the core
// module of the Go build, whose plugin functions are the world's connector functions
// (describe, resource_kinds, ...); it needs no npm tools.
//
// Before componentizing, Build checks that the code exports every function of the project's
// world and names the WIT line of each that is missing; for JS and TS, it also runs the
// module's top level in a sandbox (Options.RunJS; WIT imports stubbed) to check that each
// export is a function, or for an interface an object with its functions. When componentize refuses an export whose
// core signature is not the world's, the error names its source line (C export_name, Go
// //go:wasmexport), its WIT line and both signatures. Builds are cached under a hash of every
// input: a second build of unchanged sources costs a hash and a copy.
package builder

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"atelier/sdk/templates"
)

// ConfigFile is the project file `atelier new` writes and `atelier build` reads.
const ConfigFile = "atelier.json"

// Config is a project's atelier.json.
type Config struct {
	// Kind is gadget or gatekeeper.
	Kind string `json:"kind"`
	// Name names the output (build/NAME.wasm) and, for a gadget, the deployed gadget.
	Name string `json:"name"`
	// Lang is go, js, ts or c.
	Lang string `json:"lang"`
	// World is the world of the project's own WIT package (wit/*.wit) to build.
	World string `json:"world"`
	// Format is component (or empty) or, for a Go gatekeeper, extism: an Extism plugin.
	Format string `json:"format,omitempty"`
	// Entry is the JS or TS module to bundle (default app.js or app.ts).
	Entry string `json:"entry,omitempty"`
	// Grants are the interfaces the gadget is deployed with; the component may import no
	// others (besides the WASI baseline).
	Grants []string `json:"grants,omitempty"`
}

// ReadConfig reads DIR/atelier.json and fills in the defaults.
func ReadConfig(dir string) (Config, error) {
	var c Config
	b, err := os.ReadFile(filepath.Join(dir, ConfigFile))
	if errors.Is(err, fs.ErrNotExist) {
		return c, fmt.Errorf("%s has no %s: run `atelier build` in a folder made by `atelier new`, or pass that folder", dir, ConfigFile)
	}
	if err != nil {
		return c, fmt.Errorf("read %s: %w", ConfigFile, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%s: %w", filepath.Join(dir, ConfigFile), err)
	}
	switch c.Kind {
	case "gadget", "gatekeeper":
	default:
		return c, fmt.Errorf("%s: kind %q: want gadget or gatekeeper", ConfigFile, c.Kind)
	}
	switch c.Lang {
	case "go", "c":
	case "js", "ts":
		if c.Entry == "" {
			c.Entry = "app." + c.Lang
		}
		if filepath.IsAbs(c.Entry) || strings.Contains(filepath.ToSlash(c.Entry), "..") {
			return c, fmt.Errorf("%s: entry %q must be a file inside the project", ConfigFile, c.Entry)
		}
	default:
		return c, fmt.Errorf("%s: lang %q: want go, js, ts or c", ConfigFile, c.Lang)
	}
	if err := templates.CheckFormat(c.Kind, c.Lang, c.Format); err != nil {
		return c, fmt.Errorf("%s: %w", ConfigFile, err)
	}
	if c.Name == "" {
		c.Name = filepath.Base(dir)
	}
	return c, nil
}
