package docs_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"atelier/sdk/templates"
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
