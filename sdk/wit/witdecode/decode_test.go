package witdecode_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"atelier/sdk/wit"
	"atelier/sdk/wit/witdecode"
)

func decodeFile(t *testing.T, path string) *witdecode.Result {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := witdecode.Decode(b)
	if err != nil {
		t.Fatalf("decode %s: %v", path, err)
	}
	return res
}

// TestTestdata decodes each component in testdata/NAME (NAME.wasm, built from NAME.wat by
// sdk/build-gadget.sh): its interfaces print exactly as the WIT it was written from
// (NAME.wit): records with identical fields under their own names, aliases and uses kept,
// resources named in signatures; its world is what `jco wit` printed for it (jco-wit.golden);
// and the whole WIT loads back.
func TestTestdata(t *testing.T) {
	for _, name := range []string{"shapes", "twins"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			res := decodeFile(t, filepath.Join(dir, name+".wasm"))
			_, pkgs, err := wit.Load(filepath.Join(dir, name+".wit"))
			if err != nil {
				t.Fatal(err)
			}
			src := pkgs[0]
			src.Docs, src.Worlds = "", nil // the world is compared with jco's below
			got := res.Resolve.Package("atelier:probe@0.1.0")
			if got == nil {
				t.Fatalf("no package atelier:probe@0.1.0 in:\n%s", res.WIT())
			}
			if want, have := wit.Print(src), wit.Print(got); have != want {
				t.Errorf("decoded interfaces:\n%s\nwant (%s.wit):\n%s", have, name, want)
			}
			golden, err := os.ReadFile(filepath.Join(dir, "jco-wit.golden"))
			if err != nil {
				t.Fatal(err)
			}
			diffLines(t, "world", normalizeWorld(res.WIT()), normalizeWorld(string(golden)))
			if _, _, err := wit.LoadSource("decoded.wit", []byte(res.WIT())); err != nil {
				t.Errorf("the decoded WIT does not load: %v\n%s", err, res.WIT())
			}
		})
	}
}

// TestShapesLines: the lines of testdata/shapes name every member, in the component's order.
func TestShapesLines(t *testing.T) {
	res := decodeFile(t, "testdata/shapes/shapes.wasm")
	var lines []string
	for _, l := range res.Lines {
		dir := "import "
		if l.Export {
			dir = "export "
		}
		lines = append(lines, dir+l.String())
	}
	for _, want := range []string{
		"import atelier:probe/geometry@0.1.0.size: type record size { x: s32, y: s32 }",
		"import atelier:probe/geometry@0.1.0.coord: type coord = point",
		"import atelier:probe/geometry@0.1.0.thing: resource",
		"import atelier:probe/geometry@0.1.0.move: func(p: point, by: size) -> coord",
		"import atelier:probe/geometry@0.1.0.keep: func(a: thing) -> thing",
		"import atelier:probe/geometry@0.1.0.peek: func(a: borrow<thing>) -> list<size>",
		"import dim: type record dim { x: s32, y: s32 }",
		"import stretch: func(d: dim) -> dim",
		"export atelier:probe/api@0.1.0.thing: use atelier:probe/geometry@0.1.0.{thing}",
		"export atelier:probe/api@0.1.0.extent: type record extent { x: s32, y: s32 }",
		"export atelier:probe/api@0.1.0.move: func(p: point, by: extent) -> corner",
		"export atelier:probe/api@0.1.0.counter: resource",
		"export atelier:probe/api@0.1.0.[constructor]counter: func(start: u32) -> counter",
		"export atelier:probe/api@0.1.0.[method]counter.get: func(self: borrow<counter>) -> u32",
		"export area: func(d: dim) -> u32",
	} {
		if !slices.Contains(lines, want) {
			t.Errorf("no line %q in:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}

// TestMalformed: input that is not a well-formed component gives an error wrapping
// ErrMalformed that says what is wrong, never a panic or a huge allocation.
func TestMalformed(t *testing.T) {
	good, err := os.ReadFile("testdata/shapes/shapes.wasm")
	if err != nil {
		t.Fatal(err)
	}
	header := []byte("\x00asm\x0d\x00\x01\x00")
	for _, c := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "no \\0asm header"},
		{"text", []byte("hello, world\n"), "no \\0asm header"},
		{"core module", []byte("\x00asm\x01\x00\x00\x00"), "core WebAssembly module"},
		{"future version", []byte("\x00asm\x0e\x00\x01\x00"), "unsupported component binary version"},
		{"truncated", good[:len(good)/2], "exceeds"},
		{"section past the end", append(slices.Clone(header), 7, 0xff, 0xff, 0xff, 0xff, 0x0f), "exceeds"},
		{"huge count", append(slices.Clone(header), 7, 5, 0xff, 0xff, 0xff, 0xff, 0x0f), "type count 4294967295 exceeds"},
		{"overlong integer", append(slices.Clone(header), 7, 6, 0x81, 0x81, 0x81, 0x81, 0x81, 0x01), "too long"},
		{"unknown section", append(slices.Clone(header), 42, 0), "unknown section id 42"},
		{"dangling type index", append(slices.Clone(header), 7, 3, 1, 0x70, 5), "type index 5 out of range"},
		{"deep nesting", nested(header, 40), "nested more than"},
		{"deep type", deepType(header, 70000), "more than 65536 parts"},
		{"deep list", listChain(header, 1500), "nests more than 1000 deep"},
		{"type used too often", manyUses(header, 14, 100), "written out have more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			res, err := witdecode.Decode(c.in)
			if err == nil {
				t.Fatalf("no error; decoded:\n%s", res.WIT())
			}
			if !errors.Is(err, witdecode.ErrMalformed) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q, want one wrapping ErrMalformed saying %q", err, c.want)
			}
		})
	}
}

