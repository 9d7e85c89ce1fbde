package builder

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
)

// clangPath finds clang (Debian's clang package) or clang-14 (what it depends on): the names
// of cTools' first package.
func clangPath() (string, error) {
	for _, name := range cTools[0].names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("clang not found: install clang, lld, wasi-libc and libclang-rt-14-dev-wasm32 (Debian: sudo apt-get install clang lld wasi-libc libclang-rt-14-dev-wasm32)")
}

// buildC compiles the project's .c files into a wasm32-wasi reactor and componentizes it.
func (b *build) buildC(ctx context.Context, script, tmp string) ([]byte, error) {
	sources, err := filepath.Glob(filepath.Join(b.dir, "*.c"))
	if err != nil || len(sources) == 0 {
		return nil, fmt.Errorf("%s has no .c files", b.dir)
	}
	sort.Strings(sources)
	core := filepath.Join(tmp, "core.wasm")
	b.progress("%s: clang --target=wasm32-wasi -mexec-model=reactor (%d files)", b.cfg.Name, len(sources))
	args := append([]string{"--target=wasm32-wasi", "-mexec-model=reactor", "-O2", "-Wall", "-o", core}, sources...)
	return b.componentizeCore(ctx, script, "clang", exec.CommandContext(ctx, b.clang, args...), core, cExportHint)
}

// cExportHint says how a C export is declared.
func cExportHint(name string) string {
	return fmt.Sprintf("define a function with __attribute__((export_name(%q))) in a .c file", name)
}
