package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/internal/capi"
	"atelier/sdk/guesttest"
	"github.com/bytecodealliance/wasmtime-go/v39"
)

// imgModule is a core module of the memory image tests: one memory of min pages (and max
// pages when max > 0) and data segments (offset, length) whose bytes are fill(seed, addr).
type imgModule struct {
	min, max uint32
	seed     byte
	segs     [][2]uint32
}

func fill(seed byte, addr uint32) byte { return byte((addr*131+uint32(seed)*7)%251) + 1 }

// imaged returns a module of min pages whose data (17100 bytes, more than enough for an
// image) ends exactly at its minimum, with gaps too long to merge between its segments.
func imaged(min, max uint32, seed byte) imgModule {
	return imgModule{min: min, max: max, seed: seed, segs: [][2]uint32{{16, 6000}, {7000, 6000}, {14000, 5000}, {min*wasmPage - 100, 100}}}
}

// memory is the module's memory right after instantiation.
func (m imgModule) memory() []byte {
	mem := make([]byte, m.min*wasmPage)
	for _, s := range m.segs {
		for a := s[0]; a < s[0]+s[1]; a++ {
			mem[a] = fill(m.seed, a)
		}
	}
	return mem
}

// wat is the module's text, named name, exporting hash, peek, poke and try-grow.
func (m imgModule) wat(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "(core module %s (memory (export \"memory\") %d", name, m.min)
	if m.max > 0 {
		fmt.Fprintf(&b, " %d", m.max)
	}
	b.WriteString(`)
  (func (export "hash") (param $from i32) (param $to i32) (result i32) (local $h i32)
    (block $done (loop $next
      (br_if $done (i32.ge_u (local.get $from) (local.get $to)))
      (local.set $h (i32.add (i32.mul (local.get $h) (i32.const 31)) (i32.load8_u (local.get $from))))
      (local.set $from (i32.add (local.get $from) (i32.const 1)))
      (br $next)))
    (local.get $h))
  (func (export "peek") (param i32) (result i32) (i32.load8_u (local.get 0)))
  (func (export "poke") (param i32 i32) (i32.store8 (local.get 0) (local.get 1)))
  (func (export "try-grow") (param i32) (result i32) (memory.grow (local.get 0)))
`)
	for _, s := range m.segs {
		fmt.Fprintf(&b, "  (data (i32.const %d) \"", s[0])
		for a := s[0]; a < s[0]+s[1]; a++ {
			fmt.Fprintf(&b, "\\%02x", fill(m.seed, a))
		}
		b.WriteString("\")\n")
	}
	b.WriteString(")\n")
	return b.String()
}

// lifts exports the functions of core instance inst as prefix+name.
func lifts(prefix, inst string) string {
	return fmt.Sprintf(`
  (func (export "%[1]shash") (param "from" u32) (param "to" u32) (result u32) (canon lift (core func %[2]s "hash")))
  (func (export "%[1]speek") (param "addr" u32) (result u8) (canon lift (core func %[2]s "peek")))
  (func (export "%[1]spoke") (param "addr" u32) (param "v" u8) (canon lift (core func %[2]s "poke")))
  (func (export "%[1]stry-grow") (param "pages" u32) (result s32) (canon lift (core func %[2]s "try-grow")))
`, prefix, inst)
}

// reexports exports the functions of component instance inst that lifts named prefix+name.
func reexports(prefix, inst string) string {
	var b strings.Builder
	for _, f := range []string{"hash", "peek", "poke", "try-grow"} {
		fmt.Fprintf(&b, "  (export \"%[1]s%[2]s\" (func %[3]s \"%[1]s%[2]s\"))\n", prefix, f, inst)
	}
	return b.String()
}

// hashOf is what the guests' hash computes.
func hashOf(b []byte) uint32 {
	var h uint32
	for _, c := range b {
		h = h*31 + uint32(c)
	}
	return h
}

