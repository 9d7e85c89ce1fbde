package kernel_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestQJSInitIsInternal: componentize-qjs's `init` export is not part of a gadget's RPC
// surface, its binding, describeBinding or the method list, and inspect marks it internal.
func TestQJSInitIsInternal(t *testing.T) {
	code, err := os.ReadFile("testdata/qjsinit.wat")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := codeWorkspace(t, s.user(t, "ada"))
	g := ws.Call(ctx, "createGadget", "qjs", code, []string{})
	await(t, g)
	app := g.Call(ctx, "connect")
	if got := await(t, app.Call(ctx, "hello")); got != float64(7) {
		t.Fatalf("hello() = %v", got)
	}
	refused(t, app.Call(ctx, "init", "", "", nil, false), "NOT_FOUND", `no exported function "init"`)
	for _, b := range await(t, ws.Call(ctx, "listBindings")).([]any) {
		if b := b.(map[string]any); b["name"] == "qjs" {
			if ms := b["methods"].([]any); len(ms) != 1 || ms[0] != "hello" {
				t.Errorf("binding qjs has methods %v, want [hello]", ms)
			}
		}
	}
	decl := await(t, ws.Call(ctx, "describeBinding", "qjs")).(string)
	if !strings.Contains(decl, "hello(): Promise<number>;") || strings.Contains(decl, "init") {
		t.Errorf("describeBinding(qjs) should declare hello and not init:\n%s", decl)
	}
	if res := run(t, ws, `export default async (env) => typeof env.qjs.init`); res["value"] == "function" {
		t.Errorf("env.qjs.init is callable: %v", res)
	}
	var marked bool
	for _, l := range await(t, g.Call(ctx, "inspect")).([]any) {
		l := l.(string)
		if strings.HasPrefix(l, "export init: ") {
			marked = strings.HasSuffix(l, "(internal: componentize-qjs's initializer, called once at build time; not callable)")
		}
	}
	if !marked {
		t.Errorf("inspect does not mark init internal")
	}
}

// TestCollidingExportsAreRefused: exports that callers would see under one name (an interface
// at two versions, kebab names that map to one camelCase name) are refused at create and at
// deploy, naming both, rather than one shadowing the other.
func TestCollidingExportsAreRefused(t *testing.T) {
	code, err := os.ReadFile("testdata/collide.wat")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	for _, want := range []string{
		`exports "GETX" and "GET-X" are both "GETX" to callers`,
		`exports "test:x/api@0.1.0" and "test:x/api@0.2.0" are both "api" to callers`,
	} {
		refused(t, ws.Call(ctx, "createGadget", "collide", code, []string{}), "INVALID_ARGUMENT", want)
	}
	g := ws.Call(ctx, "createGadget", "qjs", qjsInit(t), []string{})
	await(t, g)
	refused(t, g.Call(ctx, "deploy", code, []string{}), "INVALID_ARGUMENT", `exports "GETX" and "GET-X" are both "GETX" to callers`)
}

func qjsInit(t *testing.T) []byte {
	t.Helper()
	code, err := os.ReadFile("testdata/qjsinit.wat")
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// TestInspectKeepsNames: a gadget's inspect() writes each type under the name the component
// gives it (records with the same fields stay distinct, aliases stay, resources are named),
// read from the deployed binary. The component is sdk/wit/witdecode/testdata/twins.
func TestInspectKeepsNames(t *testing.T) {
	code, err := os.ReadFile("../../sdk/wit/witdecode/testdata/twins/twins.wasm")
	if err != nil {
		t.Fatal(err)
	}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	g := ws.Call(ctx, "createGadget", "twins", code, []string{})
	await(t, g)
	lines := anyStrings(await(t, g.Call(ctx, "inspect")).([]any))
	for _, want := range []string{
		"export atelier:probe/twins@0.1.0.point: type record point { x: s32, y: s32 }",
		"export atelier:probe/twins@0.1.0.size: type record size { x: s32, y: s32 }",
		"export atelier:probe/twins@0.1.0.coord: type coord = point",
		"export atelier:probe/twins@0.1.0.swap: func(a: size) -> coord",
		"export atelier:probe/twins@0.1.0.[constructor]counter: func(start: u32) -> counter",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("inspect() has no line %q:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}
