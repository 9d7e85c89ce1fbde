package wit_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"atelier/sdk/wit"
)

// repoRoot is the repository root, two levels above this package.
var repoRoot = filepath.Join("..", "..")

// projectPackages are the project's own WIT packages, supplied to every guest as dependencies.
var projectPackages = []string{"wit/host", "wit/gadget", "wit/gatekeeper", "wit/js"}

func repoPaths(rel ...string) []string {
	out := make([]string, len(rel))
	for i, r := range rel {
		out[i] = filepath.Join(repoRoot, r)
	}
	return out
}

// witDirs returns the directories under root (relative to the repository) that hold .wit files,
// skipping node_modules, build caches and this package's test data.
func witDirs(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(filepath.Join(repoRoot, root), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != filepath.Join(repoRoot, root) && (d.Name() == "node_modules" || strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".wit") {
			seen[filepath.Dir(path)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return slices.Sorted(func(yield func(string) bool) {
		for d := range seen {
			if !yield(d) {
				return
			}
		}
	})
}

// countFiles returns how many .wit files the packages of res were read from.
func countFiles(res *wit.Resolve) int {
	n := 0
	for _, p := range res.Packages {
		n += len(p.Files)
	}
	return n
}

// TestProjectWIT loads every WIT package the project ships: the atelier:* packages together,
// then each guest's package with them as dependencies.
func TestProjectWIT(t *testing.T) {
	base := repoPaths(projectPackages...)
	res, roots, err := wit.Load(base...)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range roots {
		if p == nil || len(p.Interfaces)+len(p.Worlds) == 0 {
			t.Fatalf("%s: empty package %v", projectPackages[i], p)
		}
	}
	roundTrip(t, "project", res)
	gadget, err := res.SelectWorld(res.Package("atelier:gadget@0.1.0"), "")
	if err != nil {
		t.Fatal(err)
	}
	if got := len(gadget.AllImports); got != 4 {
		t.Errorf("atelier:gadget/gadget imports %d interfaces, want 4", got)
	}
	files := 0
	for _, dir := range witDirs(t, ".") {
		if slices.Contains(base, dir) {
			continue
		}
		res, roots, err := wit.Load(append([]string{dir}, base...)...)
		if err != nil {
			t.Errorf("%s: %v", dir, err)
			continue
		}
		files += len(roots[0].Files)
		roundTrip(t, dir, res)
		if _, err := res.SelectWorld(roots[0], ""); err != nil {
			t.Errorf("%s: %v", dir, err)
		}
	}
	t.Logf("project: %d files in the atelier packages, %d in guests", countFiles(res), files)
}

// nodeModules returns the directory of the npm tools' WIT, skipping the test when the tools
// are not installed (scripts/setup.sh --deps installs them).
func nodeModules(t *testing.T) string {
	dir := filepath.Join(repoRoot, "sdk", "componentize", "node_modules", "@bytecodealliance")
	if _, err := os.Stat(filepath.Join(dir, "jco", "lib", "wit", "builtin")); err != nil {
		t.Skip("npm tools not installed (run scripts/setup.sh --deps): no WASI WIT to test against")
	}
	return dir
}

func subdirs(t *testing.T, dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// TestToolchainWIT loads the real-world WIT that jco ships: WASI 0.2.10, 0.2.12 and 0.3.0 (with
// async functions, streams and futures), wasi:tls and jco's Node.js packages.
func TestToolchainWIT(t *testing.T) {
	nm := nodeModules(t)
	builtin := filepath.Join(nm, "jco", "lib", "wit", "builtin")
	wasi := map[string][]string{}
	total := 0
	for _, v := range []string{"0.2.10", "0.2.12", "0.3.0"} {
		wasi[v] = subdirs(t, filepath.Join(builtin, v))
	}
	sets := map[string][]string{
		"wasi 0.2.10":  wasi["0.2.10"],
		"wasi 0.2.12":  wasi["0.2.12"],
		"wasi 0.3.0":   wasi["0.3.0"],
		"jco-node":     append([]string{filepath.Join(builtin, "jco-node-0.1.0"), filepath.Join(builtin, "wasi-tls-0.2.0-draft")}, wasi["0.2.12"]...),
		"jco-std node": append([]string{filepath.Join(nm, "jco-std", "wit", "node-0.1.0"), filepath.Join(nm, "jco-std", "wit", "tls-0.2.0-draft")}, wasi["0.2.12"]...),
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range sets {
			if !yield(k) {
				return
			}
		}
	}) {
		res, _, err := wit.Load(sets[name]...)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		n := countFiles(res)
		roundTrip(t, name, res)
		total += n
		t.Logf("%s: %d packages from %d files", name, len(res.Packages), n)
	}
	t.Logf("toolchain: %d files resolved", total)
}

// TestJcoOutput resolves the WIT that `jco wit` printed for components built in this
// repository (testdata/jco), against the project's packages and WASI 0.2.12.
func TestJcoOutput(t *testing.T) {
	nm := nodeModules(t)
	deps := append(repoPaths(projectPackages...), subdirs(t, filepath.Join(nm, "jco", "lib", "wit", "builtin", "0.2.12"))...)
	files, err := filepath.Glob(filepath.Join("testdata", "jco", "*.wit"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/jco files (%v)", err)
	}
	for _, f := range files {
		res, roots, err := wit.Load(append([]string{f}, deps...)...)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		roundTrip(t, f, res)
		w, err := res.SelectWorld(roots[0], "")
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if len(w.AllExports) == 0 {
			t.Errorf("%s: world %s exports nothing", f, w.ID())
		}
	}
}

// BenchmarkLoadWASI measures loading and resolving WASI 0.2.12 (7 packages).
func BenchmarkLoadWASI(b *testing.B) {
	dir := filepath.Join(repoRoot, "sdk", "componentize", "node_modules", "@bytecodealliance", "jco", "lib", "wit", "builtin", "0.2.12")
	entries, err := os.ReadDir(dir)
	if err != nil {
		b.Skip("npm tools not installed (run scripts/setup.sh --deps)")
	}
	var paths []string
	for _, e := range entries {
		paths = append(paths, filepath.Join(dir, e.Name()))
	}
	for b.Loop() {
		if _, _, err := wit.Load(paths...); err != nil {
			b.Fatal(err)
		}
	}
}
