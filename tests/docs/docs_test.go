// Package docs_test runs the code blocks of the project's documentation. Each fenced block
// gets a plan (the rules in plan_test.go): shell blocks and Cap'n Web client blocks run in
// order, document by document, against a real `atelier serve` (run_test.go); files a tutorial
// has the reader write are written and then built by the document's own commands; Go is
// compiled (go vet) in a scratch module; WIT is loaded with the project's packages; manifests
// are parsed by the gatekeeper's parser; output excerpts are compared with what the commands
// printed; the CSP with the shell's. A block that cannot run in a test carries a
// `<!-- docs-test: not run: REASON -->` comment on the line before it, and a block that is
// neither handled nor marked fails TestCodeBlocks.
package docs_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	mark string // the text of a `<!-- docs-test: ... -->` comment on the line before the fence
}

func (b block) String() string { return fmt.Sprintf("%s:%d (%s)", b.file, b.line, b.lang) }

// markComment is the marker a document puts on the line before a block to say how the test
// treats it: `<!-- docs-test: [VARIANT:] not run: REASON | file PATH [from "TEXT"] | declarations of PATH -->`.
var markComment = regexp.MustCompile(`^\s*<!--\s*docs-test:\s*(.*?)\s*-->\s*$`)

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
	var fence, prev string
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
			if m := markComment.FindStringSubmatch(prev); m != nil {
				cur.mark = m[1]
			}
		case cur != nil && strings.TrimSpace(line) == fence:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.src += line + "\n"
		}
		prev = line
	}
	if cur != nil {
		t.Errorf("%s: the block opened at line %d is not closed", file, cur.line)
	}
	return out
}

// TestCodeBlocks plans every block of the documentation, fails on a block that is neither
// handled nor marked not run, and runs the checks that need no server: WIT, Go, manifests and
// declarations. Shell, Node and file blocks, and the CSP, are checked in TestDocsRun.
func TestCodeBlocks(t *testing.T) {
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	var skipped []string
	for _, file := range docFiles(t, root) {
		for _, b := range blocks(t, root, file) {
			for _, p := range plans(b) {
				if p.err != nil {
					t.Errorf("%s: %v", b, p.err)
					continue
				}
				count[p.kind.String()]++
				if p.kind == notRun {
					skipped = append(skipped, fmt.Sprintf("%s: %s", b, p.arg))
				}
				if err := p.static(t, root, b); err != nil {
					t.Errorf("%s: %v\n%s", b, err, b.src)
				}
			}
		}
	}
	t.Logf("blocks by treatment: %v", count)
	t.Logf("blocks not run:\n%s", strings.Join(skipped, "\n"))
	for _, k := range []kind{runShell, runNode, writeFile, compileGo, loadWIT} {
		if count[k.String()] == 0 {
			t.Errorf("no block is planned as %s (%v): is the scan broken?", k, count)
		}
	}
}

// checkWIT loads src with the project's WIT packages as dependencies; a block without a
// package declaration is a fragment of package docs:example.
func checkWIT(t *testing.T, root, src string) error {
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

// checkScript compiles src as an ES module with esbuild: the syntax check every JavaScript and
// TypeScript block gets before it runs.
func checkScript(src string, loader api.Loader) error {
	res := api.Transform(src, api.TransformOptions{Loader: loader, Format: api.FormatESModule, Target: api.ESNext})
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
