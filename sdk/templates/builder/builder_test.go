package builder

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
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

// classConnector turns the TS gatekeeper template's connector object into an instance of a
// class: its methods are on the prototype, not own enumerable properties.
var classConnector = map[string]func(string) string{"app.ts": func(s string) string {
	head, body, ok := strings.Cut(s, "export const connector = {")
	if !ok {
		panic("the TS gatekeeper template has no connector object")
	}
	body = regexp.MustCompile(`(?m)^(  (?:\S.*)?\}),$`).ReplaceAllString(body, "$1")
	body = strings.TrimSuffix(strings.TrimSpace(body), ";")
	return head + "class Connector {" + body + "\nexport const connector = new Connector();\n"
}}

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
	update, install, hint := aptCommand(pkgs, 1000, false, true)
	if update != nil || install != nil || hint != "sudo apt-get update && sudo apt-get install -y --no-install-recommends lld wasi-libc" {
		t.Errorf("not root, no sudo: %q %q, hint %q", update, install, hint)
	}
	apt := "env DEBIAN_FRONTEND=noninteractive apt-get "
	for _, c := range []struct {
		uid                     int
		terminal                bool
		wantUpdate, wantInstall string
	}{
		{1000, true, "sudo " + apt + "update", "sudo " + apt + "install -y --no-install-recommends lld wasi-libc"},
		{1000, false, "sudo -n " + apt + "update", "sudo -n " + apt + "install -y --no-install-recommends lld wasi-libc"},
		{0, false, apt + "update", apt + "install -y --no-install-recommends lld wasi-libc"},
	} {
		update, install, _ := aptCommand(pkgs, c.uid, true, c.terminal)
		if got := strings.Join(update, " "); got != c.wantUpdate {
			t.Errorf("uid %d, terminal %t: update %q, want %q", c.uid, c.terminal, got, c.wantUpdate)
		}
		if got := strings.Join(install, " "); got != c.wantInstall {
			t.Errorf("uid %d, terminal %t: install %q, want %q", c.uid, c.terminal, got, c.wantInstall)
		}
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
		// aaa.ts, found before app.ts in the folder, also exports a connector: the error
		// names the entry module's.
		{"ts gatekeeper world mismatch", "gatekeeper", "ts", map[string]func(string) string{"app.ts": func(s string) string {
			return strings.Replace(s, "  revertAction(", "  revertActions(", 1)
		}, "aaa.ts": func(string) string { return "export const connector = {};\n" }},
			[]string{"probe/app.ts:", "connector has no function revertAction", "gatekeeper.wit:", "revert-action: func(id: u64, payload: string)"}},
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
	connector := exportShape{Type: "object", Fns: []string{"describe", "resourceKinds", "describeResource", "typescriptTypes",
		"openSession", "invoke", "closeSession", "applyAction", "rejectAction", "revertAction"}}
	for _, tc := range []struct {
		kind, lang string
		edits      map[string]func(string) string
		want       map[string]exportShape
	}{
		{"gadget", "js", nil, map[string]exportShape{"increment": fn, "get": fn, "reset": fn}},
		{"gadget", "ts", nil, map[string]exportShape{"increment": fn, "get": fn, "reset": fn}},
		{"gatekeeper", "ts", nil, map[string]exportShape{"connector": connector}},
		{"gatekeeper", "ts", classConnector, map[string]exportShape{"connector": connector}},
		{"gatekeeper", "ts", map[string]func(string) string{"app.ts": func(s string) string {
			return strings.Replace(s, "  revertAction(", "  revertActions(", 1)
		}}, map[string]exportShape{"connector": {Type: "object", Fns: connector.Fns[:len(connector.Fns)-1]}}},
	} {
		dir := project(t, tc.kind, tc.lang, tc.edits)
		b := &build{dir: dir, runJS: runJS}
		var err error
		if b.cfg, err = ReadConfig(dir); err != nil {
			t.Fatal(err)
		}
		if b.world, err = LoadWorld(dir, b.cfg.World); err != nil {
			t.Fatal(err)
		}
		got := b.probeExports(context.Background())
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s/%s (edited: %t): probe = %v, want %v", tc.kind, tc.lang, tc.edits != nil, got, tc.want)
		}
	}
}

// TestBuildClassConnector builds a TS gatekeeper whose connector is a class instance: the
// export check must find the methods on its prototype.
func TestBuildClassConnector(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: runs node and the npm tools")
	}
	shared, err := DefaultCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	// A cache of its own (sharing the installed tools), so that the build is not a cache hit
	// that skips the checks.
	cache := t.TempDir()
	if err := os.MkdirAll(filepath.Join(shared, "tools"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(shared, "tools"), filepath.Join(cache, "tools")); err != nil {
		t.Fatal(err)
	}
	dir := project(t, "gatekeeper", "ts", classConnector)
	res, err := Build(context.Background(), dir, Options{CacheDir: cache, RunJS: func(ctx context.Context, module string) (any, error) {
		return jssandbox.Run(ctx, filepath.Join(shared, "artifacts"), module)
	}})
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	if res.Cached || len(res.Component) == 0 {
		t.Fatalf("Build: cached %t, %d bytes, want a fresh component", res.Cached, len(res.Component))
	}
}

// TestAptWithoutTerminal installs packages as a user without a terminal: a sudo that wants a
// password is only asked whether it does (sudo -n true), and the error says what to run; a
// sudo without a password runs apt-get with -n and DEBIAN_FRONTEND behind it. The sudo on
// PATH is a script that logs its arguments (and fails like sudo -n does, for the first case).
func TestAptWithoutTerminal(t *testing.T) {
	for _, c := range []struct {
		name, exit string
		wantLog    []string
		wantErr    string
	}{
		{"password", "echo 'sudo: a password is required' >&2; exit 1", []string{"-n true"}, "sudo wants a password, which it cannot ask for without a terminal: run\n" +
			"  sudo apt-get update && sudo apt-get install -y --no-install-recommends wasi-libc\n"},
		{"nopasswd", "exit 0", []string{"-n true", "-n env DEBIAN_FRONTEND=noninteractive apt-get update",
			"-n env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends wasi-libc"}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := t.TempDir()
			logFile := filepath.Join(bin, "log")
			script := "#!/bin/sh\necho \"$*\" >> " + logFile + "\n" + c.exit + "\n"
			if err := os.WriteFile(filepath.Join(bin, "sudo"), []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
			b := &build{log: io.Discard}
			err := b.aptInstallAs(context.Background(), "C tools", []string{"wasi-libc"}, 1000, false)
			if c.wantErr == "" && err != nil || c.wantErr != "" && (err == nil || !strings.Contains(err.Error(), c.wantErr)) {
				t.Errorf("aptInstall: %v, want %q", err, c.wantErr)
			}
			log, err := os.ReadFile(logFile)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Split(strings.TrimSpace(string(log)), "\n"); !reflect.DeepEqual(got, c.wantLog) {
				t.Errorf("sudo ran with %q, want %q", got, c.wantLog)
			}
		})
	}
}

// TestArticle puts the article before typeof names, and takes an empty one.
func TestArticle(t *testing.T) {
	for typ, want := range map[string]string{"object": "an object", "number": "a number", "undefined": "an undefined", "": "a "} {
		if got := article(typ); got != want {
			t.Errorf("article(%q) = %q, want %q", typ, got, want)
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
