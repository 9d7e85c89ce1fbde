package wit_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"atelier/sdk/wit"
)

func loadFeatures(t *testing.T) (*wit.Resolve, *wit.Package) {
	t.Helper()
	res, roots, err := wit.Load(filepath.Join("testdata", "features", "all.wit"))
	if err != nil {
		t.Fatal(err)
	}
	return res, roots[0]
}

func mustIface(t *testing.T, p *wit.Package, name string) *wit.Interface {
	t.Helper()
	i := p.Interface(name)
	if i == nil {
		t.Fatalf("package %s has no interface %s", p.Name, name)
	}
	return i
}

func mustType(t *testing.T, i *wit.Interface, name string) *wit.TypeDef {
	t.Helper()
	d := i.Type(name)
	if d == nil {
		t.Fatalf("interface %s has no type %s", i.ID(), name)
	}
	return d
}

func TestPackageAndOrder(t *testing.T) {
	res, p := loadFeatures(t)
	want := wit.PackageName{Namespace: "test", Name: "all", Version: "1.2.3-rc.1+build.5"}
	if p.Name != want {
		t.Errorf("package name %+v, want %+v", p.Name, want)
	}
	if p.Docs != "A package that uses every WIT construct the parser knows." {
		t.Errorf("package docs %q", p.Docs)
	}
	var names []string
	for _, q := range res.Packages {
		names = append(names, q.Name.String())
	}
	if !slices.Equal(names, []string{"test:dep@0.1.0", "test:all@1.2.3-rc.1+build.5"}) {
		t.Errorf("packages in order %v, want the dependency first", names)
	}
	if res.Package("test:dep") != res.Packages[0] || res.Package("test:nope") != nil {
		t.Error("Resolve.Package looks up by name with and without version")
	}
}

func TestTypes(t *testing.T) {
	r, p := loadFeatures(t)
	types := mustIface(t, p, "types")
	if types.Gates.Since != "1.0.0" || types.Docs != "Every type." {
		t.Errorf("interface types: gates %+v docs %q", types.Gates, types.Docs)
	}
	if types.ID() != "test:all/types@1.2.3-rc.1+build.5" {
		t.Errorf("ID %s", types.ID())
	}

	point := mustType(t, types, "point")
	if point.Kind != wit.DefRecord || len(point.Fields) != 2 || point.Docs != "A record." {
		t.Fatalf("point: %+v", point)
	}
	if f := point.Fields[0]; f.Name != "x" || f.Type.Kind != wit.S32 || f.Docs != "The x coordinate." {
		t.Errorf("point.x: %+v", f)
	}
	if f := point.Fields[1]; f.Type.Kind != wit.F64 {
		t.Errorf("float64 is f64, got %s", f.Type)
	}

	shape := mustType(t, types, "shape")
	if shape.Docs != "A variant with\ntwo lines of docs." {
		t.Errorf("block doc comment: %q", shape.Docs)
	}
	if c := shape.Cases; len(c) != 3 || c[1].Type != nil || c[1].Docs != "Nothing to draw." || c[2].Type.Elem.Def != point {
		t.Errorf("shape cases: %+v", c)
	}
	if perms := mustType(t, types, "perms"); perms.Kind != wit.DefFlags || perms.Names[1].Name != "list" {
		t.Errorf("flags with an escaped keyword: %+v", perms.Names)
	}
	if again := mustType(t, types, "again"); again.Underlying() != point {
		t.Errorf("again's underlying type is %v, want point", again.Underlying().Name)
	}

	tests := map[string]string{
		"prims":        "tuple<bool, s8, s16, s32, s64, u8, u16, u32, u64, f32, f64, char, string, f32>",
		"results":      "tuple<result, result<u8>, result<_, string>, result<u8, string>>",
		"fixed":        "list<u8, 4>",
		"lookup":       "map<string, list<option<id>>>",
		"async-things": "tuple<future, future<u8>, stream, stream<string>, error-context>",
	}
	for name, want := range tests {
		if got := mustType(t, types, name).Alias.String(); got != want {
			t.Errorf("type %s = %s, want %s", name, got, want)
		}
	}
	if r := mustType(t, types, "results").Alias.Elems; r[0].Ok != nil || r[0].Err != nil || r[2].Ok != nil || r[2].Err.Kind != wit.String {
		t.Errorf("result forms: %s", mustType(t, types, "results").Alias)
	}

	id := mustType(t, types, "id")
	shared := r.Package("test:dep").Interface("shared")
	if id.Kind != wit.DefUse || id.Interface != types || id.Target != shared.Type("id") || id.FromInterface != shared || id.From.String() != "common" {
		t.Errorf("use through a top-level alias: %+v", id)
	}
	colour := mustType(t, types, "colour")
	if colour.FromName != "color" || colour.Underlying().Kind != wit.DefEnum {
		t.Errorf("use with as: %+v", colour)
	}
}

