package dataseg

import (
	"bytes"
	"cmp"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
)

// seg is a test segment: kind 0 (memory 0), 1 (passive) or 2 (explicit memory mem).
type seg struct {
	kind byte
	mem  uint32
	off  int32
	data string
	raw  []byte // the offset's LEB128 bytes, instead of off's
}

// module assembles a core module with the given extra sections (id, payload) before its data
// section and the segments in it.
func module(extra [][2][]byte, segs ...seg) []byte {
	b := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	for _, e := range extra {
		b = appendSection(b, e[0][0], e[1])
	}
	d := appendU32(nil, uint32(len(segs)))
	for _, s := range segs {
		d = append(d, s.kind)
		if s.kind == 2 {
			d = appendU32(d, s.mem)
		}
		if s.kind != 1 {
			d = append(d, 0x41)
			if s.raw != nil {
				d = append(d, s.raw...)
			} else {
				d = appendS32(d, s.off)
			}
			d = append(d, 0x0b)
		}
		d = appendU32(d, uint32(len(s.data)))
		d = append(d, s.data...)
	}
	return appendSection(b, 11, d)
}

// component wraps core modules in a component, one of them inside a nested component.
func component(mods ...[]byte) []byte {
	b := []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}
	inner := []byte{0, 'a', 's', 'm', 0x0d, 0, 1, 0}
	for i, m := range mods {
		if i == 0 {
			inner = appendSection(inner, 1, m)
			continue
		}
		b = appendSection(b, 1, m)
	}
	b = appendSection(b, 0, []byte("\x04nameabc")) // a custom section, copied as is
	return appendSection(b, 4, inner)
}

var memorySection = [2][]byte{{5}, {1, 0, 1}} // one memory, minimum 1 page

// image applies the active segments of a module to a zeroed memory: the bytes that end up
// non-zero, and the end of the last write (instantiation traps when it is past the memory).
func image(t *testing.T, mod []byte) (map[uint32]byte, uint64) {
	t.Helper()
	secs, ok := sections(mod[8:])
	if !ok {
		t.Fatal("module does not parse")
	}
	mem := map[uint32]byte{}
	var end uint64
	for _, s := range secs {
		if s.id != 11 {
			continue
		}
		segs, ok := parseData(s.payload)
		if !ok {
			t.Fatal("data section does not parse")
		}
		for _, sg := range segs {
			for i, c := range sg.Data {
				if c == 0 {
					delete(mem, sg.Offset+uint32(i))
				} else {
					mem[sg.Offset+uint32(i)] = c
				}
			}
			end = max(end, sg.end())
		}
	}
	return mem, end
}

func dataSegments(t *testing.T, mod []byte) int {
	t.Helper()
	secs, _ := sections(mod[8:])
	for _, s := range secs {
		if s.id == 11 {
			segs, ok := parseData(s.payload)
			if !ok {
				t.Fatal("data section does not parse")
			}
			return len(segs)
		}
	}
	return 0
}

func TestMergeModule(t *testing.T) {
	tests := []struct {
		name string
		mod  []byte
		segs int // after merging; -1: unchanged
	}{
		{"ascending_small_gaps", module([][2][]byte{memorySection},
			seg{off: 16, data: "ab"}, seg{off: 20, data: "cd"}, seg{kind: 2, mem: 0, off: 22, data: "ef"}, seg{off: 200, data: "gh"}, seg{off: 200 + 2 + MaxGap + 1, data: "ij"}), 2},
		{"earlier_segment_in_the_gap", module([][2][]byte{memorySection},
			seg{off: 50, data: "xy"}, seg{off: 10, data: "ab"}, seg{off: 100, data: "cd"}, seg{off: 102, data: "ef"}), 3},
		{"descending", module([][2][]byte{memorySection},
			seg{off: 100, data: "ab"}, seg{off: 50, data: "cd"}, seg{data: "ef"}), -1},
		{"negative_offset_is_high_memory", module([][2][]byte{memorySection},
			seg{off: -8, data: "ab"}, seg{off: -4, data: "cd"}), 1},
		{"overlapping", module([][2][]byte{memorySection},
			seg{data: "abcd"}, seg{off: 2, data: "xy"}, seg{off: 8, data: "ef"}), -1},
		{"passive", module([][2][]byte{memorySection},
			seg{data: "ab"}, seg{kind: 1, mem: 0, off: 0, data: "cd"}, seg{off: 4, data: "ef"}), -1},
		{"other_memory", module([][2][]byte{memorySection},
			seg{data: "ab"}, seg{kind: 2, mem: 1, off: 4, data: "cd"}, seg{off: 8, data: "ef"}), -1},
		{"data_count", module([][2][]byte{memorySection, {{12}, {2}}},
			seg{data: "ab"}, seg{off: 4, data: "cd"}), -1},
		{"imported_memory", module([][2][]byte{{{2}, []byte("\x01\x01m\x03mem\x02\x00\x01")}},
			seg{data: "ab"}, seg{off: 4, data: "cd"}), -1},
		{"other_imports", module([][2][]byte{{{2}, []byte("\x03\x01m\x01f\x00\x00\x01m\x01t\x01\x70\x01\x01\x02\x01m\x01g\x03\x7f\x00")}, memorySection},
			seg{data: "ab"}, seg{off: 4, data: "cd"}), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := Merge(tt.mod)
			if tt.segs < 0 {
				if !bytes.Equal(out, tt.mod) {
					t.Fatal("module rewritten, want it unchanged")
				}
				return
			}
			if got := dataSegments(t, out); got != tt.segs {
				t.Fatalf("%d segments after merging, want %d", got, tt.segs)
			}
			before, endBefore := image(t, tt.mod)
			after, endAfter := image(t, out)
			if !maps.Equal(before, after) || endBefore != endAfter {
				t.Fatalf("memory image changed: %v (end %d) -> %v (end %d)", before, endBefore, after, endAfter)
			}
		})
	}
}

