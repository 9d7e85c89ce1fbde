package capi

import (
	"os"
	"strings"
	"syscall"
	"testing"

	"atelier/host/runtime/internal/dataseg"
)

// oneMemory is a component whose only core module defines one memory of one page and no
// maximum, without data: the plans below give it an image.
const oneMemory = `(component
  (core module $m (memory (export "memory") 1))
  (core instance $i (instantiate $m)))`

// TestMemoryPlanMismatch checks that an instantiation whose memories differ from its
// component's memory plan fails with an error naming the difference, whatever the difference
// is, and leaves no memory or image mapping behind; and that a matching plan maps its image.
func TestMemoryPlanMismatch(t *testing.T) {
	os.Unsetenv("RUST_BACKTRACE")
	eng := NewEngine(EngineConfig{CapMemories: true, KeepMemories: 2})
	defer eng.Close()
	linker := NewLinker(eng)
	defer linker.Close()
	page := dataseg.Memory{Min: 64 << 10, Max: 1 << 32, Image: 0}
	img := []dataseg.Image{{Size: 13, Segments: []dataseg.Segment{{Offset: 8, Data: []byte("hello")}}}}
	tests := []struct {
		name string
		mems []dataseg.Memory
		want string // error text; "" for success
	}{
		{"matching", []dataseg.Memory{page}, ""},
		{"other_minimum", []dataseg.Memory{{Min: 128 << 10, Max: 1 << 32, Image: 0}}, "has limits 65536..4294967296 bytes, its component's memory plan says 131072..4294967296"},
		{"other_maximum", []dataseg.Memory{{Min: 64 << 10, Max: 128 << 10, Image: -1}}, "memory plan says 65536..131072"},
		{"one_more_planned", []dataseg.Memory{page, page}, "created 1 linear memories, its component's memory plan lists 2"},
		{"none_planned", nil, "more linear memories than the 0 its component's memory plan lists"},
	}
	live, imaged := LiveMemories(), ImagedMemories()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := eng.Compile([]byte(oneMemory))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			mp, err := NewMemoryPlan(&dataseg.Layout{Memories: tt.mems, Images: img})
			if err != nil {
				t.Fatal(err)
			}
			err = c.SetMemoryPlan(mp)
			mp.Close() // the component keeps it
			if err != nil {
				t.Fatal(err)
			}
			s, err := NewStore(eng, StoreConfig{})
			if err != nil {
				t.Fatal(err)
			}
			_, err = linker.Instantiate(s, c)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("instantiate: %v", err)
			case tt.want == "" && ImagedMemories() != imaged+1:
				t.Fatalf("%d memories mapped from an image, want %d", ImagedMemories(), imaged+1)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("instantiate: %v, want an error with %q", err, tt.want)
			}
			s.Close()
			if LiveMemories() != live || ImagedMemories() != imaged {
				t.Fatalf("after closing the store: %d live memories and %d mapped images, want %d and %d", LiveMemories(), ImagedMemories(), live, imaged)
			}
		})
	}
}

// TestSetMemoryPlanRefused checks that a plan needs the memory creator and is set once.
func TestSetMemoryPlanRefused(t *testing.T) {
	os.Unsetenv("RUST_BACKTRACE")
	plan, err := NewMemoryPlan(&dataseg.Layout{Memories: []dataseg.Memory{{Min: 64 << 10, Max: 1 << 32, Image: -1}}})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	for _, capped := range []bool{false, true} {
		eng := NewEngine(EngineConfig{CapMemories: capped})
		c, err := eng.Compile([]byte(oneMemory))
		if err != nil {
			t.Fatal(err)
		}
		err = c.SetMemoryPlan(plan)
		if capped {
			if err != nil {
				t.Fatal(err)
			}
			err = c.SetMemoryPlan(plan)
		}
		if err == nil {
			t.Fatalf("memory creator %t: a plan was set where none may be", capped)
		}
		c.Close()
		eng.Close()
	}
}

// TestImagesSealed checks that a plan's images cannot be changed once made: every memfd the
// plan holds carries all four seals, and writing, growing or shrinking it fails.
func TestImagesSealed(t *testing.T) {
	mp, err := NewMemoryPlan(&dataseg.Layout{
		Memories: []dataseg.Memory{{Min: 64 << 10, Max: 1 << 32, Image: 0}},
		Images:   []dataseg.Image{{Size: 5, Segments: []dataseg.Segment{{Offset: 0, Data: []byte("image")}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mp.Close()
	fd := int(mp.p.images.fd)
	const ( // <linux/fcntl.h>; package syscall does not define them
		getSeals = 1034
		all      = 0x1 | 0x2 | 0x4 | 0x8 // F_SEAL_SEAL, SHRINK, GROW, WRITE
	)
	if seals, _, errno := syscall.Syscall(syscall.SYS_FCNTL, uintptr(fd), getSeals, 0); errno != 0 || seals&all != all {
		t.Fatalf("seals %#x, %v; want %#x", seals, errno, all)
	}
	got := make([]byte, 5)
	if _, err := syscall.Pread(fd, got, 0); err != nil || string(got) != "image" {
		t.Fatalf("image content %q, %v", got, err)
	}
	if _, err := syscall.Pwrite(fd, []byte("x"), 0); err == nil {
		t.Fatal("wrote into a sealed image")
	}
	if err := syscall.Ftruncate(fd, 0); err == nil {
		t.Fatal("shrank a sealed image")
	}
	if err := syscall.Ftruncate(fd, 1<<20); err == nil {
		t.Fatal("grew a sealed image")
	}
}