// res loads the features file again for tests that need the whole set.
func res(t *testing.T) *wit.Resolve {
	r, _ := loadFeatures(t)
	return r
}

func TestResourcesAndFuncs(t *testing.T) {
	_, p := loadFeatures(t)
	types := mustIface(t, p, "types")
	blob := mustType(t, types, "blob")
	if blob.Kind != wit.DefResource || blob.Constructor == nil || len(blob.Methods) != 2 || len(blob.Statics) != 2 {
		t.Fatalf("blob: %+v", blob)
	}
	if c := blob.Constructor; c.Docs != "Makes a blob." || c.Result != nil || c.CoreName() != "[constructor]blob" {
		t.Errorf("constructor: %+v", c)
	}
	read := blob.Methods[1]
	if !read.Async || read.CoreName() != "[method]blob.read" || read.Resource != blob {
		t.Errorf("read: %+v", read)
	}
	merge := blob.Statics[0]
	if merge.CoreName() != "[static]blob.merge" || merge.Params[0].Type.Kind != wit.Borrow || merge.Params[1].Type.Kind != wit.Own ||
		merge.Params[0].Type.Def != blob || merge.Result.Def != blob {
		t.Errorf("merge: %+v", merge)
	}
	if fancy := blob.Statics[1]; !fancy.Async || fancy.Gates.Unstable != "fancy" {
		t.Errorf("fancy: %+v", fancy)
	}
	if f := mustType(t, types, "fallible").Constructor; f.Result.String() != "result<fallible, string>" {
		t.Errorf("fallible constructor returns %s", f.Result)
	}
	if e, o := mustType(t, types, "empty"), mustType(t, types, "opaque"); !e.HasBody || o.HasBody {
		t.Errorf("resource {} and resource;: %v %v", e.HasBody, o.HasBody)
	}

	take := types.Func("take")
	if take == nil || take.Gates != (wit.Gates{Since: "1.1.0", Deprecated: "1.2.0"}) || take.Docs != "Uses a handle." {
		t.Fatalf("take: %+v", take)
	}
	if take.Params[2].Name != "type" || take.Params[0].Type.Def.Underlying() != blob {
		t.Errorf("take params: %+v", take.Params)
	}
	if v := types.Func("variant"); v == nil || v.Params[0].Name != "enum" {
		t.Errorf("escaped function and parameter names: %+v", v)
	}
	uses := mustIface(t, p, "uses-types")
	if pt := mustType(t, uses, "pt"); pt.Underlying() != mustType(t, types, "point") {
		t.Errorf("pt: %+v", pt)
	}
}

