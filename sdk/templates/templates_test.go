package templates

import (
	"bytes"
	"go/format"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// langFiles are the files each template must write besides the common ones.
var langFiles = map[string][]string{
	"gadget/go":     {"main.go", "go.mod"},
	"gadget/js":     {"app.js"},
	"gadget/ts":     {"app.ts", "atelier.d.ts"},
	"gadget/c":      {"main.c", "atelier_host.c", "atelier_host.h"},
	"gatekeeper/go": {"main.go", "go.mod", "internal/gatekeeper/connector.go", "internal/connector/connector.go", "internal/loglevel/loglevel.go", "wit/deps/gatekeeper/gatekeeper.wit"},
	"gatekeeper/js": {"app.js", "wit/deps/gatekeeper/gatekeeper.wit"},
	"gatekeeper/ts": {"app.ts", "atelier.d.ts", "wit/deps/gatekeeper/gatekeeper.wit"},
	"gatekeeper/c":  {"main.c", "atelier_gatekeeper.c", "atelier_gatekeeper.h", "json.c", "json.h", "wit/deps/gatekeeper/gatekeeper.wit"},
}

// TestCreate writes every template and checks what a user's project must be: no import of
// the atelier module, the Go helpers vendored under the project's module, every template
// action rendered, the WIT dependencies present.
func TestCreate(t *testing.T) {
	for _, kind := range Kinds {
		for _, lang := range Langs(kind) {
			t.Run(kind+"/"+lang, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "my-thing")
				files, err := Create(dir, Project{Kind: kind, Lang: lang, Name: "my-thing"})
				if err != nil {
					t.Fatal(err)
				}
				if _, ok := langFiles[kind+"/"+lang]; !ok {
					t.Fatalf("no langFiles entry for %s/%s", kind, lang)
				}
				has := map[string]bool{}
				for _, f := range files {
					has[f] = true
					data, err := os.ReadFile(filepath.Join(dir, f))
					if err != nil {
						t.Fatal(err)
					}
					if bytes.Contains(data, []byte(`"atelier/`)) {
						t.Errorf("%s imports the atelier module, which a user's module cannot", f)
					}
					if bytes.Contains(data, []byte("[[")) && !strings.HasSuffix(f, ".wit") {
						t.Errorf("%s holds an unrendered template action", f)
					}
					if strings.HasSuffix(f, "_test.go") {
						t.Errorf("the SDK's test %s is vendored", f)
					}
				}
				for _, want := range []string{"atelier.json", "README.md", ".gitignore", "wit/world.wit", "wit/deps/host/host.wit"} {
					if !has[want] {
						t.Errorf("no %s among %v", want, files)
					}
				}
				if lang == "go" && !has["internal/cabi/cabi.go"] {
					t.Errorf("the Go helpers are not vendored: %v", files)
				}
				if lang == "go" {
					want := `"my-thing/internal/` // a gatekeeper's vendored helpers
					if kind == "gadget" {
						want = `"my-thing/bindings"` // what atelier build generates
					}
					if main, _ := os.ReadFile(filepath.Join(dir, "main.go")); !bytes.Contains(main, []byte(want)) {
						t.Errorf("main.go does not import %s:\n%s", want, main)
					}
				}
				for _, want := range langFiles[kind+"/"+lang] {
					if !has[want] {
						t.Errorf("no %s among %v", want, files)
					}
				}
				if kind == "gatekeeper" && !has["manifest.json"] {
					t.Errorf("a gatekeeper project has no manifest.json: %v", files)
				}
			})
		}
	}
}

