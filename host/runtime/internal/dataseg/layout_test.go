package dataseg

import (
	"bytes"
	"maps"
	"slices"
	"testing"
)

// memSection is a memory section with one memory of min pages (and max pages, when max >= 0).
func memSection(min uint32, max int64) [2][]byte {
	b := []byte{1, 0}
	b = appendU32(b, min)
	if max >= 0 {
		b[1] = 1
		b = appendU32(b, uint32(max))
	}
	return [2][]byte{{5}, b}
}

// bigData returns segments of at least MinImageData bytes in [off, off+3*MinImageData/2),
// with gaps too long to merge, filled with bytes that depend on seed.
func bigData(off int32, seed byte) []seg {
	var out []seg
	for i := range 3 {
		b := make([]byte, MinImageData/3+1)
		for j := range b {
			b[j] = seed + byte(i*7+j%13) + 1
		}
		out = append(out, seg{off: off + int32(i)*(MinImageData/2), data: string(b)})
	}
	return out
}

// comp assembles a component from sections (id, payload).
func comp(secs ...[2][]byte) []byte {
	b := []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}
	for _, s := range secs {
		b = appendSection(b, s[0][0], s[1])
	}
	return b
}

func modSec(m []byte) [2][]byte  { return [2][]byte{{1}, m} }
func compSec(c []byte) [2][]byte { return [2][]byte{{4}, c} }

// coreInstances is a core instance section instantiating the modules, with no arguments but
// one, then an instance of inline exports.
func coreInstances(mods ...uint32) [2][]byte {
	b := appendU32(nil, uint32(len(mods)+1))
	for i, m := range mods {
		b = append(b, 0x00)
		b = appendU32(b, m)
		if i == 0 {
			b = append(b, 1, 1, 'x', 0x12, 0) // instance 0 as "x"
		} else {
			b = append(b, 0)
		}
	}
	b = append(b, 0x01, 1, 1, 'f', 0x00, 0) // (export "f" (func 0))
	return [2][]byte{{2}, b}
}

// instances is a component instance section instantiating the components with one argument,
// then an instance of inline exports.
func instances(comps ...uint32) [2][]byte {
	b := appendU32(nil, uint32(len(comps)+1))
	for _, c := range comps {
		b = append(b, 0x00)
		b = appendU32(b, c)
		b = append(b, 1, 1, 'a', 0x00, 0x11, 0) // core module 0 as "a"
	}
	b = append(b, 0x01, 1, 0x00, 1, 'g', 0x01, 0) // (export "g" (func 0))
	return [2][]byte{{5}, b}
}

// applied is the memory an image makes: its non-zero bytes.
func applied(img Image) map[uint32]byte {
	mem := map[uint32]byte{}
	for _, s := range img.Segments {
		for i, c := range s.Data {
			if c != 0 {
				mem[s.Offset+uint32(i)] = c
			}
		}
	}
	return mem
}

func hasData(t *testing.T, mod []byte) bool {
	t.Helper()
	secs, ok := sections(mod[8:])
	if !ok {
		t.Fatal("module does not parse")
	}
	for _, s := range secs {
		if s.id == 11 {
			return true
		}
	}
	return false
}

