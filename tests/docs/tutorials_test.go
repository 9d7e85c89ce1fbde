package docs_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atelier/sdk/templates"
	"atelier/sdk/wit"
	"atelier/sdk/wit/gogen"
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

// TestGadgetTutorialGo builds the Go code of docs/tutorial-gadget.md: a project from the Go
// template whose world and methods are the tutorial's, with bindings generated as atelier
// build generates them, compiled for wasip1.
func TestGadgetTutorialGo(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: compiles a Go guest")
	}
	dir := filepath.Join(t.TempDir(), "tally")
	if _, err := templates.Create(dir, templates.Project{Kind: "gadget", Lang: "go", Name: "tally"}); err != nil {
		t.Fatal(err)
	}
	worldBlock := tutorialBlocks(t, "docs/tutorial-gadget.md", "wit")[0]
	goBlock := tutorialBlocks(t, "docs/tutorial-gadget.md", "go")[0]

	// The tutorial's world replaces the template's; its methods replace the counter's.
	path := filepath.Join(dir, "wit", "world.wit")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, _, ok := strings.Cut(string(src), "world tally {")
	if !ok {
		t.Fatalf("the template's world.wit has no world tally:\n%s", src)
	}
	if err := os.WriteFile(path, []byte(head+worldBlock), 0o644); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(dir, "main.go")
	if src, err = os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	head, _, ok = strings.Cut(string(src), "// load returns")
	if !ok {
		t.Fatalf("the template's main.go changed; update this test:\n%s", src)
	}
	if err := os.WriteFile(path, []byte(head+goBlock), 0o644); err != nil {
		t.Fatal(err)
	}

	w, err := wit.LoadWorld("tally", filepath.Join(dir, "wit"))
	if err != nil {
		t.Fatal(err)
	}
	files, err := gogen.Generate(w, gogen.Options{Package: "bindings", CABI: "tally/internal/cabi"})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "bindings"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, "bindings", f.Name), f.Src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("go", "build", "-buildmode=c-shared", "-o", filepath.Join(t.TempDir(), "core.wasm"), ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "GOWORK=off", "GOFLAGS=-mod=mod")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the tutorial's Go gadget does not build: %v\n%s", err, out)
	}
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
