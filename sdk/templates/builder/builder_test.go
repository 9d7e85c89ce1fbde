package builder

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"atelier/sdk/templates"
	"atelier/sdk/templates/builder/jssandbox"
)

// project makes a project from a template (kind, and lang or "go-extism" for the Go Extism
// gatekeeper) in a temporary folder and applies edits (file -> func(old) new) to it.
func project(t *testing.T, kind, lang string, edits map[string]func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "probe")
	p := templates.Project{Kind: kind, Lang: lang, Name: "probe"}
	if lang == "go-extism" {
		p.Lang, p.Format = "go", templates.FormatExtism
	}
	if _, err := templates.Create(dir, p); err != nil {
		t.Fatal(err)
	}
	for name, edit := range edits {
		path := filepath.Join(dir, name)
		old, err := os.ReadFile(path)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(edit(string(old))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// module is a core module exporting the functions names (type () -> ()).
func module(names ...string) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	b = append(b, 1, 4, 1, 0x60, 0, 0) // type section: one func type () -> ()
	funcs := []byte{byte(len(names))}
	for range names {
		funcs = append(funcs, 0)
	}
	b = append(b, 3, byte(len(funcs)))
	b = append(b, funcs...)
	exports := []byte{byte(len(names))}
	for i, n := range names {
		exports = append(exports, byte(len(n)))
		exports = append(exports, n...)
		exports = append(exports, 0, byte(i))
	}
	b = append(b, 7, byte(len(exports)))
	b = append(b, exports...)
	code := []byte{byte(len(names))}
	for range names {
		code = append(code, 2, 0, 0x0b)
	}
	b = append(b, 10, byte(len(code)))
	return append(b, code...)
}

func TestCoreExports(t *testing.T) {
	got, err := coreExports(module("increment", "atelier:gatekeeper/connector@0.1.0#describe"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"increment": true, "atelier:gatekeeper/connector@0.1.0#describe": true}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("coreExports = %v, want %v", got, want)
	}
	good := module("a")
	for _, bad := range [][]byte{nil, []byte("\x00asm\x0d\x00\x01\x00"), good[:21], append(good[:8:8], 7, 9, 1)} {
		if _, err := coreExports(bad); err == nil {
			t.Errorf("coreExports(%x) = nil error, want one", bad)
		}
	}
}

// TestMissingExports checks the message for a world export the code lacks: the WIT line and
// what to write, per language.
func TestMissingExports(t *testing.T) {
	dir := project(t, "gadget", "go", nil)
	w, err := LoadWorld(dir, "probe")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{"increment": true, "get": true}
	err = missingExports(worldExports(w), func(e wantExport) bool { return have[e.core] }, goExportHint)
	if err == nil || !strings.Contains(err.Error(), "world.wit:") || !strings.Contains(err.Error(), "export reset is not implemented") ||
		!strings.Contains(err.Error(), "//go:wasmexport reset") {
		t.Fatalf("missing reset: %v", err)
	}
	gk := project(t, "gatekeeper", "js", nil)
	w, err = LoadWorld(gk, "probe")
	if err != nil {
		t.Fatal(err)
	}
	if err := missingExports(worldExports(w), func(e wantExport) bool { return e.js == "connector" }, nil); err != nil {
		t.Fatalf("a JS module exporting connector: %v", err)
	}
	err = missingExports(worldExports(w), func(wantExport) bool { return false }, nil)
	if err == nil || strings.Count(err.Error(), "named connector") != 1 {
		t.Fatalf("a JS module without connector: %v (want one line naming connector)", err)
	}
}

func TestReadConfig(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), "atelier new") {
		t.Fatalf("no atelier.json: %v", err)
	}
	for body, want := range map[string]string{
		`{"kind":"gadget","lang":"rust"}`:                     "lang",
		`{"kind":"widget","lang":"go"}`:                       "kind",
		`{"kind":"gadget","lang":"js","entry":"../../x.js"}`:  "inside the project",
		`{"kind":"gadget","lang":"js","entry":"/etc/passwd"}`: "inside the project",
		`{`: "unexpected end",
		`{"kind":"gadget","lang":"go","format":"extism"}`:     "for gatekeepers in Go",
		`{"kind":"gatekeeper","lang":"js","format":"extism"}`: "for gatekeepers in Go",
		`{"kind":"gatekeeper","lang":"go","format":"wasm"}`:   `format "wasm"`,
	} {
		os.WriteFile(filepath.Join(dir, ConfigFile), []byte(body), 0o644)
		if _, err := ReadConfig(dir); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error about %s", body, err, want)
		}
	}
	os.WriteFile(filepath.Join(dir, ConfigFile), []byte(`{"kind":"gadget","lang":"ts"}`), 0o644)
	c, err := ReadConfig(dir)
	if err != nil || c.Entry != "app.ts" || c.Name != filepath.Base(dir) {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
}