// TestPlanOrder checks the memories of a component with several modules, one instantiated
// twice, and a nested component instantiated between them: in the order Wasmtime creates
// them, each imaged module's memory with its image, and Prepare takes exactly the imaged
// modules' data out.
func TestPlanOrder(t *testing.T) {
	modA := module([][2][]byte{memSection(2, -1)}, bigData(16, 1)...)
	modB := module([][2][]byte{memSection(1, 3)}, seg{off: 8, data: "bbbb"}) // too little to image
	modC := module([][2][]byte{memSection(2, -1)}, bigData(100, 50)...)
	modD := module([][2][]byte{memSection(1, 1)}, bigData(0, 100)...)
	modE := module([][2][]byte{{{5}, {2, 0, 1, 1, 2, 2}}}, bigData(0, 7)...) // two memories
	nested := comp(modSec(modD), coreInstances(0))
	bin := comp(
		[2][]byte{{0}, []byte("\x04nameabc")},
		modSec(modA), modSec(modB), compSec(nested), modSec(modC), modSec(modE),
		[2][]byte{{10}, []byte("\x01\x00\x01i\x05\x00")}, // (import "i" (instance (type 0)))
		coreInstances(0, 1),
		[2][]byte{{6}, []byte("\x01\x00\x00\x01\x00\x01f")}, // (alias core export 0 "f" (core func))
		instances(0),
		coreInstances(2, 0, 3),
		[2][]byte{{11}, []byte("\x01\x00\x01g\x01\x00\x00")}, // (export "g" (func 0))
	)
	l := Plan(bin)
	if l == nil {
		t.Fatal("no plan")
	}
	page := uint64(wasmPage)
	want := []Memory{
		{Min: 2 * page, Max: maxMemory, Image: 0}, // A
		{Min: page, Max: 3 * page, Image: -1},     // B
		{Min: page, Max: page, Image: 1},          // D, in the nested component
		{Min: 2 * page, Max: maxMemory, Image: 2}, // C
		{Min: 2 * page, Max: maxMemory, Image: 0}, // A again
		{Min: page, Max: maxMemory, Image: 3},     // E's memory 0
		{Min: 2 * page, Max: 2 * page, Image: -1}, // E's memory 1
	}
	if len(l.Memories) != len(want) {
		t.Fatalf("memories %+v\nwant %+v", l.Memories, want)
	}
	for i := range want {
		if l.Memories[i] != want[i] {
			t.Fatalf("memory %d: %+v, want %+v", i, l.Memories[i], want[i])
		}
	}
	for i, mod := range [][]byte{modA, modD, modC, modE} {
		mem, end := image(t, mod)
		if got := applied(l.Images[i]); !maps.Equal(got, mem) || l.Images[i].Size != end {
			t.Fatalf("image %d: size %d, want the module's data (end %d)", i, l.Images[i].Size, end)
		}
	}

	out, l2 := Prepare(bin)
	if len(l2.Memories) != len(l.Memories) || len(l2.Images) != len(l.Images) {
		t.Fatal("Prepare's layout differs from Plan's")
	}
	root, ok := parseComponent(out, 0)
	if !ok {
		t.Fatal("the prepared component does not parse")
	}
	prepared := func(i int) []byte { // the i-th module section of out's root
		secs, _ := sections(out[8:])
		for _, s := range secs {
			if s.id == 1 {
				if i == 0 {
					return s.payload
				}
				i--
			}
		}
		t.Fatal("module missing")
		return nil
	}
	if hasData(t, prepared(0)) || hasData(t, prepared(2)) || hasData(t, prepared(3)) || !bytes.Equal(prepared(1), modB) {
		t.Fatal("Prepare did not take out exactly the imaged modules' data")
	}
	if len(root.comps[0].modules[0].mems) != 1 {
		t.Fatal("the prepared nested module lost its memory")
	}
	secs, _ := sections(out[8:])
	for _, s := range secs {
		if s.id == 4 {
			inner, _ := sections(s.payload[8:])
			if hasData(t, inner[0].payload) {
				t.Fatal("the nested imaged module kept its data")
			}
		}
	}
}

