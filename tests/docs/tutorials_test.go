package docs_test

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"atelier/sdk/templates"
	"atelier/sdk/wit"
	capnwebtests "atelier/tests/capnweb"
)

// tutorialBlocks returns the blocks of a tutorial in lang, in order.
func tutorialBlocks(t *testing.T, file, lang string) []string {
	t.Helper()
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, b := range blocks(t, root, file) {
		if b.lang == lang {
			out = append(out, b.src)
		}
	}
	if len(out) == 0 {
		t.Fatalf("%s has no %s block", file, lang)
	}
	return out
}

// TestGatekeeperTutorialManifest: the manifest docs/tutorial-gatekeeper.md explains is the one
// `atelier new gatekeeper board` writes.
func TestGatekeeperTutorialManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "board")
	if _, err := templates.Create(dir, templates.Project{Kind: "gatekeeper", Lang: "go", Name: "board"}); err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	if err := json.Unmarshal(real, &want); err != nil {
		t.Fatal(err)
	}
	doc := tutorialBlocks(t, "docs/tutorial-gatekeeper.md", "json")[0]
	if err := json.NewDecoder(bytes.NewReader([]byte(doc))).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("the tutorial's manifest differs from the template's:\n%s", real)
	}
}

// TestGadgetTutorialAsWritten applies the edits of docs/tutorial-gadget.md to the project
// `atelier new gadget tally` makes, in Go and in JavaScript, as its prose says them (each file
// block's mark must make the edit the paragraph before it describes: plans and proseEdit):
// the world then loads with exactly the tally's exports, each once, and main.go parses with
// the tally's methods. TestDocsRun follows the same steps with `atelier build` and calls the
// result.
func TestGadgetTutorialAsWritten(t *testing.T) {
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	const file = "docs/tutorial-gadget.md"
	for _, lang := range []string{"go", "js"} {
		t.Run(lang, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "tally")
			if _, err := templates.Create(dir, templates.Project{Kind: "gadget", Lang: lang, Name: "tally"}); err != nil {
				t.Fatal(err)
			}
			edits := 0
			for _, b := range blocks(t, root, file) {
				for _, p := range plans(b) {
					if p.err != nil {
						t.Fatalf("%s: %v", b, p.err)
					}
					if p.kind != writeFile || (p.variant != "" && p.variant != lang) {
						continue
					}
					if err := p.edit(dir, b.src); err != nil {
						t.Fatalf("%s: %v", b, err)
					}
					edits++
				}
			}
			if edits < 2 {
				t.Fatalf("%d edits of the project in %s, want the world's and the code's", edits, file)
			}
			world, err := wit.LoadWorld("tally", filepath.Join(dir, "wit"))
			if err != nil {
				t.Fatalf("the world after the tutorial's edits: %v", err)
			}
			var exports []string
			for _, it := range world.Exports {
				exports = append(exports, it.Name)
			}
			if !slices.Equal(exports, []string{"add", "get"}) {
				t.Errorf("the world exports %v after the tutorial's edits, want [add get]", exports)
			}
			if lang != "go" {
				return
			}
			f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, "main.go"), nil, 0)
			if err != nil {
				t.Fatalf("main.go after the tutorial's edits: %v", err)
			}
			var methods []string
			for _, d := range f.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
					methods = append(methods, fn.Name.Name)
				}
			}
			if !slices.Equal(methods, []string{"Add", "Get"}) {
				t.Errorf("main.go's counter has the methods %v after the tutorial's edits, want [Add Get]", methods)
			}
		})
	}
}
