package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestNewUsage(t *testing.T) {
	dir := t.TempDir()
	fails(t, 2, []string{"new", "gadget", "x"}, "--lang is required", "c, go, js, ts")
	fails(t, 2, []string{"new", "gadget"}, "want a kind")
	fails(t, 1, []string{"new", "gadget", "--lang", "cobol", "x"}, "no gadget template for language")
	out := ok(t, "new", "gadget", "--lang", "js", "--dir", filepath.Join(dir, "c"), "counter")
	for _, want := range []string{"Created gadget counter (JavaScript)", "app.js", "atelier build",
		"atelier gadget deploy counter build/counter.wasm --grant atelier:host/kv,atelier:host/log"} {
		if !strings.Contains(out, want) {
			t.Errorf("atelier new printed %q, want %q in it", out, want)
		}
	}
	fails(t, 1, []string{"new", "gadget", "--lang", "js", "--dir", filepath.Join(dir, "c"), "counter"}, "not empty")
	fails(t, 1, []string{"new", "gatekeeper", "--lang", "js", "--format", "extism", "x"}, "format extism is for gatekeepers in Go")
	out = ok(t, "new", "gatekeeper", "--lang", "go", "--format", "extism", "--dir", filepath.Join(dir, "x"), "board")
	if !strings.Contains(out, "Created gatekeeper board (Go, an Extism plugin)") || !strings.Contains(out, "atelier gatekeeper install build/board.gkp") {
		t.Errorf("atelier new --format extism printed %q", out)
	}
}

// newProject makes a project with atelier new and applies edits to its files.
func newProject(t *testing.T, kind, lang string, edits map[string]func(string) string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "probe")
	ok(t, "new", kind, "--lang", lang, "--dir", dir, "probe")
	for name, edit := range edits {
		path := filepath.Join(dir, name)
		old, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(edit(string(old))), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBuildChecks builds projects whose component the server would refuse, and one it takes.
func TestBuildChecks(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: runs go, node and the npm tools")
	}
	// A JS gadget whose world imports events without the grant: componentize-qjs imports it.
	dir := newProject(t, "gadget", "js", map[string]func(string) string{"wit/world.wit": func(s string) string {
		return strings.Replace(s, "import atelier:host/kv@0.1.0;", "import atelier:host/kv@0.1.0;\n  import atelier:host/events@0.1.0;", 1)
	}})
	fails(t, 1, []string{"build", dir}, "world.wit:", "imports atelier:host/events@0.1.0", `add "atelier:host/events" to "grants"`, "remove it from world probe")
	if _, err := os.Stat(filepath.Join(dir, "build")); err == nil {
		t.Error("a refused build wrote its output")
	}
	// A Go gadget that publishes events without the grant: the source line is named.
	dir = newProject(t, "gadget", "go", map[string]func(string) string{"main.go": func(s string) string {
		return strings.Replace(s, `bindings.LogWrite(bindings.LevelInfo, "reset")`, `bindings.LogWrite(bindings.LevelInfo, "reset")
	_ = bindings.EventsPublish("count", "0")`, 1)
	}})
	fails(t, 1, []string{"build", dir}, "main.go:", "imports atelier:host/events@0.1.0", "stop using it")
	// A gatekeeper whose resource kinds differ from its manifest's: refused as install would.
	dir = newProject(t, "gatekeeper", "go", map[string]func(string) string{"main.go": func(s string) string {
		return strings.Replace(s, `{Kind: "board", Title: "Board"`, `{Kind: "wall", Title: "Board"`, 1)
	}})
	fails(t, 1, []string{"build", dir}, "the package would be refused", "board", "wall")
	// An Extism project whose manifest does not say so: the package would not open.
	dir = filepath.Join(t.TempDir(), "board")
	ok(t, "new", "gatekeeper", "--lang", "go", "--format", "extism", "--dir", dir, "board")
	manifest := filepath.Join(dir, "manifest.json")
	m, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(manifest, []byte(strings.Replace(string(m), `"format": "extism",`, "", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	fails(t, 1, []string{"build", dir}, "manifest.json says format component but atelier.json says extism")
	// The template builds, and a second build comes from the cache.
	dir = newProject(t, "gadget", "ts", nil)
	out := ok(t, "build", dir)
	if !strings.Contains(out, "Built "+filepath.Join(dir, "build", "probe.wasm")) || !strings.Contains(out, "atelier gadget deploy probe") {
		t.Errorf("build printed %q", out)
	}
	r := atelier(t.Context(), "", "build", "-o", filepath.Join(dir, "other.wasm"), dir)
	if r.code != 0 || !strings.Contains(r.err, "from the cache") {
		t.Errorf("second build: exit %d, stderr %q; want a cache hit", r.code, r.err)
	}
}