// TestPlanFallback checks the components whose memory order is not provable, or which have
// nothing to image: no plan, and Prepare is Merge.
func TestPlanFallback(t *testing.T) {
	big := module([][2][]byte{memSection(1, -1)}, bigData(0, 1)...)
	deep := comp(modSec(big), coreInstances(0))
	for range maxDepth + 1 {
		deep = comp(compSec(deep), instances(0))
	}
	doubling := comp() // 2^30 instantiations of an empty component
	for range 30 {
		doubling = comp(compSec(doubling), instances(0, 0))
	}
	cases := map[string][]byte{
		"imported_module":  comp(modSec(big), [2][]byte{{10}, []byte("\x01\x00\x01m\x00\x11\x00")}, coreInstances(0)),
		"imported_comp":    comp(modSec(big), [2][]byte{{10}, []byte("\x01\x00\x01c\x04\x00")}, coreInstances(0)),
		"imported_value":   comp(modSec(big), [2][]byte{{10}, []byte("\x01\x00\x01v\x02\x00\x00")}, coreInstances(0)),
		"aliased_module":   comp(compSec(comp(modSec(big))), [2][]byte{{6}, []byte("\x01\x00\x11\x02\x00\x00")}, coreInstances(0)),
		"aliased_comp":     comp(compSec(comp(modSec(big), coreInstances(0))), [2][]byte{{6}, []byte("\x01\x04\x00\x00\x01c")}, instances(0)),
		"exported_comp":    comp(compSec(comp(modSec(big), coreInstances(0))), [2][]byte{{11}, []byte("\x01\x00\x01c\x04\x00\x00")}, instances(0)),
		"exported_module":  comp(modSec(big), [2][]byte{{11}, []byte("\x01\x00\x01m\x00\x11\x00\x00")}, coreInstances(0)),
		"module_index":     comp(modSec(big), coreInstances(1)),
		"comp_index":       comp(compSec(comp(modSec(big), coreInstances(0))), instances(1)),
		"too_deep":         deep,
		"too_many_steps":   comp(modSec(big), compSec(doubling), coreInstances(0), instances(0)),
		"too_many_mems":    comp(modSec(big), coreInstances(slices.Repeat([]uint32{0}, maxMemories+1)...)),
		"memory64":         comp(modSec(big), modSec(module([][2][]byte{{{5}, {1, 4, 1}}})), coreInstances(0, 1)),
		"value_section":    comp(modSec(big), coreInstances(0), [2][]byte{{12}, {0}}),
		"little_data":      comp(modSec(module([][2][]byte{memSection(1, -1)}, seg{data: "ab"})), coreInstances(0)),
		"past_minimum":     comp(modSec(module([][2][]byte{memSection(1, -1)}, append(bigData(0, 1), seg{off: wasmPage - 1, data: "ab"})...)), coreInstances(0)),
		"overlapping":      comp(modSec(module([][2][]byte{memSection(1, -1)}, append(bigData(0, 1), seg{off: 3, data: "ab"})...)), coreInstances(0)),
		"data_count":       comp(modSec(module([][2][]byte{memSection(1, -1), {{12}, {3}}}, bigData(0, 1)...)), coreInstances(0)),
		"imported_memory":  comp(modSec(module([][2][]byte{{{2}, []byte("\x01\x01m\x03mem\x02\x00\x01")}}, bigData(0, 1)...)), coreInstances(0)),
		"no_memory":        comp(modSec(module(nil, bigData(0, 1)...)), coreInstances(0)),
		"bad_core_arg":     comp(modSec(big), [2][]byte{{2}, {1, 0, 0, 1, 1, 'x', 0x00, 0}}),
		"bad_instance":     comp(modSec(big), [2][]byte{{2}, {1, 2}}),
		"truncated_export": comp(modSec(big), coreInstances(0), [2][]byte{{11}, []byte("\x01\x00\x01g\x01\x00")}),
		"module_layer":     big,
	}
	for name, bin := range cases {
		t.Run(name, func(t *testing.T) {
			if l := Plan(bin); l != nil {
				t.Fatalf("plan %+v, want none", l)
			}
			if out, l := Prepare(bin); l != nil || !bytes.Equal(out, Merge(bin)) {
				t.Fatal("Prepare differs from Merge")
			}
		})
	}
	if Plan(comp(modSec(big), coreInstances(0))) == nil {
		t.Fatal("the component all cases are variations of has no plan")
	}
}

// FuzzPlan checks that Plan and Prepare never panic, and that every plan is consistent: each
// image lies within the minimum of every memory that uses it, and its segments within its size.
func FuzzPlan(f *testing.F) {
	big := module([][2][]byte{memSection(2, 4)}, bigData(16, 1)...)
	f.Add(comp(modSec(big), compSec(comp(modSec(big), coreInstances(0))), coreInstances(0, 0), instances(0)))
	f.Add(comp(modSec(big), coreInstances(0)))
	f.Fuzz(func(t *testing.T, b []byte) {
		l := Plan(b)
		out, l2 := Prepare(b)
		if (l == nil) != (l2 == nil) || out == nil && b != nil {
			t.Fatal("Plan and Prepare disagree")
		}
		if l == nil {
			return
		}
		for _, m := range l.Memories {
			if m.Image >= 0 && l.Images[m.Image].Size > m.Min {
				t.Fatalf("image of %d bytes in a memory of %d", l.Images[m.Image].Size, m.Min)
			}
		}
		for _, img := range l.Images {
			for _, s := range img.Segments {
				if uint64(s.Offset)+uint64(len(s.Data)) > img.Size {
					t.Fatal("segment past its image")
				}
			}
		}
	})
}