// nested returns a component holding components depth deep.
func nested(header []byte, depth int) []byte {
	body := slices.Clone(header)
	for range depth {
		sec := append([]byte{4}, leb(uint32(len(body)))...)
		body = append(append(slices.Clone(header), sec...), body...)
	}
	return body
}

// deepType returns a component whose type section defines n types, each a tuple of the one
// before it twice: spelled out, the last is 2^n parts.
func deepType(header []byte, n int) []byte {
	var sec bytes.Buffer
	sec.Write(leb(uint32(n)))
	sec.Write([]byte{0x70, 0x7d}) // list<u8>
	for i := 1; i < n; i++ {
		sec.WriteByte(0x6f)
		sec.WriteByte(2)
		sec.Write(sleb(i - 1))
		sec.Write(sleb(i - 1))
	}
	out := slices.Clone(header)
	out = append(out, 7)
	out = append(out, leb(uint32(sec.Len()))...)
	return append(out, sec.Bytes()...)
}

// section returns a section with its id and size.
func section(id byte, body []byte) []byte {
	return append(append([]byte{id}, leb(uint32(len(body)))...), body...)
}

// listChain returns a component with a type list<list<...<u8>>> n deep and a function import
// of it.
func listChain(header []byte, n int) []byte {
	var types bytes.Buffer
	types.Write(leb(uint32(n + 1)))
	types.Write([]byte{0x70, 0x7d})
	for i := 1; i < n; i++ {
		types.WriteByte(0x70)
		types.Write(sleb(i - 1))
	}
	types.Write([]byte{0x40, 1, 1, 'a'})
	types.Write(sleb(n - 1))
	types.Write([]byte{0x01, 0x00})
	imports := []byte{1, 0x00, 1, 'f', 0x01}
	imports = append(imports, leb(uint32(n))...)
	return append(append(slices.Clone(header), section(7, types.Bytes())...), section(10, imports)...)
}

// manyUses returns a component with a tuple type doubled d times, a function type taking it,
// and n imports of such functions: each is small, all of them written out are not.
func manyUses(header []byte, d, n int) []byte {
	var types bytes.Buffer
	types.Write(leb(uint32(d + 2)))
	types.Write([]byte{0x70, 0x7d})
	for i := 1; i <= d; i++ {
		types.Write([]byte{0x6f, 2})
		types.Write(sleb(i - 1))
		types.Write(sleb(i - 1))
	}
	types.Write([]byte{0x40, 1, 1, 'a'})
	types.Write(sleb(d))
	types.Write([]byte{0x01, 0x00})
	var imports bytes.Buffer
	imports.Write(leb(uint32(n)))
	for i := range n {
		name := fmt.Sprintf("f%d", i)
		imports.WriteByte(0x00)
		imports.Write(leb(uint32(len(name))))
		imports.WriteString(name)
		imports.WriteByte(0x01)
		imports.Write(leb(uint32(d + 1)))
	}
	return append(append(slices.Clone(header), section(7, types.Bytes())...), section(10, imports.Bytes())...)
}

func leb(v uint32) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

func sleb(v int) []byte {
	var out []byte
	for {
		c := byte(v & 0x7f)
		v >>= 7
		if v == 0 && c&0x40 == 0 {
			return append(out, c)
		}
		out = append(out, c|0x80)
	}
}

// FuzzDecode feeds arbitrary bytes to Decode: it never panics, its errors wrap ErrMalformed,
// and what it decodes renders. Seeds: the components in testdata and cut or altered copies.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/*.wasm")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)*2/3])
		f.Add(b[:40])
	}
	f.Add([]byte("\x00asm\x0d\x00\x01\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		res, err := witdecode.Decode(b)
		if err != nil {
			if !errors.Is(err, witdecode.ErrMalformed) {
				t.Fatalf("error does not wrap ErrMalformed: %v", err)
			}
			return
		}
		_ = res.WIT()
		for _, l := range res.Lines {
			_ = l.String()
		}
	})
}

// TestResourceNamedByNameSection: a handle of a resource the component defines and exports by
// no name is written with the name the component-name section gives the resource.
func TestResourceNamedByNameSection(t *testing.T) {
	header := []byte("\x00asm\x0d\x00\x01\x00")
	types := []byte{3,
		0x3f, 0x7f, 0x00, // (resource (rep i32))
		0x69, 0, // (own 0)
		0x40, 0, 0x00, 1} // (func (result 1))
	canon := []byte{1, 0x00, 0x00, 0, 0, 2}                          // (canon lift (core func 0) (type 2))
	exports := []byte{1, 0x00, 4, 'm', 'a', 'k', 'e', 0x01, 0, 0x00} // (export "make" (func 0))
	names := append([]byte{14}, "component-name"...)
	sub := []byte{sortType, 1, 0, 5, 'g', 'i', 'z', 'm', 'o'} // type 0 is "gizmo"
	names = append(append(names, 1, byte(len(sub))), sub...)
	b := slices.Clone(header)
	for _, s := range []struct {
		id   byte
		body []byte
	}{{7, types}, {8, canon}, {11, exports}, {0, names}} {
		b = append(b, section(s.id, s.body)...)
	}
	res, err := witdecode.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Lines) != 1 || res.Lines[0].String() != "make: func() -> gizmo" {
		t.Errorf("lines %v, want [make: func() -> gizmo]", res.Lines)
	}
}

// sortType is the component model's sort byte of types.
const sortType = 0x03
