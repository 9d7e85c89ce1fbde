package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atelier/sdk/templates/builder"
)

// TestInspect builds the Go gadget template and inspects the component: the output has each
// export of the project's world with the signature its WIT line declares, the atelier:host
// imports the code uses (and no others), and --grant checks the imports as the server does.
func TestInspect(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: runs go and the npm tools")
	}
	dir := newProject(t, "gadget", "go", nil)
	ok(t, "build", dir)
	wasm := filepath.Join(dir, "build", "probe.wasm")
	out := ok(t, "inspect", wasm)
	lines := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		lines[l] = true
	}
	w, err := builder.LoadWorld(dir, "probe")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join(dir, "wit", "world.wit"))
	if err != nil {
		t.Fatal(err)
	}
	witLines := strings.Split(string(src), "\n")
	if len(w.Exports) != 3 {
		t.Fatalf("the template's world exports %d items, want 3", len(w.Exports))
	}
	for _, it := range w.Exports {
		want := strings.TrimSuffix(strings.TrimSpace(witLines[it.Pos.Line-1]), ";") // "export get: func() -> u64"
		if !lines[want] {
			t.Errorf("inspect has no line %q (world.wit:%d):\n%s", want, it.Pos.Line, out)
		}
	}
	for _, want := range []string{
		"import atelier:host/kv@0.1.0.get: func(key: string) -> result<option<list<u8>>, error>",
		"import atelier:host/kv@0.1.0.set: func(key: string, value: list<u8>) -> result<_, error>",
		"import atelier:host/log@0.1.0.write: func(level: level, message: string)",
	} {
		if !lines[want] {
			t.Errorf("inspect has no line %q:\n%s", want, out)
		}
	}
	for l := range lines {
		if l != "" && !strings.HasPrefix(l, "import ") && !strings.HasPrefix(l, "export ") {
			t.Errorf("inspect printed %q, neither an import nor an export", l)
		}
		if strings.HasPrefix(l, "import atelier:") && !strings.HasPrefix(l, "import atelier:host/kv@") && !strings.HasPrefix(l, "import atelier:host/log@") {
			t.Errorf("inspect lists %q, which the code does not use", l)
		}
	}
	fails(t, 1, []string{"inspect", "--grant", "atelier:host/kv", wasm}, `import "atelier:host/log@0.1.0" is not granted`, `grant "atelier:host/log"`)
	if out := ok(t, "inspect", "--grant", "atelier:host/kv,atelier:host/log", wasm); !strings.Contains(out, "grants: every import is covered") {
		t.Errorf("inspect with both grants printed no verdict:\n%s", out)
	}
	fails(t, 1, []string{"inspect", filepath.Join(dir, "main.go")}, "compile "+filepath.Join(dir, "main.go"))
}
