package wit_test

import (
	"bytes"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"atelier/sdk/guesttest"
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

// jcoGuests are the guests whose `jco wit` output testdata/jco holds, by file name: Go and JS
// gadgets, a gatekeeper, a test guest, and slides-go, which exports an interface with a
// resource.
var jcoGuests = map[string]string{
	"counter-go": "gadgets/counter-go",
	"todo-go":    "gadgets/todo-go",
	"todo-js":    "gadgets/todo-js",
	"slides-go":  "gadgets/slides-go",
	"notes-go":   "gatekeepers/notes-go",
	"host-api":   "tests/runtime/guests/host-api",
}

// loadJco resolves the WIT `jco wit` printed for guest (file is its path, for messages)
// against the project's packages, WASI 0.2.12 and the guest's own package (`jco wit` prints
// the component's world only: the interfaces it names come from their packages), and returns
// the component's world.
func loadJco(t *testing.T, nm, file string, src []byte, guest string) *wit.World {
	t.Helper()
	deps := append(repoPaths(projectPackages...), subdirs(t, filepath.Join(nm, "jco", "lib", "wit", "builtin", "0.2.12"))...)
	dir := t.TempDir()
	path := filepath.Join(dir, filepath.Base(file))
	if err := os.WriteFile(path, src, 0o644); err != nil {
		t.Fatal(err)
	}
	res, roots, err := wit.Load(append([]string{path}, append(deps, repoPaths(guest+"/wit")...)...)...)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	roundTrip(t, file, res)
	w, err := res.SelectWorld(roots[0], "")
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(w.AllExports) == 0 {
		t.Errorf("%s: world %s exports nothing", file, w.ID())
	}
	return w
}

// TestJcoOutput resolves the WIT that `jco wit` printed for components built in this
// repository (testdata/jco; TestJcoWit checks that it is current).
func TestJcoOutput(t *testing.T) {
	nm := nodeModules(t)
	files, err := filepath.Glob(filepath.Join("testdata", "jco", "*.wit"))
	if err != nil || len(files) != len(jcoGuests) {
		t.Fatalf("testdata/jco holds %d files, want one per guest of jcoGuests (%v)", len(files), err)
	}
	for _, f := range files {
		guest := jcoGuests[strings.TrimSuffix(filepath.Base(f), ".wit")]
		if guest == "" {
			t.Errorf("%s: no guest in jcoGuests", f)
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		loadJco(t, nm, f, src, guest)
	}
}

// TestJcoWit builds each guest of jcoGuests (guesttest: sdk/build-gadget.sh, cached), prints
// its WIT with `jco wit`, checks that testdata/jco holds that output (-update rewrites it),
// resolves it and compares the component's world with the guest's source world: every
// export is there with the same signature, and every import is one of the source's or WASI.
func TestJcoWit(t *testing.T) {
	nm := nodeModules(t)
	jco := filepath.Join(nm, "..", ".bin", "jco")
	for _, name := range slices.Sorted(maps.Keys(jcoGuests)) {
		guest := jcoGuests[name]
		t.Run(name, func(t *testing.T) {
			out, err := exec.Command(jco, "wit", guesttest.Path(t, guest)).Output()
			if err != nil {
				t.Fatalf("jco wit %s: %v", guest, err)
			}
			saved := filepath.Join("testdata", "jco", name+".wit")
			if *update {
				if err := os.WriteFile(saved, out, 0o644); err != nil {
					t.Fatal(err)
				}
			} else if old, err := os.ReadFile(saved); err != nil || !bytes.Equal(old, out) {
				t.Errorf("%s is not what jco wit prints for %s now (go test ./sdk/wit -run TestJcoWit -update):\n%s", saved, guest, firstDiff(string(old), string(out)))
			}
			got := loadJco(t, nm, saved, out, guest)
			src, err := wit.LoadWorld("", append(repoPaths(guest+"/wit"), repoPaths(projectPackages...)...)...)
			if err != nil {
				t.Fatal(err)
			}
			compareWorlds(t, got, src)
		})
	}
}

// compareWorlds checks that got, the world of a component, exports what src, the world it was
// built from, exports (functions by signature, interfaces by identity), and imports nothing
// but src's imports and WASI.
func compareWorlds(t *testing.T, got, src *wit.World) {
	t.Helper()
	items := func(list []*wit.WorldItem) map[string]*wit.WorldItem {
		m := map[string]*wit.WorldItem{}
		for _, it := range list {
			m[it.Key()] = it
		}
		return m
	}
	exports, imports := items(got.AllExports), items(src.AllImports)
	for _, want := range src.AllExports {
		have := exports[want.Key()]
		switch {
		case have == nil:
			t.Errorf("the component does not export %s", want.Key())
		case want.Kind == wit.ItemFunc && (have.Kind != wit.ItemFunc || funcSig(have.Func) != funcSig(want.Func)):
			t.Errorf("export %s: component has %s, source %s", want.Key(), funcSig(have.Func), funcSig(want.Func))
		case want.Kind == wit.ItemInterface && (have.Interface == nil || have.Interface.ID() != want.Interface.ID()):
			t.Errorf("export %s: the component's is not interface %s", want.Key(), want.Interface.ID())
		case want.Kind == wit.ItemInterface && !slices.Equal(resources(have.Interface), resources(want.Interface)):
			t.Errorf("export %s: resources %v, source %v", want.Key(), resources(have.Interface), resources(want.Interface))
		}
	}
	for _, it := range got.AllImports {
		if imports[it.Key()] == nil && !strings.HasPrefix(it.Key(), "wasi:") {
			t.Errorf("the component imports %s, which its source world does not", it.Key())
		}
	}
	t.Logf("%s: %d exports, %d imports", src.ID(), len(got.AllExports), len(got.AllImports))
}

// resources lists the resources of an interface with their functions ("deck: name(...) ...").
func resources(i *wit.Interface) []string {
	var out []string
	for _, d := range i.Types {
		if d = d.Underlying(); d.Kind != wit.DefResource {
			continue
		}
		r := d.Name + ":"
		for _, f := range append(append([]*wit.Func{d.Constructor}, d.Methods...), d.Statics...) {
			if f != nil {
				r += " " + f.CoreName() + "(" + funcSig(f) + ")"
			}
		}
		out = append(out, r)
	}
	return out
}

// funcSig renders f's parameters and result.
func funcSig(f *wit.Func) string {
	if f == nil {
		return "(not a function)"
	}
	return wit.Signature(f)
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
