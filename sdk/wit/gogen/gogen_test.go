package gogen_test

import (
	"bytes"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"atelier/sdk/wit"
	"atelier/sdk/wit/gogen"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func generate(t *testing.T, src string) ([]gogen.File, error) {
	t.Helper()
	res, pkg, err := wit.LoadSource("test.wit", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	w, err := res.SelectWorld(pkg, "")
	if err != nil {
		t.Fatal(err)
	}
	return gogen.Generate(w, gogen.Options{})
}

// TestGolden generates the bindings of testdata/small/small.wit and compares them with the
// package in testdata/small/bindings (-update rewrites it).
func TestGolden(t *testing.T) {
	res, roots, err := wit.Load("testdata/small/small.wit")
	if err != nil {
		t.Fatal(err)
	}
	w, err := res.SelectWorld(roots[0], "small")
	if err != nil {
		t.Fatal(err)
	}
	files, err := gogen.Generate(w, gogen.Options{Package: "bindings"})
	if err != nil {
		t.Fatal(err)
	}
	dir := "testdata/small/bindings"
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range files {
		path := filepath.Join(dir, f.Name)
		if *update {
			if err := os.WriteFile(path, f.Src, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(f.Src, want) {
			t.Errorf("%s differs from the generated code (run go test ./sdk/wit/gogen -run TestGolden -update and review the diff)", path)
		}
	}
}

// TestGoldenCompiles vets the golden package for wasip1 (all of it) and for the host (types.go
// only, through the build constraint).
func TestGoldenCompiles(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go vet")
	}
	for _, goos := range []string{"wasip1", ""} {
		cmd := exec.Command("go", "vet", "./testdata/small/bindings")
		cmd.Env = os.Environ()
		if goos != "" {
			cmd.Env = append(cmd.Env, "GOOS=wasip1", "GOARCH=wasm")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("go vet (GOOS=%s): %v\n%s", goos, err, out)
		}
	}
}

func TestRefused(t *testing.T) {
	for _, tc := range []struct{ name, wit, want string }{
		{"map", "interface i { f: func(m: map<string, u32>); } world w { import i; }", "map<string, u32> is not supported"},
		{"stream", "interface i { f: func() -> stream<u8>; } world w { export i; }", "stream<u8> is not supported"},
		{"fixed list", "interface i { f: func(x: list<u8, 4>); } world w { import i; }", "fixed-length lists are not supported"},
		{"flags", "interface i { flags f { " + flagNames(33) + " } g: func(x: f); } world w { import i; }", "flags f has 33 flags"},
		{"async", "interface i { f: async func(); } world w { import i; }", "async functions are not supported"},
		{"world resource", "world w { resource r; import f: func(x: r); }", "resource r is declared by a world"},
		{"guest borrow to import", "interface e { resource r; } interface i { use e.{r}; f: func(x: borrow<r>); } world w { export e; import i; }",
			"passing borrow<r> of a resource the component exports to an import"},
		{"name clash", "interface i { record a-b { x: u32 } enum a { b } } world w { import i; }", "Go name AB is used by both"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := generate(t, "package t:t;\n"+tc.wit)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), "test.wit:") && !strings.Contains(err.Error(), "Go name") {
				t.Errorf("error %q has no WIT position", err)
			}
		})
	}
}

func flagNames(n int) string {
	names := make([]string, n)
	for i := range names {
		names[i] = "f" + strings.Repeat("x", i+1)
	}
	return strings.Join(names, ", ")
}

// TestSameNameTypes: types of the same name in two interfaces are prefixed with the interface.
func TestSameNameTypes(t *testing.T) {
	files, err := generate(t, `package t:t;
interface a { record error { x: u32 } f: func() -> error; }
interface b { enum error { x } g: func() -> error; }
world w { import a; import b; }`)
	if err != nil {
		t.Fatal(err)
	}
	src := string(files[0].Src)
	for _, want := range []string{"type AError struct", "type BError uint8", "func AF() AError", "func BG() BError"} {
		if !strings.Contains(src+string(files[1].Src), want) {
			t.Errorf("generated code lacks %q", want)
		}
	}
}

// TestParameterlessImportWithReturnArea: an imported function without parameters whose result
// needs a return area (a list of records) passes the area alone.
func TestParameterlessImportWithReturnArea(t *testing.T) {
	files, err := generate(t, `package t:t;
interface a { record item { id: string, n: u64 } items: func() -> list<item>; }
world w { import a; }`)
	if err != nil {
		t.Fatal(err)
	}
	var src string
	for _, f := range files {
		src += string(f.Src)
	}
	if !strings.Contains(src, "wasmimportAItems(ret_)") {
		t.Errorf("generated code lacks the call with the return area alone:\n%s", src)
	}
}
