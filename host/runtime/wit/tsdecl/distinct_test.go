package tsdecl

import (
	"regexp"
	"strings"
	"testing"

	"atelier/host/runtime/wit"
)

// TestCollisionsAreDeclaredOnce: exports whose names collide once mapped (an interface at two
// versions, kebab names that map to one camelCase name, a resource and a function of the same
// name) are declared once, the others named as unreachable; Distinct reports each pair.
func TestCollisionsAreDeclaredOnce(t *testing.T) {
	u32 := &wit.Type{Kind: wit.U32}
	fn := func(name string) wit.Item {
		return wit.Item{Name: name, Kind: wit.ItemFunc, Func: &wit.FuncType{Result: u32}}
	}
	exports := []wit.Item{
		fn("GETX"), fn("GET-X"),
		fn("[constructor]counter"), fn("counter"),
		{Name: "acme:app/api@0.1.0", Kind: wit.ItemInstance, Exports: []wit.Item{fn("get")}},
		{Name: "acme:app/api@0.2.0", Kind: wit.ItemInstance, Exports: []wit.Item{fn("get"), fn("put")}},
	}
	_, cols := Distinct(exports)
	want := []string{
		`exports "GETX" and "GET-X" are both "GETX" to callers`,
		`exports "resource counter" and "counter" are both "counter" to callers`,
		`exports "acme:app/api@0.1.0" and "acme:app/api@0.2.0" are both "api" to callers`,
	}
	if len(cols) != len(want) {
		t.Fatalf("Distinct found %v, want %d collisions", cols, len(want))
	}
	for i, c := range cols {
		if c.String() != want[i] {
			t.Errorf("collision %d = %q, want %q", i, c, want[i])
		}
	}
	member := regexp.MustCompile(`(?m)^\s*("?[A-Za-z.]+"?)(?:\(|: \{)`)
	for _, m := range []Mapping{JSON, CapnWeb} {
		decl := Declare("app", exports, m)
		seen := map[string]bool{}
		for _, g := range member.FindAllStringSubmatch(decl, -1) {
			if seen[g[1]] {
				t.Errorf("mapping %d declares %s twice:\n%s", m, g[1], decl)
			}
			seen[g[1]] = true
		}
		if !strings.Contains(decl, `// Not reachable: "acme:app/api@0.2.0"; "acme:app/api@0.1.0" has the name.`) {
			t.Errorf("mapping %d does not name the unreachable interface:\n%s", m, decl)
		}
	}
}
