package authoring

import (
	"os"
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