// The memories of imagesWAT, in the order its instantiation creates them: a, c and d have
// the same limits, so only their contents tell them apart; b has too little data for an image.
var (
	imgA, imgB, imgC, imgD = imaged(2, 0, 1), imgModule{min: 1, max: 3, seed: 2, segs: [][2]uint32{{8, 4}}}, imaged(2, 0, 3), imaged(2, 0, 4)
	imagesMemories         = []struct {
		prefix string
		mod    imgModule
	}{{"a1-", imgA}, {"b1-", imgB}, {"d-", imgD}, {"c1-", imgC}, {"a2-", imgA}}
)

// imagesWAT instantiates module a, module b, a nested component (with module d), module c and
// module a again, in that order.
var imagesWAT = "(component\n" + imgA.wat("$a") + imgB.wat("$b") + imgC.wat("$c") + `
  (core instance $a1 (instantiate $a))
  (core instance $b1 (instantiate $b))
  (component $n
    ` + imgD.wat("$d") + `
    (core instance $d1 (instantiate $d))` + lifts("d-", "$d1") + `)
  (instance $n1 (instantiate $n))
  (core instance $c1 (instantiate $c))
  (core instance $a2 (instantiate $a))` +
	lifts("a1-", "$a1") + lifts("b1-", "$b1") + lifts("c1-", "$c1") + lifts("a2-", "$a2") + reexports("d-", "$n1") + ")"

// checkMemory checks that the memory behind prefix holds want: its hash over the whole
// memory, and a few bytes.
func checkMemory(t *testing.T, inst *runtime.Instance, prefix string, want []byte) {
	t.Helper()
	ctx := context.Background()
	got, err := inst.Call(ctx, prefix+"hash", uint32(0), uint32(len(want)))
	if err != nil || got != hashOf(want) {
		t.Fatalf("%shash of %d bytes = %v, %v; want %d", prefix, len(want), got, err, hashOf(want))
	}
	for _, a := range []uint32{0, 16, 17, 6015, 6016, 7000, uint32(len(want)) - 1} {
		if got, err := inst.Call(ctx, prefix+"peek", a); err != nil || got != want[a] {
			t.Fatalf("%speek(%d) = %v, %v; want %d", prefix, a, got, err, want[a])
		}
	}
}

// newInstance instantiates comp without grants.
func newInstance(t *testing.T, rt *runtime.Runtime, comp *runtime.Component) *runtime.Instance {
	t.Helper()
	inst, err := rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestMemoryImages checks that every memory of a component with several modules and a nested
// component holds its module's data right after instantiation, with Atelier's memory creator
// mapping the images (with and without recycled memories) exactly as with Wasmtime's own
// copy-on-write images; and that closing the instance releases the image mappings.
func TestMemoryImages(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    runtime.Config
		mapped int64 // memories mapped from an image by the memory creator
	}{
		{"creator", runtime.Config{}, 4},
		{"creator_no_recycling", runtime.Config{KeepMemories: -1}, 4},
		{"wasmtime_images", runtime.Config{MemoryImages: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.NoCache = true
			rt := newRuntime(t, tc.cfg)
			comp := compileText(t, rt, imagesWAT)
			live, mapped := capi.LiveMemories(), capi.ImagedMemories()
			for range 3 { // fresh, then recycled memories
				inst := newInstance(t, rt, comp)
				if got := capi.ImagedMemories() - mapped; got != tc.mapped {
					t.Fatalf("%d memories mapped from an image, want %d", got, tc.mapped)
				}
				for _, m := range imagesMemories {
					checkMemory(t, inst, m.prefix, m.mod.memory())
				}
				inst.Close()
			}
			if capi.LiveMemories() != live || capi.ImagedMemories() != mapped {
				t.Fatalf("after Close: %d live memories, %d mapped from an image; want %d and %d", capi.LiveMemories(), capi.ImagedMemories(), live, mapped)
			}
		})
	}
}

