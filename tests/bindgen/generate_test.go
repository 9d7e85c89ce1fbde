package bindgen_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"atelier/sdk/wit"
	"atelier/sdk/wit/gogen"
)

var update = flag.Bool("update", false, "rewrite the generated bindings of the test guests")

// generated lists the guests whose bindings are generated, and where they go.
var generated = []struct {
	wit        []string
	world, pkg string
	out        string
}{
	{[]string{"guest/wit"}, "roundtrip", "", "guest/bindings"},
	{[]string{"../../gadgets/counter-gen/wit", "../../wit/gadget", "../../wit/host"}, "counter", "bindings", "../../gadgets/counter-gen/bindings"},
	{[]string{"../../gadgets/slides-go/wit", "../../wit/gadget", "../../wit/host"}, "slides", "bindings", "../../gadgets/slides-go/bindings"},
}

// TestBindingsUpToDate regenerates the guests' bindings and wants them equal to the files the
// guests are built from (run with -update to rewrite them).
func TestBindingsUpToDate(t *testing.T) {
	for _, g := range generated {
		res, roots, err := wit.Load(g.wit...)
		if err != nil {
			t.Fatal(err)
		}
		w, err := res.SelectWorld(roots[0], g.world)
		if err != nil {
			t.Fatal(err)
		}
		files, err := gogen.Generate(w, gogen.Options{Package: g.pkg})
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			path := filepath.Join(g.out, f.Name)
			if *update {
				if err := os.WriteFile(path, f.Src, 0o644); err != nil {
					t.Fatal(err)
				}
				continue
			}
			have, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(have, f.Src) {
				t.Errorf("%s is stale: run go test ./tests/bindgen -run TestBindingsUpToDate -update", path)
			}
		}
	}
}
