// Package guesttest builds guest components from source for tests: each guest folder is built
// once per test process with sdk/build-gadget.sh (which also caches by content hash across
// runs). Under -short it skips the test, since building needs go, node and the npm tools.
package guesttest

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	builds = map[string]*build{}
	outDir string
)

type build struct {
	once sync.Once
	path string
	err  error
}

// Path returns the path of the component built from the guest folder dir, given relative to
// the repository root (for example "gadgets/counter-go").
func Path(tb testing.TB, dir string) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("skipped under -short: the test builds its guests with sdk/build-gadget.sh (go, node, npm)")
	}
	mu.Lock()
	b := builds[dir]
	if b == nil {
		b = &build{}
		builds[dir] = b
	}
	mu.Unlock()
	b.once.Do(func() { b.path, b.err = buildGuest(dir) })
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// Bytes returns the component built from dir (see Path).
func Bytes(tb testing.TB, dir string) []byte {
	tb.Helper()
	b, err := os.ReadFile(Path(tb, dir))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}

func buildGuest(dir string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	mu.Lock()
	if outDir == "" {
		outDir, err = os.MkdirTemp("", "atelier-guests-")
	}
	out := outDir
	mu.Unlock()
	if err != nil {
		return "", err
	}
	statInputs(root, dir)
	path := filepath.Join(out, filepath.Base(dir)+".wasm")
	cmd := exec.Command("bash", filepath.Join(root, "sdk", "build-gadget.sh"), filepath.Join(root, dir), path)
	if log, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("sdk/build-gadget.sh %s: %v\n%s\n(run scripts/setup.sh to install go, node and npm)", dir, err, log)
	}
	return path, nil
}

// repoRoot finds the repository root: the nearest parent of the working directory with go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the working directory")
		}
		dir = parent
	}
}

// statInputs stats every file the build of dir depends on. The build runs in a subprocess, so
// without this `go test` would cache a result even after the guest's sources changed; it
// re-runs the tests when a file it saw the test stat has changed.
func statInputs(root, dir string) {
	for _, d := range []string{dir, "sdk/go", "sdk/componentize/componentize.mjs", "sdk/build-gadget.sh", "wit"} {
		filepath.WalkDir(filepath.Join(root, d), func(path string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				os.Stat(path)
			}
			return nil
		})
	}
}