// TestMemoryImageWritesArePrivate checks that what an instance writes into its imaged memory
// stays its own: another memory of the same module in the same instance, a second instance
// alive at the same time and a later one that reuses the memory all see the original data;
// and that growing an imaged memory adds zeros.
func TestMemoryImageWritesArePrivate(t *testing.T) {
	rt := newRuntime(t, runtime.Config{NoCache: true, KeepMemories: 8})
	comp := compileText(t, rt, imagesWAT)
	ctx := context.Background()
	first := newInstance(t, rt, comp)
	want := imgA.memory()
	for _, a := range []uint32{16, 6100, uint32(len(want)) - 1} { // data, a gap, the last byte
		if _, err := first.Call(ctx, "a1-poke", a, uint8(0xEE)); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := first.Call(ctx, "a1-peek", uint32(16)); got != uint8(0xEE) {
		t.Fatalf("a1-peek(16) after poke = %v", got)
	}
	if got, err := first.Call(ctx, "a1-try-grow", uint32(1)); err != nil || got != int32(2) {
		t.Fatalf("a1-try-grow(1) = %v, %v", got, err)
	}
	end := uint32(len(want))
	if got, err := first.Call(ctx, "a1-hash", end, end+wasmPage); err != nil || got != hashOf(make([]byte, wasmPage)) {
		t.Fatalf("hash of the grown page = %v, %v; want zeros", got, err)
	}
	checkMemory(t, first, "a2-", want)

	second := newInstance(t, rt, comp)
	checkMemory(t, second, "a1-", want)
	first.Close()
	second.Close()
	for range 3 { // the dirtied memory is recycled into one of these
		inst := newInstance(t, rt, comp)
		for _, m := range imagesMemories {
			checkMemory(t, inst, m.prefix, m.mod.memory())
		}
		inst.Close()
	}
}

// TestMemoryImageCached checks that a component loaded from the artifact cache gets the same
// images as the one compiled: its artifact was compiled without the imaged modules' data.
func TestMemoryImageCached(t *testing.T) {
	dir := t.TempDir()
	for i, want := range []runtime.Stats{{Compiles: 1}, {CacheHits: 1}} {
		rt := newRuntime(t, runtime.Config{CacheDir: dir})
		comp := compileText(t, rt, imagesWAT)
		if got := rt.Stats(); got != want {
			t.Fatalf("runtime %d: %+v, want %+v", i, got, want)
		}
		mapped := capi.ImagedMemories()
		inst := newInstance(t, rt, comp)
		if got := capi.ImagedMemories() - mapped; got != 4 {
			t.Fatalf("runtime %d: %d memories mapped from an image, want 4", i, got)
		}
		for _, m := range imagesMemories {
			checkMemory(t, inst, m.prefix, m.mod.memory())
		}
		inst.Close()
	}
}

// TestMemoryImageSegmentOutOfBounds checks that a module whose data does not fit its
// memory's minimum still traps at instantiation (it keeps its segments, and Wasmtime checks
// them), also when another module of the component is imaged.
func TestMemoryImageSegmentOutOfBounds(t *testing.T) {
	rt := newRuntime(t, runtime.Config{NoCache: true})
	past := imaged(1, 4, 9)
	past.segs[3][0] += 50 // the last segment now ends 50 bytes past the minimum
	for name, wat := range map[string]string{
		"alone":      "(component " + past.wat("$p") + "(core instance $i (instantiate $p)))",
		"with_image": "(component " + imgA.wat("$a") + past.wat("$p") + "(core instance $a1 (instantiate $a)) (core instance $i (instantiate $p)))",
	} {
		t.Run(name, func(t *testing.T) {
			comp := compileText(t, rt, wat)
			live, mapped := capi.LiveMemories(), capi.ImagedMemories()
			_, err := rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{})
			if !errors.Is(err, runtime.ErrTrap) || !strings.Contains(err.Error(), "out of bounds") {
				t.Fatalf("instantiate: %v, want an out-of-bounds trap", err)
			}
			if capi.LiveMemories() != live || capi.ImagedMemories() != mapped {
				t.Fatal("the failed instantiation left memories behind")
			}
		})
	}
}

