// Package docs_test runs the code blocks of the project's documentation. Each fenced block
// gets a plan (the rules in plan_test.go): shell blocks and Cap'n Web client blocks run in
// order, document by document, against a real `atelier serve` (run_test.go), and a client
// block must close the session it opens so that node exits by itself; files a tutorial has the
// reader write are written, with the edit the paragraph before the block tells the reader to
// make (proseEdit), and then built by the document's own commands; Go is
// compiled (go vet) in a scratch module; WIT is loaded with the project's packages; manifests
// are parsed by the gatekeeper's parser; output excerpts are compared with what the commands
// printed; the CSP with the shell's. A block that cannot run in a test carries a
// `<!-- docs-test: not run: REASON -->` comment on the line before it, and a block that is
// neither handled nor marked fails TestCodeBlocks.
package docs_test

import (
	"bufio"
	"bytes"
	"errors"
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
	// prose is the paragraph right before the block (its lines joined by spaces, the mark
	// comment left out): where a document says what the reader does with the block.
	prose string
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
	// The lines of the paragraph the current line is in, and of the one before it since the
	// last block (a blank line and the mark may stand between a paragraph and its block).
	var para, lastPara []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		inBlock := cur != nil // before this line
		switch {
		case cur == nil && strings.HasPrefix(trimmed, "```"):
			fence = trimmed[:len(trimmed)-len(strings.TrimLeft(trimmed, "`"))]
			info := strings.Fields(strings.TrimPrefix(trimmed, fence))
			if len(para) == 0 {
				para = lastPara
			}
			cur = &block{file: file, line: n, prose: strings.Join(para, " ")}
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
		switch {
		case inBlock || cur != nil:
			para, lastPara = nil, nil
		case strings.TrimSpace(line) == "":
			if len(para) > 0 {
				lastPara = para
			}
			para = nil
		case !markComment.MatchString(line):
			para = append(para, strings.TrimSpace(line))
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

// sessionOpen is a JavaScript declaration of a Cap'n Web session's main stub:
// `const NAME = newWebSocketRpcSession(...)` (or newHttpBatchRpcSession, with let, var or using).
var sessionOpen = regexp.MustCompile(`\b(const|let|var|using)\s+(\w+)\s*=\s*new\w*RpcSession\(`)

// checkDisposes requires a client block that opens a Cap'n Web session to close it when done,
// so that `node snippet.mjs` exits instead of waiting on the open WebSocket: the session is
// declared with `using`, or the block calls `NAME[Symbol.dispose]()` after opening it.
func checkDisposes(src string) error {
	var errs []error
	for _, m := range sessionOpen.FindAllStringSubmatchIndex(src, -1) {
		decl, name := src[m[2]:m[3]], src[m[4]:m[5]]
		if decl == "using" {
			continue
		}
		dispose := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\s*\[\s*Symbol\.dispose\s*\]\s*\(\s*\)`)
		if !dispose.MatchString(src[m[1]:]) {
			errs = append(errs, fmt.Errorf("the block opens a session (%s) and never closes it: end it with `%s[Symbol.dispose]();` (or declare it with `using`), or node keeps running", name, name))
		}
	}
	return errors.Join(errs...)
}

// TestCheckDisposes: the check of checkDisposes tells a closed session from an open one.
func TestCheckDisposes(t *testing.T) {
	open := "import { newWebSocketRpcSession } from \"capnweb\";\nconst root = newWebSocketRpcSession(\"ws://127.0.0.1:8787/api\");\nawait root.ping();\n"
	for src, ok := range map[string]bool{
		open:                                false,
		open + "root[Symbol.dispose]();\n":  true,
		open + "other[Symbol.dispose]();\n": false,
		strings.Replace(open, "const root", "using root", 1):      true,
		"root[Symbol.dispose]();\n" + open:                        false, // disposed before it is opened
		"const api = root.authenticate(token);\nawait api.x();\n": true,  // a continuation: the session is an earlier block's
	} {
		if err := checkDisposes(src); (err == nil) != ok {
			t.Errorf("checkDisposes = %v, want ok %v, for:\n%s", err, ok, src)
		}
	}
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
