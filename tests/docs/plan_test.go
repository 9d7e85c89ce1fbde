package docs_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"

	"atelier/host/gatekeeper"
	"atelier/sdk/componentize/tsc"
)

// kind is how the test treats a block.
type kind int

const (
	notRun        kind = iota // marked `not run: REASON`
	runShell                  // sh: run in the document's session, line by line
	runNode                   // a Cap'n Web client: run with node in the session
	writeFile                 // marked `file PATH`: written where the reader writes it
	compileGo                 // Go host code: compiled (go vet) in a scratch module
	sameDecls                 // marked `declarations of PATH`: each declaration is the file's
	loadWIT                   // loaded with the project's WIT packages
	typeCheck                 // TypeScript: tsc --strict
	parseManifest             // a gatekeeper manifest: the gatekeeper's own parser
	matchOutput               // text: lines of what the session's commands printed
	matchCSP                  // a Content-Security-Policy the server sends with the gadget frame
)

func (k kind) String() string {
	return [...]string{"not run", "run (sh)", "run (node)", "written", "compiled (go vet)", "same declarations",
		"loaded (WIT)", "type-checked (tsc)", "parsed (manifest)", "matched (output)", "matched (CSP)"}[k]
}

// plan is one treatment of a block; a block may have several (a WIT file is loaded and written).
type plan struct {
	kind    kind
	variant string // the document variant the plan applies in ("" for all)
	arg     string // the reason (notRun), the path (writeFile, sameDecls)
	from    string // writeFile: the block replaces the file from this text on
	err     error  // the block has no treatment
}

var (
	variantMark = regexp.MustCompile(`^([a-z0-9]+):\s+(.*)$`)
	fileMark    = regexp.MustCompile(`^file (\S+)(?: from "(.*)")?$`)
	declMark    = regexp.MustCompile(`^declarations of (\S+)$`)
)

// plans decides what the test does with b, from its marker or, unmarked, from its language.
func plans(b block) []plan {
	mark, variant := b.mark, ""
	if m := variantMark.FindStringSubmatch(mark); m != nil && !strings.HasPrefix(mark, "not run:") {
		variant, mark = m[1], m[2]
	}
	one := func(k kind, arg string) []plan { return []plan{{kind: k, variant: variant, arg: arg}} }
	fail := func(format string, args ...any) []plan {
		return []plan{{err: fmt.Errorf(format+"; run it or mark it <!-- docs-test: not run: REASON -->", args...)}}
	}
	switch {
	case strings.HasPrefix(mark, "not run:"):
		reason := strings.TrimSpace(strings.TrimPrefix(mark, "not run:"))
		if reason == "" {
			return fail("a not-run mark without a reason")
		}
		return one(notRun, reason)
	case fileMark.MatchString(mark):
		m := fileMark.FindStringSubmatch(mark)
		if err := sameEdit(b.prose, m[1], m[2]); err != nil {
			return []plan{{err: err}}
		}
		ps := []plan{{kind: writeFile, variant: variant, arg: m[1], from: m[2]}}
		switch b.lang {
		case "wit":
			if m[2] == "" { // a part of a file is loaded once in it (TestGadgetTutorialAsWritten, and the build)
				ps = append(ps, plan{kind: loadWIT, variant: variant})
			}
		case "ts", "typescript":
			ps = append(ps, plan{kind: typeCheck, variant: variant})
		}
		return ps
	case declMark.MatchString(mark) && b.lang == "go":
		return one(sameDecls, declMark.FindStringSubmatch(mark)[1])
	case mark != "":
		return fail("unknown docs-test mark %q", b.mark)
	}
	switch b.lang {
	case "sh", "bash":
		return one(runShell, "")
	case "js", "javascript":
		if strings.Contains(b.src, `from "capnweb"`) || usesPrelude(b.src) {
			return one(runNode, "")
		}
		return fail("a JavaScript block that is not a Cap'n Web client")
	case "go":
		return one(compileGo, "")
	case "wit":
		return one(loadWIT, "")
	case "json":
		if strings.Contains(b.src, `"atelier:gatekeeper/`) {
			return one(parseManifest, "")
		}
		return fail("a JSON block that is not a gatekeeper manifest")
	case "text":
		return one(matchOutput, "")
	case "":
		if strings.Contains(b.src, "default-src") {
			return one(matchCSP, "")
		}
	}
	return fail("no rule for a %q block", b.lang)
}

