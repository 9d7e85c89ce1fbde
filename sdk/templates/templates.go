// Package templates holds the project templates of `atelier new` and the files `atelier build`
// needs outside the repository, embedded into the binary.
//
// A template is the folder files/KIND/LANG (KIND is gadget or gatekeeper) laid over
// files/KIND/common; every file ends in .tmpl and is a text/template over Project with the
// delimiters [[ and ]] (Go and C code is full of {{). Create also
// writes the WIT packages the project builds against into wit/deps/ and, for Go, copies of the
// guest packages of sdk/go into internal/ (cabi, which a gadget's generated bindings use; and
// host, gatekeeper, connector and loglevel for a gatekeeper), with their import paths
// rewritten to the project's module: a user's module cannot import `atelier/...`. A Go
// gatekeeper of the Extism format gets sdk/go/extism (with its gatekeeper and host packages),
// connector and loglevel instead.
//
// The repository files it hands out (wit/{host,gadget,gatekeeper}, sdk/componentize's npm
// project, sdk/go/{cabi,host,gatekeeper,connector,loglevel,extism}) come from atelier.Sources,
// embedded at the module root.
package templates

import (
	"atelier"
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

//go:embed files
var files embed.FS

// mirror holds the repository files the templates hand out, at their repository paths.
var mirror fs.FS = atelier.Sources

// Kinds are the kinds of project `atelier new` makes.
var Kinds = []string{"gadget", "gatekeeper"}

// langNames are the languages of each kind, with the name a README uses.
var langNames = map[string]map[string]string{
	"gadget":     {"go": "Go", "js": "JavaScript", "ts": "TypeScript", "c": "C"},
	"gatekeeper": {"go": "Go", "js": "JavaScript", "ts": "TypeScript", "c": "C"},
}

// Langs returns the languages that kind has templates for, sorted.
func Langs(kind string) []string {
	var out []string
	for l := range langNames[kind] {
		out = append(out, l)
	}
	slices.Sort(out)
	return out
}

// Grants returns the interfaces a project of kind and lang imports, and so must be granted
// when it is deployed. Gatekeepers have none: their world fixes what they may import.
func Grants(kind, lang string) []string {
	if kind != "gadget" {
		return nil
	}
	return []string{"atelier:host/kv", "atelier:host/log"}
}

// namePattern is a project name: a WIT identifier (kebab-case words that start with a letter),
// which is also a valid Go module path and gadget name.
var namePattern = regexp.MustCompile(`^[a-z][a-z0-9]*(-[a-z][a-z0-9]*)*$`)

// Package formats of a gatekeeper (the manifest's "format").
const (
	// FormatComponent is a WebAssembly component, the default.
	FormatComponent = "component"
	// FormatExtism is an Extism plugin: a core module with JSON plugin functions (Go only).
	FormatExtism = "extism"
)

// Project is what a template is rendered with.
type Project struct {
	Kind string // gadget or gatekeeper
	Lang string // go, js, ts or c
	Name string // kebab-case: the gadget's name, WIT world and Go module
	// Format is FormatComponent (or "") or, for a Go gatekeeper, FormatExtism.
	Format string
}

// Extism reports whether the project is a gatekeeper built as an Extism plugin.
func (p Project) Extism() bool { return p.Format == FormatExtism }

// CheckFormat reports whether a kind-lang project may be built in format ("" is
// FormatComponent): FormatExtism is for gatekeepers in Go only.
func CheckFormat(kind, lang, format string) error {
	switch format {
	case "", FormatComponent:
		return nil
	case FormatExtism:
		if kind != "gatekeeper" || lang != "go" {
			return fmt.Errorf("format %s is for gatekeepers in Go (--lang go), not a %s in %s", FormatExtism, kind, langNames[kind][lang])
		}
		return nil
	}
	return fmt.Errorf("unknown format %q: want %s or %s", format, FormatComponent, FormatExtism)
}

// LangName is the language's name in prose ("TypeScript").
func (p Project) LangName() string { return langNames[p.Kind][p.Lang] }

// GrantsJSON is Grants as a JSON array.
func (p Project) GrantsJSON() string {
	var q []string
	for _, g := range Grants(p.Kind, p.Lang) {
		q = append(q, `"`+g+`"`)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// GrantsFlag is Grants as the value of `--grant`.
func (p Project) GrantsFlag() string { return strings.Join(Grants(p.Kind, p.Lang), ",") }

// Ident is Name in camelCase, a JavaScript and C identifier ("my-notes" -> "myNotes").
func (p Project) Ident() string { return CamelCase(p.Name) }

// CIdent is Name in snake_case, a C identifier ("my-notes" -> "my_notes").
func (p Project) CIdent() string { return strings.ReplaceAll(p.Name, "-", "_") }

// CamelCase turns a kebab-case WIT name into the camelCase name JavaScript bindings use.
func CamelCase(s string) string {
	parts := strings.Split(s, "-")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// Validate checks that p names a template and that its name is usable.
func (p Project) Validate() error {
	names, ok := langNames[p.Kind]
	if !ok {
		return fmt.Errorf("unknown kind %q: want %s", p.Kind, strings.Join(Kinds, " or "))
	}
	if _, ok := names[p.Lang]; !ok {
		return fmt.Errorf("no %s template for language %q: want one of %s", p.Kind, p.Lang, strings.Join(Langs(p.Kind), ", "))
	}
	if err := CheckFormat(p.Kind, p.Lang, p.Format); err != nil {
		return err
	}
	if !namePattern.MatchString(p.Name) {
		return fmt.Errorf("bad name %q: use lowercase letters, digits and dashes, starting with a letter (my-counter)", p.Name)
	}
	return nil
}

// Create writes a new project p into dir, which must not exist or be empty, and returns the
// paths of the files it wrote, relative to dir.
func Create(dir string, p Project) ([]string, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s exists and is not empty: choose another name or folder", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	out := map[string][]byte{}
	for _, layer := range []string{"files/" + p.Kind + "/common", "files/" + p.Kind + "/" + p.Lang} {
		if err := render(layer, p, out); err != nil {
			return nil, err
		}
	}
	deps := []string{"host", "gadget"}
	if p.Kind == "gatekeeper" {
		deps = []string{"host", "gatekeeper"}
	}
	for _, d := range deps {
		if err := copyTree(mirror, "wit/"+d, "wit/deps/"+d, nil, out); err != nil {
			return nil, err
		}
	}
	if p.Lang == "go" {
		pkgs := []string{"cabi"} // a gadget's bindings are generated by atelier build
		switch {
		case p.Extism():
			pkgs = []string{"extism", "connector", "loglevel"}
		case p.Kind == "gatekeeper":
			pkgs = append(pkgs, "host", "gatekeeper", "connector", "loglevel")
		}
		for _, pkg := range pkgs {
			if err := copyTree(mirror, "sdk/go/"+pkg, "internal/"+pkg, vendorGo(p.Name, pkg), out); err != nil {
				return nil, err
			}
		}
	}
	var written []string
	for name, data := range out {
		target := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return nil, fmt.Errorf("create %s: %w", dir, err)
		}
		written = append(written, name)
	}
	slices.Sort(written)
	return written, nil
}

// render executes every .tmpl file under root into out, keyed by its path below root without
// the suffix. A file named gitignore becomes .gitignore (go:embed skips dot files).
func render(root string, p Project, out map[string][]byte) error {
	return fs.WalkDir(files, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		t, err := template.New(name).Delims("[[", "]]").Option("missingkey=error").Parse(string(src))
		if err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, p); err != nil {
			return fmt.Errorf("template %s: %w", name, err)
		}
		rel := strings.TrimSuffix(strings.TrimPrefix(name, root+"/"), ".tmpl")
		if rel == "gitignore" {
			rel = ".gitignore"
		}
		out[rel] = buf.Bytes()
		return nil
	})
}

// copyTree copies the files under root of fsys into out under prefix, through edit if set.
// Go test files (the sdk/go packages' own tests) are not copied.
func copyTree(fsys fs.FS, root, prefix string, edit func([]byte) []byte, out map[string][]byte) error {
	return fs.WalkDir(fsys, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(name, "_test.go") {
			return err
		}
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if edit != nil {
			data = edit(data)
		}
		out[path.Join(prefix, strings.TrimPrefix(name, root+"/"))] = data
		return nil
	})
}

// vendorGo returns the edit that turns a file of sdk/go/pkg into one of the project's module:
// imports of atelier/sdk/go/X become MODULE/internal/X, and a header says where it came from.
func vendorGo(module, pkg string) func([]byte) []byte {
	return func(src []byte) []byte {
		src = bytes.ReplaceAll(src, []byte("atelier/sdk/go/"), []byte(module+"/internal/"))
		header := "// Copied from Atelier's sdk/go/" + pkg + " by `atelier new`, with its import paths\n" +
			"// pointing into this module.\n\n"
		return append([]byte(header), src...)
	}
}

// Componentize returns the npm tools' folder: package.json, package-lock.json (jco and
// componentize-qjs, pinned) and componentize.mjs, which turns a core module or a JS module
// into a component (see sdk/build-gadget.sh).
func Componentize() fs.FS {
	sub, err := fs.Sub(mirror, "sdk/componentize")
	if err != nil {
		panic(err)
	}
	return sub
}
