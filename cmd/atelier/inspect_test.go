package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"atelier/sdk/templates/builder"
	"atelier/sdk/wit"
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

// TestInspectRefusesWhatIsNotAComponent: a file that is not WebAssembly at all is refused as
// "not a WebAssembly component", not with a WAT parse error.
func TestInspectRefusesWhatIsNotAComponent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(path, []byte("hello, world\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, 1, []string{"inspect", "--cache", t.TempDir(), path}, "compile "+path, "not a WebAssembly component")
}

// shapesWasm is a component whose WIT (sdk/wit/witdecode/testdata/shapes/shapes.wit) has two
// records with the same fields, aliases, a resource in signatures and a type used from another
// interface; it was built from shapes.wat there by sdk/build-gadget.sh.
const shapesWasm = "../../sdk/wit/witdecode/testdata/shapes/shapes.wasm"

// TestInspectOwnWIT: inspect prints the component's own names: records with identical fields
// under their own names, aliases and uses kept, resources by name in signatures; --wit prints
// WIT that loads; --json carries the same lines and the WIT.
func TestInspectOwnWIT(t *testing.T) {
	cache := t.TempDir()
	out := ok(t, "inspect", "--cache", cache, shapesWasm)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, want := range []string{
		"import atelier:probe/geometry@0.1.0.point: type record point { x: s32, y: s32 }",
		"import atelier:probe/geometry@0.1.0.size: type record size { x: s32, y: s32 }",
		"import atelier:probe/geometry@0.1.0.coord: type coord = point",
		"import atelier:probe/geometry@0.1.0.move: func(p: point, by: size) -> coord",
		"import atelier:probe/geometry@0.1.0.keep: func(a: thing) -> thing",
		"import atelier:probe/geometry@0.1.0.peek: func(a: borrow<thing>) -> list<size>",
		"import stretch: func(d: dim) -> dim",
		"export atelier:probe/api@0.1.0.thing: use atelier:probe/geometry@0.1.0.{thing}",
		"export atelier:probe/api@0.1.0.extent: type record extent { x: s32, y: s32 }",
		"export atelier:probe/api@0.1.0.keep: func(a: thing) -> thing",
		"export atelier:probe/api@0.1.0.move: func(p: point, by: extent) -> corner",
		"export atelier:probe/api@0.1.0.[method]counter.get: func(self: borrow<counter>) -> u32",
		"export area: func(d: dim) -> u32",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("inspect has no line %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "record {") || strings.Contains(out, "(resource") || strings.Contains(out, "-> resource") {
		t.Errorf("inspect spells out a named type or leaves a resource unnamed:\n%s", out)
	}

	text := ok(t, "inspect", "--wit", "--cache", cache, shapesWasm)
	if _, _, err := wit.LoadSource("shapes.wit", []byte(text)); err != nil {
		t.Errorf("inspect --wit printed WIT that does not load: %v\n%s", err, text)
	}
	for _, want := range []string{"world root {", "import atelier:probe/geometry@0.1.0;", "export atelier:probe/api@0.1.0;",
		"record size {", "type coord = point;", "keep: func(a: thing) -> thing;", "use geometry.{point, thing};"} {
		if !strings.Contains(text, want) {
			t.Errorf("inspect --wit has no %q:\n%s", want, text)
		}
	}

	var desc struct {
		Imports, Exports []string
		WIT              string
	}
	if err := json.Unmarshal([]byte(ok(t, "inspect", "--json", "--cache", cache, shapesWasm)), &desc); err != nil {
		t.Fatal(err)
	}
	if len(desc.Imports)+len(desc.Exports) != len(lines) || desc.WIT != text {
		t.Errorf("inspect --json has %d imports, %d exports and WIT %q; want the %d lines and the --wit text", len(desc.Imports), len(desc.Exports), desc.WIT, len(lines))
	}
	fails(t, 2, []string{"inspect", "--wit", "--json", shapesWasm}, "--wit and --json exclude each other")
}

// TestInspectMarksInternal: componentize-qjs's init export is listed, marked internal, in the
// lines read from the binary (the component is host/kernel/testdata/qjsinit.wat, converted to
// binary by sdk/build-gadget.sh).
func TestInspectMarksInternal(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: converts WAT with the npm tools")
	}
	src, err := os.ReadFile("../../host/kernel/testdata/qjsinit.wat")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "qjsinit.wat"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	wasm := filepath.Join(t.TempDir(), "qjsinit.wasm")
	if log, err := exec.Command("bash", "../../sdk/build-gadget.sh", "--lang", "wat", dir, wasm).CombinedOutput(); err != nil {
		t.Fatalf("build-gadget: %v\n%s", err, log)
	}
	out := ok(t, "inspect", "--cache", t.TempDir(), wasm)
	want := "export init: func(shim: string, script: string, entry-path: option<string>, disable-gc: bool) -> result<_, string> (internal: componentize-qjs's initializer, called once at build time; not callable)"
	if !slices.Contains(strings.Split(out, "\n"), want) {
		t.Errorf("inspect has no line %q:\n%s", want, out)
	}
	if !strings.Contains(out, "export hello: func() -> u32\n") {
		t.Errorf("inspect lost the public export hello:\n%s", out)
	}
}

// TestInspectWITOfText: --wit needs a binary, and says how to make one from WAT text.
func TestInspectWITOfText(t *testing.T) {
	fails(t, 1, []string{"inspect", "--wit", "--cache", t.TempDir(), "../../host/kernel/testdata/qjsinit.wat"}, "--wit reads a component binary", "sdk/build-gadget.sh --lang wat")
}
