package jsruntime

import "testing"

func TestSourceMapLookup(t *testing.T) {
	// "AAAA;AACA,IAAI" : line 1 col 0 -> 0:0; line 2 col 0 -> 1:0, col 4 -> 1:4.
	m, err := parseSourceMap([]byte(`{"version":3,"sources":["x.ts"],"mappings":"AAAA;AACA,IAAI"}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ line, col, wantLine, wantCol int }{
		{1, 1, 1, 1}, {2, 1, 2, 1}, {2, 3, 2, 1}, {2, 5, 2, 5}, {2, 40, 2, 5},
	} {
		l, c, ok := m.lookup(tc.line, tc.col)
		if !ok || l != tc.wantLine || c != tc.wantCol {
			t.Errorf("lookup(%d, %d) = %d, %d, %v; want %d, %d", tc.line, tc.col, l, c, ok, tc.wantLine, tc.wantCol)
		}
	}
	if _, _, ok := m.lookup(3, 1); ok {
		t.Error("a line past the map was found")
	}
	if got := mapPositions("at f (x.js:2:5)\nat g (y.js:1:1)", map[string]*sourceMap{"x.js": m}); got != "at f (x.ts:2:5)\nat g (y.js:1:1)" {
		t.Errorf("mapPositions: %q", got)
	}
}

// FuzzSourceMap: any input is parsed or refused, never a panic, and lookups stay in range.
func FuzzSourceMap(f *testing.F) {
	for _, s := range []string{
		`{"sources":["a.ts"],"mappings":"AAAA;AACA,IAAI"}`,
		`{"sources":["a.ts"],"mappings":";;gBAAgB,CAAC"}`,
		`{"sources":["a.ts"],"mappings":"A"}`,
		`{"sources":["a.ts"],"mappings":"//////"}`,
		`{"sources":[],"mappings":"AAAA"}`,
		`not json`,
	} {
		f.Add([]byte(s), 1, 1)
	}
	f.Fuzz(func(t *testing.T, text []byte, line, col int) {
		m, err := parseSourceMap(text)
		if err != nil {
			return
		}
		m.lookup(line, col)
		mapPositions("a.js:1:1 a.js:99999999999999999999:1", map[string]*sourceMap{"a.js": m})
	})
}
