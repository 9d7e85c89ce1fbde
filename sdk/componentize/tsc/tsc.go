// Package tsc type-checks TypeScript with the compiler pinned in sdk/componentize/package.json
// (scripts/setup.sh installs it), for the tests of generated declarations and of the docs'
// code blocks.
package tsc

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Options are the compiler options Check uses: strict, no output, ES2022 modules resolved as
// a bundler (esbuild) does, the ES2022 library with esnext.disposable (the declarations of
// resource handles use Symbol.dispose), and no ambient @types packages.
var Options = []string{"--strict", "--noEmit", "--target", "es2022", "--module", "es2022",
	"--moduleResolution", "bundler", "--lib", "es2022,esnext.disposable", "--types", ""}

// Path returns the compiler of the repository at root, or an error saying how to install it.
func Path(root string) (string, error) {
	tsc, err := filepath.Abs(filepath.Join(root, "sdk", "componentize", "node_modules", ".bin", "tsc"))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(tsc); err != nil {
		return "", fmt.Errorf("no TypeScript compiler (scripts/setup.sh --deps installs it with sdk/componentize): %w", err)
	}
	return tsc, nil
}

// Check type-checks files (paths relative to dir) together in dir with Options, using the
// compiler of the repository at root; the error holds the compiler's diagnostics.
func Check(root, dir string, files ...string) error {
	tsc, err := Path(root)
	if err != nil {
		return err
	}
	cmd := exec.Command(tsc, append(append([]string{}, Options...), files...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tsc %s: %v\n%s", strings.Join(files, " "), err, out)
	}
	return nil
}