func TestMergeComponent(t *testing.T) {
	nested := module([][2][]byte{memorySection}, seg{data: "ab"}, seg{off: 3, data: "cd"})
	top := module([][2][]byte{memorySection}, seg{off: 8, data: "ef"}, seg{off: 12, data: "gh"}, seg{off: 14, data: "ij"})
	comp := component(nested, top)
	out := Merge(comp)
	want := component(
		module([][2][]byte{memorySection}, seg{data: "ab\x00cd"}),
		module([][2][]byte{memorySection}, seg{off: 8, data: "ef\x00\x00ghij"}))
	if !bytes.Equal(out, want) {
		t.Fatalf("merged component:\n%x\nwant\n%x", out, want)
	}
	if unchanged := component(module([][2][]byte{memorySection}, seg{data: "ab"})); &Merge(unchanged)[0] != &unchanged[0] {
		t.Fatal("a component with nothing to merge was copied")
	}
}

// TestMergeMalformed checks that input which is not understood comes back unchanged.
func TestMergeMalformed(t *testing.T) {
	good := component(module([][2][]byte{memorySection}, seg{data: "ab"}, seg{off: 4, data: "cd"}))
	cases := map[string][]byte{
		"wat":         []byte("(component)"),
		"empty":       nil,
		"truncated":   good[:len(good)-3],
		"bad_layer":   append([]byte{0, 'a', 's', 'm', 0x0d, 0, 2, 0}, good[8:]...),
		"header_only": good[:8],
		"bad_leb_u32": append(append([]byte(nil), good[:9]...), 0xff, 0xff, 0xff, 0xff, 0x7f),
		// An i32.const whose fifth LEB byte has bits an i32 cannot hold.
		"bad_leb_s32": module([][2][]byte{memorySection}, seg{data: "ab"}, seg{data: "cd", raw: []byte{0x84, 0x80, 0x80, 0x80, 0x10}}),
	}
	one := module([][2][]byte{memorySection}, seg{data: "ab"}, seg{off: 4, data: "cd"})
	cases["segment_past_section"] = one[:len(one)-1]
	for name, b := range cases {
		t.Run(name, func(t *testing.T) {
			if out := Merge(b); !bytes.Equal(out, b) {
				t.Fatalf("rewritten:\n%x\nfrom\n%x", out, b)
			}
		})
	}
}

// FuzzMerge checks that Merge never panics, and that whatever it rewrites still parses and
// writes the same bytes to memory.
func FuzzMerge(f *testing.F) {
	f.Add(component(module([][2][]byte{memorySection}, seg{data: "ab"}, seg{off: 4, data: "cd"})))
	f.Add(module([][2][]byte{memorySection}, seg{off: 50, data: "xy"}, seg{off: 10, data: "ab"}, seg{off: 100, data: "cd"}, seg{off: 102, data: "ef"}))
	f.Add(module([][2][]byte{memorySection}, seg{off: -8, data: "ab"}, seg{off: -4, data: "cd"}))
	f.Fuzz(func(t *testing.T, b []byte) {
		out := Merge(b)
		if bytes.Equal(out, b) || len(b) < 8 || string(b[4:8]) != string(coreLayer) {
			return
		}
		before, endBefore := image(t, b)
		after, endAfter := image(t, out)
		if !maps.Equal(before, after) || endBefore != endAfter {
			t.Fatalf("memory image changed")
		}
	})
}

// TestSortSpans checks the run-merging sort against a general sort, for inputs made of one
// to a hundred ascending runs.
func TestSortSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, runs := range []int{1, 2, 3, 5, 8, 64, 65, 100} {
		var in []span
		for range runs {
			off := rng.Uint32N(1 << 20)
			for range 1 + rng.IntN(50) {
				in = append(in, span{off: off, n: 1})
				off += 1 + rng.Uint32N(100)
			}
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, func(a, b span) int { return cmp.Compare(a.off, b.off) })
		got := sortSpans(slices.Clone(in))
		if !slices.EqualFunc(got, want, func(a, b span) bool { return a.off == b.off }) {
			t.Fatalf("%d runs: %v\nwant %v", runs, got, want)
		}
	}
}