// TestMemoryImageFallback checks a component whose memory order is not provable from its
// binary (a nested component instantiates a module it imports): no images, and Wasmtime
// copies the data in as before.
func TestMemoryImageFallback(t *testing.T) {
	rt := newRuntime(t, runtime.Config{NoCache: true})
	comp := compileText(t, rt, `(component `+imgA.wat("$a")+`
  (component $n
    (import "m" (core module $m
      (export "memory" (memory 2))
      (export "hash" (func (param i32 i32) (result i32)))
      (export "peek" (func (param i32) (result i32)))
      (export "poke" (func (param i32 i32)))
      (export "try-grow" (func (param i32) (result i32)))))
    (core instance $i (instantiate $m))`+lifts("a1-", "$i")+`)
  (instance $n1 (instantiate $n (with "m" (core module $a))))
`+reexports("a1-", "$n1")+`)`)
	mapped := capi.ImagedMemories()
	inst := newInstance(t, rt, comp)
	defer inst.Close()
	if got := capi.ImagedMemories(); got != mapped {
		t.Fatalf("%d memories mapped from an image, want none", got-mapped)
	}
	checkMemory(t, inst, "a1-", imgA.memory())
}

func newRuntime(t *testing.T, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// compileText compiles the component wat, as a binary: the runtime rewrites binaries only.
func compileText(t *testing.T, rt *runtime.Runtime, wat string) *runtime.Component {
	t.Helper()
	bin, err := wasmtime.Wat2Wasm(wat)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := rt.Compile(context.Background(), bin)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(comp.Close)
	return comp
}

// TestRecycledImageMemoryIsClean checks that a memory recycled after an instance whose memory
// was mapped from a 5 MiB image (past the part of a pooled memory kept populated) reads zero
// everywhere in its next user: neither the instance's writes nor the image show through.
func TestRecycledImageMemoryIsClean(t *testing.T) {
	rt := newRuntime(t, runtime.Config{NoCache: true, KeepMemories: 1})
	big := imaged(80, 0, 6)
	withImage := compileText(t, rt, "(component "+big.wat("$m")+"(core instance $i (instantiate $m))"+lifts("", "$i")+")")
	zero := imgModule{min: 80}
	without := compileText(t, rt, "(component "+zero.wat("$m")+"(core instance $i (instantiate $m))"+lifts("", "$i")+")")
	ctx := context.Background()
	for range 2 {
		inst := newInstance(t, rt, withImage)
		checkMemory(t, inst, "", big.memory())
		if _, err := inst.Call(ctx, "poke", uint32(20), uint8(0)); err != nil {
			t.Fatal(err)
		}
		pooled := capi.PooledMemories()
		inst.Close()
		inst = newInstance(t, rt, without)
		if capi.PooledMemories() != pooled {
			t.Fatal("the memory was not reused")
		}
		checkMemory(t, inst, "", zero.memory())
		inst.Close()
	}
}

// TestGuestMemoryImage runs a Go guest (whose runtime reads and writes its data as it starts)
// with its memory mapped from an image, fresh and recycled, and checks that it behaves as
// under Wasmtime's own images.
func TestGuestMemoryImage(t *testing.T) {
	wasm := guesttest.Bytes(t, "tests/runtime/guests/stdio")
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		cfg    runtime.Config
		mapped int64
	}{{"creator", runtime.Config{NoCache: true}, 1}, {"wasmtime_images", runtime.Config{NoCache: true, MemoryImages: true}, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			rt := newRuntime(t, tc.cfg)
			comp, err := rt.Compile(ctx, wasm)
			if err != nil {
				t.Fatal(err)
			}
			defer comp.Close()
			for i := range 3 {
				var lines []string
				mapped := capi.ImagedMemories()
				inst, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Grants: runtime.WASIBaseline(), Console: func(l runtime.ConsoleLine) {
					lines = append(lines, l.Stream+": "+l.Text)
				}})
				if err != nil {
					t.Fatal(err)
				}
				if got := capi.ImagedMemories() - mapped; got != tc.mapped {
					t.Fatalf("%d memories mapped from an image, want %d", got, tc.mapped)
				}
				if _, err := inst.Call(ctx, "say", fmt.Sprint("hello ", i)); err != nil {
					t.Fatal(err)
				}
				inst.Close()
				want := []string{fmt.Sprint("stdout: hello ", i), fmt.Sprint("stderr: stderr: hello ", i)}
				if !slices.Equal(lines, want) {
					t.Fatalf("instance %d printed %q, want %q", i, lines, want)
				}
			}
		})
	}
}
