package authoring

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/tests/serveproc"
)

// TestBuildInstallsTools builds a JS gadget with an empty tool cache, as a user's first build
// does (npm's own download cache is left as it is), and checks the progress lines `atelier
// build` prints while it installs the npm tools, in order; then that the next project reuses
// the tools without installing them again.
func TestBuildInstallsTools(t *testing.T) {
	cache := filepath.Join(t.TempDir(), "atelier")
	c := cli{t: t, bin: serveproc.Binary(t, tmpDir), env: append(os.Environ(), "ATELIER_CACHE="+cache)}
	work := t.TempDir()
	c.run(work, "new", "gadget", "--lang", "js", "first")
	start := time.Now()
	_, progress, err := c.try(work, "build", "first")
	if err != nil {
		t.Fatalf("atelier build: %v\n%s", err, progress)
	}
	t.Logf("FIGURE first build with the npm tools installed (npm's download cache as found): %s", time.Since(start).Round(100*time.Millisecond))
	inOrder(t, progress,
		"atelier build: installing npm tools (jco, componentize-qjs; about 340 MB, once) into "+filepath.Join(cache, "tools", "componentize-"),
		"atelier build: npm tools installed in ",
		"atelier build: first: esbuild bundle app.js",
		"atelier build: first: componentize-qjs (world first)",
		"atelier build: first (js): component of ")
	if _, err := os.Stat(filepath.Join(work, "first", "build", "first.wasm")); err != nil {
		t.Fatalf("no component after the build: %v", err)
	}
	c.run(work, "new", "gadget", "--lang", "ts", "second")
	_, progress, err = c.try(work, "build", "second")
	if err != nil {
		t.Fatalf("second atelier build: %v\n%s", err, progress)
	}
	if strings.Contains(progress, "installing npm tools") {
		t.Errorf("the second build installed the npm tools again:\n%s", progress)
	}
	inOrder(t, progress, "atelier build: second: esbuild bundle app.ts", "atelier build: second (ts): component of ")
}

// inOrder fails the test unless each of lines starts a line of out, in this order.
func inOrder(t *testing.T, out string, lines ...string) {
	t.Helper()
	rest := "\n" + out
	for _, l := range lines {
		i := strings.Index(rest, "\n"+l)
		if i < 0 {
			t.Fatalf("no line starting %q (in this order) in the progress output:\n%s", l, out)
		}
		rest = rest[i+1:]
	}
}

// TestBuildAfterSetupInstallsNothing: sdk/build-gadget.sh finds the npm tools that
// scripts/setup.sh installed and does not run npm again (it used to look for a marker setup
// never wrote, and reinstalled them on the first build); a changed lock file installs again.
// It runs in a copy of the scripts and the tools' manifest, with an `npm` on PATH that
// records each call and installs as `npm ci` would (node_modules and npm's
// .package-lock.json), from the packages setup installed in this checkout.
func TestBuildAfterSetupInstallsNothing(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	setup, err := os.ReadFile(filepath.Join(root, "scripts", "setup.sh"))
	if err != nil {
		t.Fatal(err)
	}
	const setupStep = "scripts/npm-ci.sh sdk/componentize " // what setup runs for the npm tools
	if !strings.Contains(string(setup), setupStep) {
		t.Fatalf("scripts/setup.sh no longer installs the npm tools with %q: update this test", setupStep)
	}
	installed, err := filepath.EvalSymlinks(filepath.Join(root, "sdk", "componentize", "node_modules"))
	if err != nil {
		t.Fatalf("the npm tools are not installed (%v): run scripts/setup.sh", err)
	}

	tree := t.TempDir()
	for _, f := range []string{"scripts/npm-ci.sh", "sdk/build-gadget.sh", "sdk/componentize/package.json", "sdk/componentize/package-lock.json", "sdk/componentize/componentize.mjs"} {
		copyFile(t, filepath.Join(root, f), filepath.Join(tree, f))
	}
	if err := os.CopyFS(filepath.Join(tree, "wit"), os.DirFS(filepath.Join(root, "wit"))); err != nil {
		t.Fatal(err)
	}
	shims, log := t.TempDir(), filepath.Join(t.TempDir(), "npm.log")
	npm := `#!/bin/sh
echo "npm $*" >> '` + log + `'
[ "$1" = ci ] || { echo "npm shim: only ci" >&2; exit 1; }
rm -rf node_modules && mkdir node_modules || exit 1
for e in '` + installed + `'/* '` + installed + `'/.bin; do ln -s "$e" node_modules/ || exit 1; done
cp '` + installed + `'/.package-lock.json node_modules/
`
	if err := os.WriteFile(filepath.Join(shims, "npm"), []byte(npm), 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"), "ATELIER_BUILD_CACHE="+filepath.Join(tree, "cache"))
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Dir, cmd.Env = tree, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	npmCalls := func() []string {
		b, err := os.ReadFile(log)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return strings.Fields(strings.ReplaceAll(strings.TrimSpace(string(b)), " ", "_"))
	}

	run("sh", "-c", setupStep) // setup's step: installs
	if calls := npmCalls(); len(calls) != 1 || !strings.HasPrefix(calls[0], "npm_ci") {
		t.Fatalf("setup's step ran npm %v, want one npm ci", calls)
	}
	if out := run("sh", "-c", setupStep); !strings.Contains(out, "sdk/componentize/node_modules is up to date") || len(npmCalls()) != 1 {
		t.Fatalf("setup's step again: npm %v, output:\n%s", npmCalls(), out)
	}
	guest := filepath.Join(tree, "guest")
	if err := os.MkdirAll(guest, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(guest, "empty.wat"), []byte("(component)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := run("sdk/build-gadget.sh", "guest", "out.wasm")
	if calls := npmCalls(); len(calls) != 1 || strings.Contains(out, "install") {
		t.Fatalf("the build after setup ran npm again (calls: %v):\n%s", calls, out)
	}
	if b, err := os.ReadFile(filepath.Join(tree, "out.wasm")); err != nil || !strings.HasPrefix(string(b), "\x00asm") {
		t.Fatalf("no component built (%v):\n%s", err, out)
	}

	// A new lock file is installed again, once.
	f, err := os.OpenFile(filepath.Join(tree, "sdk/componentize/package-lock.json"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n")
	f.Close()
	os.Remove(filepath.Join(tree, "out.wasm"))
	run("sdk/build-gadget.sh", "guest", "out.wasm")
	run("sdk/build-gadget.sh", "guest", "out.wasm")
	if calls := npmCalls(); len(calls) != 2 {
		t.Fatalf("after the lock file changed, npm ran %v, want one more npm ci", calls)
	}
}

// copyFile copies src to dst (creating its folder), keeping the mode.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, st.Mode().Perm()); err != nil {
		t.Fatal(err)
	}
}