// The edits a document's prose tells the reader to make with a file block, in the paragraph
// right before it; a block marked `file PATH [from "TEXT"]` must say which, and the mark must
// make that very edit, so that a reader following the words builds what the test builds.
// A code span is `TEXT`, or TEXT between double backticks when it holds a backtick.
var (
	codeSpan = "(?:``(.+?)``|`([^`]+)`)"
	// Save this as `PATH`: a new file.
	saveAs = regexp.MustCompile("[Ss]ave (?:this|it)(?: \\w+)? as " + codeSpan)
	// Replace `PATH` with: the whole file.
	replaceFile = regexp.MustCompile("[Rr]eplace " + codeSpan + " with")
	// Replace everything from the line `TEXT` to the end of `PATH` with: the file from the line
	// that holds TEXT on.
	replaceFrom = regexp.MustCompile("[Rr]eplace everything from the line " + codeSpan + " to the end of " + codeSpan + " with")
)

// span is the text of the code span whose submatches start at i of m.
func span(m []string, i int) string { return m[i] + m[i+1] }

// proseEdit returns the edit that prose tells the reader to make: the file's path and, for a
// partial replacement, the text of its first replaced line. It fails unless prose says
// exactly one such thing.
func proseEdit(prose string) (path, from string, err error) {
	var found [][2]string
	for _, m := range replaceFrom.FindAllStringSubmatch(prose, -1) {
		found = append(found, [2]string{span(m, 3), span(m, 1)})
	}
	for _, re := range []*regexp.Regexp{saveAs, replaceFile} {
		for _, m := range re.FindAllStringSubmatch(prose, -1) {
			found = append(found, [2]string{span(m, 1), ""})
		}
	}
	if len(found) != 1 {
		return "", "", fmt.Errorf("the paragraph before a file block must say once what the reader does with it "+
			"(Save this as `PATH` / Replace `PATH` with / Replace everything from the line `TEXT` to the end of `PATH` with); "+
			"it says %d such things: %q", len(found), prose)
	}
	return found[0][0], found[0][1], nil
}

// sameEdit fails unless prose tells the reader the edit of a `file PATH [from "TEXT"]` mark.
func sameEdit(prose, path, from string) error {
	p, f, err := proseEdit(prose)
	if err != nil {
		return err
	}
	if p != path || f != from {
		return fmt.Errorf("the prose says to edit %q from %q (\"\": the whole file), the docs-test mark %q from %q", p, f, path, from)
	}
	return nil
}

// usesPrelude reports whether src uses a stub that jsPreludes declare (a Cap'n Web client
// block that continues an earlier one).
func usesPrelude(src string) bool { return preludeUse.MatchString(src) }

// preludeUse matches `NAME.` for a name that jsPreludes declare.
var preludeUse = func() *regexp.Regexp {
	var names []string
	for _, p := range jsPreludes {
		names = append(names, p.names...)
	}
	return regexp.MustCompile(`\b(?:` + strings.Join(names, "|") + `)\.`)
}()

// static runs the checks of p that need no server (nil for the others).
func (p plan) static(t *testing.T, root string, b block) error {
	switch p.kind {
	case loadWIT:
		return checkWIT(t, root, b.src)
	case compileGo:
		return compileGoBlock(t, root, b.src)
	case sameDecls:
		return checkDecls(filepath.Join(root, filepath.Dir(b.file), p.arg), b.src)
	case typeCheck:
		return typeCheckTS(t, root, b.src)
	case parseManifest:
		return checkManifest(substitute(b.src, placeholders(nil)))
	case runNode:
		return errors.Join(checkScript(b.src, api.LoaderJS), checkDisposes(b.src))
	case writeFile:
		if b.lang == "js" || b.lang == "javascript" {
			return checkScript(b.src, api.LoaderJS)
		}
	}
	return nil
}

