package tsdecl

import (
	"regexp"
	"strings"
	"testing"

	"atelier/host/runtime/wit"
)

func TestDeclare(t *testing.T) {
	str, u8, u64 := &wit.Type{Kind: wit.String}, &wit.Type{Kind: wit.U8}, &wit.Type{Kind: wit.U64}
	bytes := &wit.Type{Kind: wit.List, Elem: u8}
	color := &wit.Type{Kind: wit.Enum, Name: "color", Names: []string{"red", "green"}}
	blob := &wit.Type{Kind: wit.Record, Name: "blob-info", Fields: []wit.Field{{Name: "data", Type: bytes}, {Name: "due-date", Type: &wit.Type{Kind: wit.Option, Elem: u64}}}}
	shape := &wit.Type{Kind: wit.Variant, Cases: []wit.Case{{Name: "circle", Type: &wit.Type{Kind: wit.F64}}, {Name: "none"}}}
	exports := []wit.Item{
		{Name: "put-blob", Kind: wit.ItemFunc, Func: &wit.FuncType{Params: []wit.Param{{Name: "b", Type: blob}, {Name: "class", Type: color}},
			Result: &wit.Type{Kind: wit.Result, Ok: blob, Err: str}}},
		{Name: "area", Kind: wit.ItemFunc, Func: &wit.FuncType{Params: []wit.Param{{Name: "s", Type: shape}},
			Result: &wit.Type{Kind: wit.Tuple, Elems: []*wit.Type{u64, &wit.Type{Kind: wit.Flags, Names: []string{"a", "b"}}}}}},
		{Name: "acme:app/admin@1.0.0", Kind: wit.ItemInstance, Exports: []wit.Item{
			{Name: "reset", Kind: wit.ItemFunc, Func: &wit.FuncType{Result: &wit.Type{Kind: wit.Option, Elem: &wit.Type{Kind: wit.Option, Elem: str}}}},
		}},
	}
	for _, tc := range []struct {
		m    Mapping
		want []string
	}{
		{JSON, []string{
			`type BlobInfoInput = { data: number[]; "due-date": number | null };`,
			`type BlobInfo = { data: string /* base64 */; "due-date": number | null };`,
			`type Color = "red" | "green";`,
			`putBlob(b: BlobInfoInput, _class: Color): Promise<BlobInfo>;`,
			`@throws string`,
			`area(s: { tag: "circle"; val: number } | { tag: "none" }): Promise<[number, Array<"a" | "b">]>;`,
			`"admin.reset"(): Promise<{ some: string | null } | null>;`,
		}},
		{CapnWeb, []string{
			`type BlobInfo = { data: Uint8Array; "due-date": number | bigint | null };`,
			`Promise<[number | bigint, Array<"a" | "b">]>`,
			"  admin: {\n    /** reset: func() -> option<option<string>> */\n    reset(): Promise<{ some: string | null } | null>;\n  };",
		}},
	} {
		got := Declare("store", exports, tc.m)
		if !strings.Contains(got, "declare const store: {") {
			t.Errorf("mapping %d: no declaration of store:\n%s", tc.m, got)
		}
		for _, w := range tc.want {
			if !strings.Contains(got, w) {
				t.Errorf("mapping %d: lacks %q:\n%s", tc.m, w, got)
			}
		}
	}
}

func TestNames(t *testing.T) {
	for in, want := range map[string]string{"make-counter": "makeCounter", "acme:app/api@1.0.0": "api", "x": "x", "a--b": "aB"} {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string][3]any{
		"add-one": {"", "addOne", false}, "[constructor]my-blob": {"my-blob", "new", false},
		"[static]my-blob.merge-all": {"my-blob", "mergeAll", false}, "[method]my-blob.read-at": {"my-blob", "readAt", true},
	} {
		if res, member, method := Member(in); [3]any{res, member, method} != want {
			t.Errorf("Member(%q) = %q, %q, %t, want %v", in, res, member, method, want)
		}
	}
	if got := DeclareUntyped("2do", []string{"b", "a"}); got != "declare const \"2do\": {\n  a(...args: unknown[]): Promise<unknown>;\n  b(...args: unknown[]): Promise<unknown>;\n};\n" {
		t.Errorf("DeclareUntyped = %q", got)
	}
}