func TestWorld(t *testing.T) {
	_, p := loadFeatures(t)
	app := p.World("app")
	if app == nil || app.Docs != "A world." || app.ID() != "test:all/app@1.2.3-rc.1+build.5" {
		t.Fatalf("world app: %+v", app)
	}
	if local := app.Type("local"); local == nil || local.Fields[0].Type.Def != app.Type("point") {
		t.Errorf("world types: %+v", app.Types)
	}
	var keys []string
	for _, it := range app.AllImports {
		keys = append(keys, it.Key())
	}
	want := []string{"test:all/types@1.2.3-rc.1+build.5", "test:dep/shared@0.1.0", "log", "store", "primary", "test:dep/clock@0.1.0"}
	if !slices.Equal(keys, want) {
		t.Errorf("imports with includes\n got %v\nwant %v", keys, want)
	}
	store := app.Imports[3]
	if store.Interface.Name != "" || store.Interface.ID() != "store" || store.Interface.Func("get").Result.Elem.Def.Underlying().Name != "blob" {
		t.Errorf("inline interface: %+v", store.Interface)
	}
	if primary := app.Imports[4]; primary.Interface != p.Interface("uses-types") || primary.Name != "primary" {
		t.Errorf("plain-named interface import: %+v", primary)
	}
	keys = keys[:0]
	for _, it := range app.AllExports {
		keys = append(keys, it.Key())
	}
	if want := []string{"run", "test:all/uses-types@1.2.3-rc.1+build.5", "hello"}; !slices.Equal(keys, want) {
		t.Errorf("exports renamed by include ... with: %v, want %v", keys, want)
	}
	if run := app.Exports[0].Func; !run.Async || run.Result.Kind != wit.Result {
		t.Errorf("run: %+v", run)
	}
	if p.World("base").AllExports[0].Name != "greet" {
		t.Error("include ... with must not rename the included world itself")
	}

	w, err := res(t).SelectWorld(p, "")
	if err == nil || !strings.Contains(err.Error(), "2 worlds") {
		t.Errorf("SelectWorld without a name in a package of two worlds: %v %v", w, err)
	}
	r := res(t)
	for _, name := range []string{"app", "test:dep/imports@0.1.0", "test:dep/imports"} {
		if w, err := r.SelectWorld(r.Package("test:all"), name); err != nil || w == nil {
			t.Errorf("SelectWorld %s: %v", name, err)
		}
	}
	if _, err := r.SelectWorld(r.Package("test:all"), "nope"); err == nil {
		t.Error("SelectWorld of a missing world succeeded")
	}
}

func TestMultiFilePackage(t *testing.T) {
	res, roots, err := wit.Load(filepath.Join("testdata", "multi"))
	if err != nil {
		t.Fatal(err)
	}
	p := roots[0]
	if p.Name.String() != "test:multi" || len(p.Files) != 2 {
		t.Fatalf("root package %s from %v", p.Name, p.Files)
	}
	if len(res.Packages) != 3 || res.Packages[0].Name.String() != "test:units" {
		t.Errorf("packages %v: want test:units, test:shapes, test:multi", res.Packages)
	}
	measure := p.Interface("api").Func("measure")
	if u := measure.Params[0].Type.Def.Underlying(); u.Name != "shape" || u.Interface.Package.Name.Name != "shapes" {
		t.Errorf("measure's parameter: %+v", u)
	}
	if a := measure.Result.Def.Underlying(); a.Kind != wit.DefAlias || a.Alias.Kind != wit.F64 {
		t.Errorf("measure's result: %+v", a)
	}
	main := p.World("main")
	if got := main.Exports[0].Interface.ID(); got != "test:shapes/geometry" {
		t.Errorf("export through a top-level use of another file: %s", got)
	}
	roundTrip(t, "multi", res)
}

func TestRoundTripFeatures(t *testing.T) {
	res, _ := loadFeatures(t)
	roundTrip(t, "features", res)
	printed := wit.Print(res.Packages[1])
	for _, want := range []string{
		"/// A variant with\n  /// two lines of docs.\n",
		"@since(version = 1.1.0)\n  @deprecated(version = 1.2.0)\n  take: func(b: blob, c: colour, %type: id) -> result<_, mode>;",
		"include base with { greet as hello };",
		"use test:dep/shared@0.1.0.{id, color as colour};",
		"merge: static func(lhs: borrow<blob>, rhs: own<blob>) -> blob;",
		"import store: interface {",
	} {
		if !strings.Contains(printed, want) {
			t.Errorf("printed WIT lacks %q:\n%s", want, printed)
		}
	}
}

func TestEscapedKeywords(t *testing.T) {
	res, roots, err := wit.Load(filepath.Join("testdata", "features", "keywords.wit"))
	if err != nil {
		t.Fatal(err)
	}
	p := roots[0]
	if p.Name.Namespace != "record" || p.Name.Name != "type" || p.Interface("interface").Type("list") == nil {
		t.Errorf("escaped names: %+v", p)
	}
	if text := wit.Print(p); !strings.Contains(text, "package %record:%type@1.0.0;") || !strings.Contains(text, "import %interface;") {
		t.Errorf("printed names are not escaped:\n%s", text)
	}
	roundTrip(t, "keywords", res)
}