// checkManifest parses a manifest with the gatekeeper's parser. A manifest without
// component.sha256 is a project's, which `atelier build` completes with the hash of the plugin
// or component before it packs it; the check does the same.
func checkManifest(src string) error {
	var m map[string]any
	if err := json.Unmarshal([]byte(src), &m); err != nil {
		return err
	}
	if _, ok := m["component"]; !ok {
		m["component"] = map[string]any{"sha256": strings.Repeat("0", 64)}
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	_, err = gatekeeper.ParseManifest(data)
	return err
}

// goPlaceholders declare what a Go host snippet takes from its surroundings.
var goPlaceholders = []struct{ name, decl string }{
	{"ctx", "ctx := context.Background()"},
	{"archive", "var archive []byte // a package's bytes"},
	{"secret", `secret := "the user's API token"`},
}

// goImports are the packages a Go host snippet may name.
var goImports = map[string]string{
	"context":      "context",
	"gatekeeper":   "atelier/host/gatekeeper",
	"outboundhttp": "atelier/host/capability/outboundhttp",
	"runtime":      "atelier/host/runtime",
}

// compileGoBlock compiles a Go snippet of host code (statements) inside func main of a scratch
// module that replaces atelier with root, with its placeholders declared, its packages imported
// and every variable it declares used, and runs go vet on it.
func compileGoBlock(t *testing.T, root, src string) error {
	var body strings.Builder
	for _, p := range goPlaceholders {
		if regexp.MustCompile(`\b`+p.name+`\b`).MatchString(src) && !regexp.MustCompile(`\b`+p.name+`\b[^=\n]*:=`).MatchString(src) {
			body.WriteString("\t" + p.decl + "\n")
		}
	}
	body.WriteString(src)
	f, err := parser.ParseFile(token.NewFileSet(), "block.go", "package p\nfunc _() {\n"+body.String()+"\n}", 0)
	if err != nil {
		return fmt.Errorf("parse as statements: %w", err)
	}
	seen := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if a, ok := n.(*ast.AssignStmt); ok && a.Tok == token.DEFINE {
			for _, l := range a.Lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name != "_" && !seen[id.Name] {
					seen[id.Name] = true
					fmt.Fprintf(&body, "\t_ = %s\n", id.Name)
				}
			}
		}
		return true
	})
	var imports strings.Builder
	for name, path := range goImports {
		if strings.Contains(body.String(), name+".") {
			fmt.Fprintf(&imports, "\t%q\n", path)
		}
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module docsblock\n\ngo 1.26\n\nrequire atelier v0.0.0\n\nreplace atelier => " + root + "\n",
		"main.go": "package main\n\nimport (\n" + imports.String() + ")\n\nfunc main() {\n" + body.String() + "}\n",
	}
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		return err
	}
	files["go.sum"] = string(sum)
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	cmd := exec.Command("go", "vet", ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go vet: %v\n%s\nthe program:\n%s", err, out, files["main.go"])
	}
	return nil
}

// checkDecls requires each top-level declaration of src to be the declaration of the same name
// in the Go file path (doc comments aside), so the block shows code that the file compiles.
func checkDecls(path, src string) error {
	fset := token.NewFileSet()
	want, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		return err
	}
	got, err := parser.ParseFile(fset, "block.go", "package p\n"+src, 0)
	if err != nil {
		return fmt.Errorf("parse as declarations: %w", err)
	}
	decls := map[string]string{}
	for _, d := range want.Decls {
		decls[declName(d)] = render(fset, d)
	}
	var errs []error
	for _, d := range got.Decls {
		name := declName(d)
		if w, ok := decls[name]; !ok {
			errs = append(errs, fmt.Errorf("%s has no declaration %s", path, name))
		} else if g := render(fset, d); g != w {
			errs = append(errs, fmt.Errorf("%s differs from %s's:\n%s", name, path, w))
		}
	}
	return errors.Join(errs...)
}

// declName names a declaration: the function (with its receiver type) or the first spec.
func declName(d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) > 0 {
			return fmt.Sprintf("(%s).%s", types(d.Recv.List[0].Type), d.Name.Name)
		}
		return d.Name.Name
	case *ast.GenDecl:
		switch s := d.Specs[0].(type) {
		case *ast.TypeSpec:
			return s.Name.Name
		case *ast.ValueSpec:
			return s.Names[0].Name
		case *ast.ImportSpec:
			return s.Path.Value
		}
	}
	return ""
}

// types renders a receiver type expression.
func types(e ast.Expr) string {
	var b bytes.Buffer
	printer.Fprint(&b, token.NewFileSet(), e)
	return b.String()
}

// render prints a declaration without comments.
func render(fset *token.FileSet, d ast.Decl) string {
	if f, ok := d.(*ast.FuncDecl); ok {
		c := *f
		c.Doc = nil
		d = &c
	}
	var b bytes.Buffer
	printer.Fprint(&b, fset, d)
	return b.String()
}

// typeCheckTS type-checks src with the repository's TypeScript compiler (tsc.Check).
func typeCheckTS(t *testing.T, root, src string) error {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "block.ts"), []byte(src), 0o644); err != nil {
		return err
	}
	return tsc.Check(root, dir, "block.ts")
}