// TestCreateExtism writes the Go gatekeeper as an Extism plugin: the Extism packages and the
// format-free ones they build on (connector, loglevel) vendored instead of the component ones,
// main.go importing them, and "format": "extism" in both the manifest and atelier.json.
func TestCreateExtism(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my-thing")
	files, err := Create(dir, Project{Kind: "gatekeeper", Lang: "go", Name: "my-thing", Format: FormatExtism})
	if err != nil {
		t.Fatal(err)
	}
	has := map[string]bool{}
	for _, f := range files {
		has[f] = true
		if strings.HasSuffix(f, "_test.go") {
			t.Errorf("the SDK's test %s is vendored", f)
		}
		pkg, _, _ := strings.Cut(strings.TrimPrefix(f, "internal/"), "/")
		if strings.HasPrefix(f, "internal/") && pkg != "extism" && pkg != "connector" && pkg != "loglevel" {
			t.Errorf("%s is vendored into an Extism project", f)
		}
	}
	for _, want := range []string{"internal/extism/abi.go", "internal/extism/gatekeeper/connector.go", "internal/extism/host/host.go",
		"internal/connector/connector.go", "internal/connector/host.go", "internal/loglevel/loglevel.go", "main.go", "go.mod"} {
		if !has[want] {
			t.Errorf("no %s among %v", want, files)
		}
	}
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	main := read("main.go")
	if !strings.Contains(main, `"my-thing/internal/extism/gatekeeper"`) || strings.Contains(main, `"my-thing/internal/gatekeeper"`) {
		t.Errorf("main.go does not import the Extism packages:\n%s", main)
	}
	if src, err := format.Source([]byte(main)); err != nil || string(src) != main {
		t.Errorf("main.go is not gofmt-clean (%v)", err)
	}
	if vendored := read("internal/extism/gatekeeper/connector.go"); !strings.Contains(vendored, `"my-thing/internal/extism"`) ||
		!strings.Contains(vendored, `"my-thing/internal/connector"`) {
		t.Errorf("the vendored gatekeeper package does not import the project's extism and connector packages")
	}
	if vendored := read("internal/extism/host/host.go"); !strings.Contains(vendored, `"my-thing/internal/loglevel"`) {
		t.Errorf("the vendored host package does not import the project's loglevel package")
	}
	for _, f := range []string{"manifest.json", "atelier.json"} {
		if !strings.Contains(read(f), `"format": "extism"`) {
			t.Errorf("%s does not say \"format\": \"extism\"", f)
		}
	}
}

func TestCreateRefuses(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		p    Project
		want string
	}{
		{Project{Kind: "gadget", Lang: "rust", Name: "x"}, "no gadget template for language"},
		{Project{Kind: "gatekeeper", Lang: "rust", Name: "x"}, "want one of c, go, js, ts"},
		{Project{Kind: "plugin", Lang: "go", Name: "x"}, "unknown kind"},
		{Project{Kind: "gadget", Lang: "go", Name: "My_Counter"}, "bad name"},
		{Project{Kind: "gadget", Lang: "go", Name: "../escape"}, "bad name"},
		{Project{Kind: "gadget", Lang: "go", Name: "a--b"}, "bad name"},
		{Project{Kind: "gadget", Lang: "go", Name: "x", Format: FormatExtism}, "for gatekeepers in Go"},
		{Project{Kind: "gatekeeper", Lang: "js", Name: "x", Format: FormatExtism}, "for gatekeepers in Go"},
		{Project{Kind: "gatekeeper", Lang: "go", Name: "x", Format: "wasm"}, "unknown format"},
	} {
		if _, err := Create(filepath.Join(dir, "p"), tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Create(%+v) = %v, want an error with %q", tc.p, err, tc.want)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(dir, Project{Kind: "gadget", Lang: "js", Name: "x"}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Errorf("Create into a non-empty folder = %v, want a refusal", err)
	}
}

func TestCamelCase(t *testing.T) {
	for in, want := range map[string]string{"increment": "increment", "resource-kinds": "resourceKinds", "a-b-c": "aBC"} {
		if got := CamelCase(in); got != want {
			t.Errorf("CamelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestComponentize checks the embedded npm folder has what the builder runs.
func TestComponentize(t *testing.T) {
	for _, name := range []string{"package.json", "package-lock.json", "componentize.mjs"} {
		if _, err := fs.Stat(Componentize(), name); err != nil {
			t.Error(err)
		}
	}
}