func TestDebianTools(t *testing.T) {
	only := func(names ...string) func(string) bool {
		return func(n string) bool {
			for _, x := range names {
				if x == n {
					return true
				}
			}
			return false
		}
	}
	if got := missingDebian(cTools, only("clang-14", "lld-14", "wasi-libc", "libclang-rt-14-dev-wasm32")); got != nil {
		t.Errorf("versioned packages installed: missing %v, want none", got)
	}
	if got, want := missingDebian(cTools, only("clang")), []string{"lld", "wasi-libc", "libclang-rt-14-dev-wasm32"}; !reflect.DeepEqual(got, want) {
		t.Errorf("missing = %v, want %v", got, want)
	}
	pkgs := []string{"lld", "wasi-libc"}
	update, install, hint := aptCommand(pkgs, 1000, false)
	if update != nil || install != nil || hint != "sudo apt-get update && sudo apt-get install -y --no-install-recommends lld wasi-libc" {
		t.Errorf("not root, no sudo: %q %q, hint %q", update, install, hint)
	}
	_, install, _ = aptCommand(pkgs, 1000, true)
	if install[0] != "sudo" {
		t.Errorf("with sudo: %q", install)
	}
	update, install, _ = aptCommand(pkgs, 0, false)
	if update[0] != "apt-get" || install[0] != "apt-get" {
		t.Errorf("as root: %q %q", update, install)
	}
	onPath := func(cmds ...string) func(string) (string, error) {
		return func(c string) (string, error) {
			if only(cmds...)(c) {
				return "/usr/bin/" + c, nil
			}
			return "", exec.ErrNotFound
		}
	}
	if got := missingNode(onPath("node", "npm")); got != nil {
		t.Errorf("node and npm on PATH: missing %v", got)
	}
	if got, want := missingNode(onPath("node")), []string{"npm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("npm missing: %v, want %v", got, want)
	}
	if got, want := missingNode(onPath()), []string{"nodejs", "npm"}; !reflect.DeepEqual(got, want) {
		t.Errorf("neither: %v, want %v", got, want)
	}
}

