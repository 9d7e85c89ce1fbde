// Package docs_test checks the code blocks of the project's documentation: every fenced block
// in a language the test knows is compiled by that language's own front end (WIT by sdk/wit
// with the project's packages as dependencies, Go by go/parser, JavaScript and TypeScript by
// esbuild, JSON by encoding/json, shell by `bash -n`), so a renamed API or a typo in an example
// fails the build. Blocks whose info string has no known language (output, text) are skipped.
package docs_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/evanw/esbuild/pkg/api"

	"atelier/sdk/wit"
	capnwebtests "atelier/tests/capnweb"
)

// block is one fenced code block.
type block struct {
	file string
	line int // of the opening fence
	lang string
	src  string
}

func (b block) String() string { return fmt.Sprintf("%s:%d (%s)", b.file, b.line, b.lang) }

// docFiles are the documentation files whose blocks are checked, relative to the root.
func docFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "gadgets/*/README.md", "gadgets/README.md", "gatekeepers/*/README.md", "sdk/*/README.md", "tests/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	return files
}

// blocks returns the fenced blocks of file.
func blocks(t *testing.T, root, file string) []block {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	var cur *block
	var fence string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			info := strings.Fields(strings.TrimPrefix(trimmed, fence))
			cur = &block{file: file, line: n}
			if len(info) > 0 {
				cur.lang = info[0]
			}
		case cur != nil && strings.TrimSpace(line) == fence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.src += line + "\n"
		}
	}
	if cur != nil {
		t.Errorf("%s: the block opened at line %d is not closed", file, cur.line)
	}
	return out
}

func TestCodeBlocks(t *testing.T) {
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]int{}
	for _, file := range docFiles(t, root) {
		for _, b := range blocks(t, root, file) {
			check, ok := checkers[b.lang]
			if !ok {
				continue
			}
			checked[b.lang]++
			if err := check(t, root, b); err != nil {
				t.Errorf("%s: %v\n%s", b, err, b.src)
			}
		}
	}
	t.Logf("checked blocks by language: %v", checked)
	if checked["wit"] == 0 || checked["js"] == 0 || checked["go"] == 0 || checked["sh"] == 0 {
		t.Errorf("some languages have no blocks at all (%v): is the scan broken?", checked)
	}
}

// checkers compile a block in their language.
var checkers = map[string]func(t *testing.T, root string, b block) error{
	"wit":        checkWIT,
	"go":         checkGo,
	"js":         func(_ *testing.T, _ string, b block) error { return checkScript(b, api.LoaderJS) },
	"javascript": func(_ *testing.T, _ string, b block) error { return checkScript(b, api.LoaderJS) },
	"ts":         func(_ *testing.T, _ string, b block) error { return checkScript(b, api.LoaderTS) },
	"typescript": func(_ *testing.T, _ string, b block) error { return checkScript(b, api.LoaderTS) },
	"json":       checkJSON,
	"sh":         checkShell,
	"bash":       checkShell,
}

// checkWIT loads the block with the project's WIT packages as dependencies; a block without a
// package declaration is a fragment of package docs:example.
func checkWIT(t *testing.T, root string, b block) error {
	src := b.src
	if !strings.Contains(src, "package ") {
		src = "package docs:example@0.1.0;\n" + src
	}
	path := filepath.Join(t.TempDir(), "block.wit")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		return err
	}
	paths := []string{path}
	for _, dep := range []string{"host", "gadget", "gatekeeper"} {
		paths = append(paths, filepath.Join(root, "wit", dep))
	}
	_, _, err := wit.Load(paths...)
	return err
}

// checkGo parses the block as a Go file, or as declarations, or as statements.
func checkGo(_ *testing.T, _ string, b block) error {
	fset := token.NewFileSet()
	_, err := parser.ParseFile(fset, "block.go", b.src, parser.AllErrors)
	if err == nil || strings.HasPrefix(strings.TrimSpace(b.src), "package ") {
		return err
	}
	if _, derr := parser.ParseFile(fset, "block.go", "package p\n"+b.src, parser.AllErrors); derr == nil {
		return nil
	}
	_, err = parser.ParseFile(fset, "block.go", "package p\nfunc _() {\n"+b.src+"\n}", parser.AllErrors)
	return err
}

// checkScript compiles the block as an ES module with esbuild.
func checkScript(b block, loader api.Loader) error {
	res := api.Transform(b.src, api.TransformOptions{Loader: loader, Format: api.FormatESModule, Target: api.ESNext})
	if len(res.Errors) == 0 {
		return nil
	}
	var msgs []string
	for _, m := range res.Errors {
		where := ""
		if m.Location != nil {
			where = fmt.Sprintf("block line %d: ", m.Location.Line)
		}
		msgs = append(msgs, where+m.Text)
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// checkJSON requires a valid JSON text.
func checkJSON(_ *testing.T, _ string, b block) error {
	if !json.Valid([]byte(b.src)) {
		var v any
		return json.Unmarshal([]byte(b.src), &v)
	}
	return nil
}

// checkShell runs `bash -n` on the block.
func checkShell(_ *testing.T, _ string, b block) error {
	cmd := exec.Command("bash", "-n")
	cmd.Stdin = strings.NewReader(b.src)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("bash -n: %v: %s", err, out)
	}
	return nil
}

// TestWITReference: each block of docs/wit.md that declares an atelier:* package is that
// package's file in wit/, unchanged.
func TestWITReference(t *testing.T) {
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, b := range blocks(t, root, "docs/wit.md") {
		_, rest, ok := strings.Cut(b.src, "\npackage atelier:")
		if !ok || b.lang != "wit" {
			continue
		}
		name, _, _ := strings.Cut(rest, "@")
		want, err := os.ReadFile(filepath.Join(root, "wit", name, name+".wit"))
		if err != nil {
			t.Errorf("%s: package atelier:%s has no file wit/%s/%s.wit: %v", b, name, name, name, err)
			continue
		}
		if b.src != string(want) {
			t.Errorf("%s: the block differs from wit/%s/%s.wit: copy the file into docs/wit.md again", b, name, name)
		}
		seen[name] = true
	}
	for _, name := range []string{"host", "gadget", "gatekeeper"} {
		if !seen[name] {
			t.Errorf("docs/wit.md does not show atelier:%s", name)
		}
	}
}
