package builder

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// buildGo compiles the project's main package for wasip1 and componentizes it.
func (b *build) buildGo(ctx context.Context, script, tmp string) ([]byte, error) {
	core := filepath.Join(tmp, "core.wasm")
	b.progress("%s: go build (GOOS=wasip1 GOARCH=wasm, c-shared)", b.cfg.Name)
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", core, ".")
	cmd.Dir = b.dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "CGO_ENABLED=0")
	if out, err := b.run("go build", cmd, false); err != nil {
		return nil, fmt.Errorf("go build failed:\n%s", b.relDisplay(out))
	}
	if err := b.checkCoreExports(core, goExportHint); err != nil {
		return nil, err
	}
	return b.componentize(ctx, script, "go", core, filepath.Join(tmp, "out.wasm"))
}

// goExportHint says how a Go export is declared.
func goExportHint(name string) string {
	return fmt.Sprintf("add a function marked `//go:wasmexport %s` to a .go file of the main package", name)
}
