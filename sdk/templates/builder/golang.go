package builder

import (
	"atelier/sdk/wit/gogen"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// buildGo compiles the project's main package for wasip1 and componentizes it.
func (b *build) buildGo(ctx context.Context, script, tmp string) ([]byte, error) {
	core := filepath.Join(tmp, "core.wasm")
	b.progress("%s: go build (GOOS=wasip1 GOARCH=wasm, c-shared)", b.cfg.Name)
	return b.componentizeCore(ctx, script, "go build", b.goBuild(ctx, core), core, goExportHint)
}

// buildExtism compiles the project's main package for wasip1 into an Extism plugin and checks
// that it exports a plugin function for each function of the world.
func (b *build) buildExtism(ctx context.Context, tmp string) ([]byte, error) {
	core := filepath.Join(tmp, "plugin.wasm")
	b.progress("%s: go build (GOOS=wasip1 GOARCH=wasm, c-shared): an Extism plugin", b.cfg.Name)
	if err := b.compileCore("go build", b.goBuild(ctx, core), core, goExportHint); err != nil {
		return nil, err
	}
	return os.ReadFile(core)
}

// goBuild is the command that compiles the project's main package into the reactor module out.
func (b *build) goBuild(ctx context.Context, out string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", out, ".")
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "CGO_ENABLED=0")
	return cmd
}

// goExportHint says how a Go export is declared.
func goExportHint(name string) string {
	return fmt.Sprintf("add a function marked `//go:wasmexport %s` to a .go file of the main package", name)
}

// BindingsDir is the package of a Go gadget that atelier build generates from its world.
const BindingsDir = "bindings"

// generateGoBindings writes the Go bindings of the project's world (what `atelier bindgen
// --lang go` writes) into BindingsDir, using the project's copy of the canonical-ABI helpers
// (internal/cabi). A file whose content is unchanged is not rewritten.
func (b *build) generateGoBindings() error {
	mod, err := goModule(b.dir)
	if err != nil {
		return err
	}
	files, err := gogen.Generate(b.world, gogen.Options{Package: BindingsDir, CABI: mod + "/internal/cabi"})
	if err != nil {
		return fmt.Errorf("generate Go bindings of world %s: %w", b.cfg.World, err)
	}
	dir := filepath.Join(b.dir, BindingsDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, f.Src) {
			continue
		}
		if err := os.WriteFile(path, f.Src, 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		b.progress("%s: generated %s from the world", b.cfg.Name, filepath.Join(BindingsDir, f.Name))
	}
	return nil
}

// goModule returns the module path that dir/go.mod declares.
func goModule(dir string) (string, error) {
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return "", fmt.Errorf("a Go project needs a go.mod: %w", err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s declares no module", filepath.Join(dir, "go.mod"))
}
