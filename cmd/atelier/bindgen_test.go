package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBindgenHelp(t *testing.T) {
	out := ok(t, "help", "bindgen")
	for _, want := range []string{"--lang go|ts --world NAME --out DIR [--package NAME] [--cabi PATH] WIT_PATH...", "abi_wasip1.go", ".d.ts"} {
		if !strings.Contains(out, want) {
			t.Errorf("atelier help bindgen lacks %q:\n%s", want, out)
		}
	}
}

func TestBindgenGo(t *testing.T) {
	out := t.TempDir()
	wit := filepath.Join("..", "..", "sdk", "wit", "gogen", "testdata", "small", "small.wit")
	printed := ok(t, "bindgen", "--lang", "go", "--world", "small", "--package", "bindings", "--out", out, wit)
	golden := filepath.Join("..", "..", "sdk", "wit", "gogen", "testdata", "small", "bindings")
	for _, name := range []string{"types.go", "abi_wasip1.go"} {
		if !strings.Contains(printed, filepath.Join(out, name)) {
			t.Errorf("output does not list %s: %q", name, printed)
		}
		got, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join(golden, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the generator's golden file", name)
		}
	}
}

func TestBindgenTS(t *testing.T) {
	out := t.TempDir()
	wit := filepath.Join("..", "..", "sdk", "wit", "gogen", "testdata", "small", "small.wit")
	printed := ok(t, "bindgen", "--lang", "ts", "--out", out, wit)
	for name, wants := range map[string][]string{
		"small.d.ts":        {"declare const small", `"api.greet"(g: Greeting, style: Style): Promise<Reply>`, "run(): Promise<void>"},
		"small.client.d.ts": {"declare const small: {\n  api: {", "    greet(g: Greeting, style: Style): Promise<Reply>;"},
		"imports.d.ts": {
			"declare module \"example:small/store@1.0.0\" {",
			"  export class Blob {\n    /** Makes a blob holding data. */\n    constructor(data: Uint8Array | number[]);",
			"    static merge(a: Blob, b: Blob): Blob;",
			"// Not declared: the world imports the functions log outside an interface",
		},
	} {
		if !strings.Contains(printed, filepath.Join(out, name)) {
			t.Errorf("output does not list %s: %q", name, printed)
		}
		src, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range wants {
			if !strings.Contains(string(src), want) {
				t.Errorf("%s lacks %q:\n%s", name, want, src)
			}
		}
	}
}

func TestBindgenErrors(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.wit")
	if err := os.WriteFile(broken, []byte("package a:b;\nworld w { import f: func(x: list<u8, ); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	small := filepath.Join("..", "..", "sdk", "wit", "gogen", "testdata", "small", "small.wit")
	fails(t, 2, []string{"bindgen", "--lang", "rust", "--out", dir, small}, `--lang must be go or ts, not "rust"`)
	fails(t, 2, []string{"bindgen", "--lang", "go", small}, "--out is required")
	fails(t, 2, []string{"bindgen", "--lang", "go", "--out", dir}, "want at least one WIT file")
	fails(t, 1, []string{"bindgen", "--lang", "go", "--out", dir, broken}, "broken.wit:2:")
	fails(t, 1, []string{"bindgen", "--lang", "go", "--world", "nope", "--out", dir, small}, `has no world "nope"`)
}