// TestResources: over Cap'n Web a resource is a property holding its constructor ("new",
// quoted: unquoted it would declare a construct signature) and static functions, and its
// handles are stubs with its methods; two interfaces' resources of one name get distinct
// stubs. In the JSON mapping the functions with handles are named in a comment only.
func TestResources(t *testing.T) {
	own := func(r string) *wit.Type { return &wit.Type{Kind: wit.Own, Resource: r} }
	borrow := func(r string) *wit.Type { return &wit.Type{Kind: wit.Borrow, Resource: r} }
	fn := func(name string, res *wit.Type, params ...*wit.Type) wit.Item {
		ft := &wit.FuncType{Result: res}
		for i, p := range params {
			ft.Params = append(ft.Params, wit.Param{Name: string(rune('a' + i)), Type: p})
		}
		return wit.Item{Name: name, Kind: wit.ItemFunc, Func: ft}
	}
	u32 := &wit.Type{Kind: wit.U32}
	iface := func(name string) wit.Item {
		return wit.Item{Name: name, Kind: wit.ItemInstance, Exports: []wit.Item{
			fn("[constructor]counter", own("counter"), u32),
			fn("[method]counter.add-one", u32, borrow("counter")),
			fn("[static]counter.merge", own("counter"), own("counter"), borrow("counter")),
			fn("total", u32, &wit.Type{Kind: wit.List, Elem: borrow("counter")}),
			fn("size", u32),
		}}
	}
	exports := []wit.Item{iface("acme:app/api@1.0.0"), iface("acme:app/other@1.0.0")}
	got := Declare("app", exports, CapnWeb)
	for _, want := range []string{
		"interface Counter {\n  /** [method]counter.add-one: func(a: borrow<counter>) -> u32 */\n  addOne(): Promise<number>;\n  /** Drops the handle: the resource's destructor runs in the gadget, once. */\n  [Symbol.dispose](): void;\n}",
		"interface OtherCounter {\n",
		"  api: {\n    /** total: func(a: list<borrow<counter>>) -> u32 */\n    total(a: Array<Counter>): Promise<number>;\n",
		"    counter: {\n      /** [constructor]counter: func(a: u32) -> counter */\n      \"new\"(a: number): Promise<Counter>;\n",
		"      merge(a: Counter, b: Counter): Promise<Counter>;\n    };\n  };\n  other: {",
		"    total(a: Array<OtherCounter>): Promise<number>;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("CapnWeb lacks %q:\n%s", want, got)
		}
	}
	got = Declare("app", exports, JSON)
	for _, want := range []string{
		"  \"api.size\"(): Promise<number>;\n",
		"  // Not callable with JSON values (they take or return resources, which only a connect() stub can hold): api.total, api.counter.new, api.counter.merge, other.total, other.counter.new, other.counter.merge.\n};",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("JSON lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "interface") || strings.Contains(got, "addOne") {
		t.Errorf("JSON declares handles:\n%s", got)
	}
}

// TestStubAndTypeNames: a resource stub and a named type of one TypeScript name (resource
// blob of one interface, record blob of another) get distinct names, as two interfaces'
// resources do: TypeScript refuses two declarations of one type name.
func TestStubAndTypeNames(t *testing.T) {
	u32 := &wit.Type{Kind: wit.U32}
	record := &wit.Type{Kind: wit.Record, Name: "blob", Fields: []wit.Field{{Name: "x", Type: u32}}}
	exports := []wit.Item{
		{Name: "acme:app/api@1.0.0", Kind: wit.ItemInstance, Exports: []wit.Item{
			{Name: "[method]blob.size", Kind: wit.ItemFunc, Func: &wit.FuncType{Params: []wit.Param{{Name: "self", Type: &wit.Type{Kind: wit.Borrow, Resource: "blob"}}}, Result: u32}},
		}},
		{Name: "acme:app/other@1.0.0", Kind: wit.ItemInstance, Exports: []wit.Item{
			{Name: "put", Kind: wit.ItemFunc, Func: &wit.FuncType{Params: []wit.Param{{Name: "b", Type: record}}, Result: record}},
		}},
	}
	got := Declare("app", exports, CapnWeb)
	seen := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^(?:type|interface) (\w+)`).FindAllStringSubmatch(got, -1) {
		if seen[m[1]] {
			t.Errorf("%s is declared twice:\n%s", m[1], got)
		}
		seen[m[1]] = true
	}
	for _, want := range []string{"interface Blob {", "type OtherBlob = { x: number };", "put(b: OtherBlob): Promise<OtherBlob>;"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
}