// TestBuildErrors builds broken projects and checks that each error says where and what.
func TestBuildErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: runs go, clang, node and the npm tools")
	}
	cache, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	drop := func(what string) func(string) string {
		return func(s string) string { return strings.Replace(s, what, "", 1) }
	}
	for _, tc := range []struct {
		name, kind, lang string
		edits            map[string]func(string) string
		want             []string
	}{
		{"go missing export", "gadget", "go", map[string]func(string) string{"main.go": func(s string) string {
			return strings.Replace(s, "func (counter) Reset()", "func (counter) reset()", 1)
		}},
			[]string{"go build failed", "missing method Reset"}},
		{"go compile error", "gadget", "go", map[string]func(string) string{"main.go": func(s string) string { return s + "\nfunc broken() { undefinedThing() }\n" }},
			[]string{"go build failed", "probe/main.go:", "undefined: undefinedThing"}},
		{"go wrong signature", "gadget", "go", map[string]func(string) string{"main.go": func(s string) string {
			return strings.Replace(s, "func (counter) Increment(by uint32) uint64", "func (counter) Increment(by uint64) uint64", 1)
		}}, []string{"go build failed", "wrong type for method Increment"}},
		{"ts syntax error", "gadget", "ts", map[string]func(string) string{"app.ts": func(s string) string { return strings.Replace(s, "return load();", "return load(;", 1) }},
			[]string{"app.ts has errors", "app.ts:", "return load(;"}},
		{"js missing export", "gadget", "js", map[string]func(string) string{"app.js": func(s string) string { return strings.Replace(s, "export function reset", "function reset", 1) }},
			[]string{"export reset is not implemented", "named reset"}},
		{"c missing export", "gadget", "c", map[string]func(string) string{"main.c": drop(`__attribute__((export_name("get")))`)},
			[]string{"export get is not implemented", `export_name("get")`}},
		{"c compile error", "gadget", "c", map[string]func(string) string{"main.c": func(s string) string { return s + "\nint broken(void) { return nope; }\n" }},
			[]string{"clang failed", "main.c:", "nope"}},
		// World mismatch: an export whose core signature is not the world's is refused by jco;
		// the error names the code's line, the WIT line and both signatures. (Go gadgets'
		// exports come from generated bindings: a wrong method is a compile error, above.) JS
		// has no signatures: an export that is not a function, or an interface object that
		// lacks one, is found by running the module's top level in the sandbox.
		{"c world mismatch", "gadget", "c", map[string]func(string) string{"main.c": func(s string) string {
			return strings.Replace(s, "uint64_t get(void) { return load(); }", "uint64_t get(uint32_t x) { return load() + x; }", 1)
		}}, []string{"probe/main.c:", "export get does not match world probe", "(i32) -> (i64)", "() -> (i64)",
			"probe/wit/world.wit:", "export get: func() -> u64;"}},
		{"c gatekeeper world mismatch", "gatekeeper", "c", map[string]func(string) string{"atelier_gatekeeper.c": func(s string) string {
			return strings.Replace(s, "void *export_describe(void) {", "void *export_describe(int unused) {", 1)
		}}, []string{"probe/atelier_gatekeeper.c:", "export atelier:gatekeeper/connector@0.1.0 (describe) does not match world probe",
			"(i32) -> (i32)", "() -> (i32)", "gatekeeper.wit:", "describe: func() -> vendor;"}},
		{"go gatekeeper world mismatch", "gatekeeper", "go", map[string]func(string) string{"internal/gatekeeper/connector.go": func(s string) string {
			return strings.Replace(s, "func exportCloseSession(session uint64) { connector.Registered().CloseSession(session) }",
				"func exportCloseSession(session uint32) { connector.Registered().CloseSession(uint64(session)) }", 1)
		}}, []string{"probe/internal/gatekeeper/connector.go:", "(close-session) does not match world probe", "(i32) -> ()", "(i64) -> ()",
			"gatekeeper.wit:", "close-session: func(session: u64);"}},
		{"js world mismatch", "gadget", "js", map[string]func(string) string{"app.js": func(s string) string {
			return strings.Replace(s, "export function get() {", "export const get = 42;\nfunction unused() {", 1)
		}}, []string{"probe/app.js:", "get is a number, not a function", "probe/wit/world.wit:", "export get: func() -> u64;"}},
		{"ts gatekeeper world mismatch", "gatekeeper", "ts", map[string]func(string) string{"app.ts": func(s string) string {
			return strings.Replace(s, "  revertAction(", "  revertActions(", 1)
		}}, []string{"probe/app.ts:", "connector has no function revertAction", "gatekeeper.wit:", "revert-action: func(id: u64, payload: string)"}},
		{"extism missing export", "gatekeeper", "go-extism", map[string]func(string) string{"internal/extism/gatekeeper/connector.go": func(s string) string {
			return strings.Replace(s, "//go:wasmexport revert_action", "//go:wasmexport revert", 1)
		}},
			[]string{"(revert-action) is not implemented", "//go:wasmexport revert_action"}},
		{"wit error", "gadget", "js", map[string]func(string) string{"wit/world.wit": func(s string) string { return strings.Replace(s, "-> u64;", "-> u64", 1) }},
			[]string{"WIT has errors", "world.wit:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := project(t, tc.kind, tc.lang, tc.edits)
			_, err := Build(context.Background(), dir, Options{CacheDir: cache, RunJS: func(ctx context.Context, module string) (any, error) {
				return jssandbox.Run(ctx, filepath.Join(cache, "artifacts"), module)
			}})
			if err == nil {
				t.Fatal("Build succeeded, want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	os.Exit(m.Run())
}

// TestProbeExports runs the top level of each JS and TS template in the sandbox, as Build
// does: the probe must see the templates' exports (a skipped probe would hide mismatches).
func TestProbeExports(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: starts the QuickJS engine")
	}
	cache := t.TempDir()
	runJS := func(ctx context.Context, module string) (any, error) { return jssandbox.Run(ctx, cache, module) }
	fn := exportShape{Type: "function", Fns: []string{}}
	for _, tc := range []struct {
		kind, lang string
		want       map[string]exportShape
	}{
		{"gadget", "js", map[string]exportShape{"increment": fn, "get": fn, "reset": fn}},
		{"gadget", "ts", map[string]exportShape{"increment": fn, "get": fn, "reset": fn}},
		{"gatekeeper", "ts", map[string]exportShape{"connector": {Type: "object", Fns: []string{"describe", "resourceKinds",
			"describeResource", "typescriptTypes", "openSession", "invoke", "closeSession", "applyAction", "rejectAction", "revertAction"}}}},
	} {
		dir := project(t, tc.kind, tc.lang, nil)
		b := &build{dir: dir, runJS: runJS}
		var err error
		if b.cfg, err = ReadConfig(dir); err != nil {
			t.Fatal(err)
		}
		got := b.probeExports(context.Background())
		for _, s := range got {
			slices.Sort(s.Fns)
		}
		for _, s := range tc.want {
			slices.Sort(s.Fns)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s/%s: probe = %v, want %v", tc.kind, tc.lang, got, tc.want)
		}
	}
}

// TestNoNode builds a JS project where neither node nor apt can be found: the error says
// what to install and how.
func TestNoNode(t *testing.T) {
	dir := project(t, "gadget", "js", nil)
	t.Setenv("PATH", t.TempDir())
	_, err := Build(context.Background(), dir, Options{CacheDir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "needs node and npm on PATH") || !strings.Contains(err.Error(), "sudo apt-get install nodejs npm") {
		t.Fatalf("Build without node: %v", err)
	}
}
