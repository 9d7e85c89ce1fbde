package runtime_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atelier/host/runtime"
)

func TestArtifactCache(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile("testdata/echo.wat")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	load := func(rt *runtime.Runtime) {
		t.Helper()
		comp, err := rt.Compile(ctx, src)
		if err != nil {
			t.Fatal(err)
		}
		defer comp.Close()
		inst, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Grants: echoGrants})
		if err != nil {
			t.Fatal(err)
		}
		defer inst.Close()
		if got, err := inst.Call(ctx, "add", 1, 2); err != nil || got != uint32(3) {
			t.Fatalf("add: %v, %v", got, err)
		}
	}
	f := newFixture(t, runtime.Config{CacheDir: dir}) // compiles echo.wat once
	if got := f.rt.Stats(); got != (runtime.Stats{Compiles: 1}) {
		t.Fatalf("first load: %+v", got)
	}
	load(f.rt)
	if got := f.rt.Stats(); got != (runtime.Stats{Compiles: 1, CacheHits: 1}) {
		t.Fatalf("second load in the same runtime: %+v, want a cache hit", got)
	}

	// A new runtime (a new process, say) with the same settings reuses the artifact.
	f2 := newFixture(t, runtime.Config{CacheDir: dir})
	if got := f2.rt.Stats(); got != (runtime.Stats{CacheHits: 1}) {
		t.Fatalf("new runtime: %+v, want a cache hit", got)
	}

	// Different engine settings do not share artifacts.
	f3 := newFixture(t, runtime.Config{CacheDir: dir, Fuel: true})
	if got := f3.rt.Stats(); got != (runtime.Stats{Compiles: 1}) {
		t.Fatalf("fuel runtime: %+v, want a compile", got)
	}

	// Nor do runtimes with and without the memory creator: it turns copy-on-write
	// initialisation off, and Wasmtime refuses an artifact made with the other setting.
	f4 := newFixture(t, runtime.Config{CacheDir: dir, MemoryImages: true})
	if got := f4.rt.Stats(); got != (runtime.Stats{Compiles: 1}) {
		t.Fatalf("memory images runtime: %+v, want a compile", got)
	}
	load(f4.rt)

	for _, ext := range []string{"cwasm", "sum"} {
		if entries, err := filepath.Glob(filepath.Join(dir, "*."+ext)); err != nil || len(entries) != 3 {
			t.Fatalf("cache files *.%s: %v, %v", ext, entries, err)
		}
	}
	// wantRecompiled loads echo.wat in a new runtime (a new process, say), which must detect
	// the damaged entry, recompile it, and then hit the rewritten entry.
	wantRecompiled := func(t *testing.T, want runtime.Stats) {
		t.Helper()
		rt := newFixture(t, runtime.Config{CacheDir: dir}).rt
		if got := rt.Stats(); got != want {
			t.Fatalf("damaged entry: %+v, want %+v", got, want)
		}
		load(rt)
		if got := rt.Stats(); got.CacheHits != 1 {
			t.Fatalf("after recompiling: %+v, want the rewritten entry to hit", got)
		}
	}
	damage := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"flipped_byte", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }},
		{"flipped_last_byte", func(b []byte) []byte { b[len(b)-1] ^= 0x01; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/3] }},
		{"extended", func(b []byte) []byte { return append(b, 0) }},
		{"empty", func([]byte) []byte { return nil }},
		{"garbage", func(b []byte) []byte { return []byte("not an artifact at all, not even close") }},
	}
	// Both files of an entry are checked: the artifact (.cwasm) and its sidecar (.sum).
	for _, ext := range []string{"cwasm", "sum"} {
		for _, d := range damage {
			t.Run(ext+"/"+d.name, func(t *testing.T) {
				editCacheFiles(t, dir, ext, func(path string, b []byte) {
					if err := os.WriteFile(path, d.edit(b), 0o600); err != nil {
						t.Fatal(err)
					}
				})
				wantRecompiled(t, runtime.Stats{Compiles: 1, CacheCorrupt: 1})
			})
		}
	}
	t.Run("sum/missing", func(t *testing.T) {
		editCacheFiles(t, dir, "sum", func(path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		})
		wantRecompiled(t, runtime.Stats{Compiles: 1, CacheCorrupt: 1})
	})
	t.Run("cwasm/missing", func(t *testing.T) {
		editCacheFiles(t, dir, "cwasm", func(path string, _ []byte) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		})
		wantRecompiled(t, runtime.Stats{Compiles: 1})
	})

	// A runtime checks an artifact file once, then maps it on later loads; a file replaced
	// since (another inode, size or mtime) is checked again.
	t.Run("cwasm/replaced_after_check", func(t *testing.T) {
		rt := newFixture(t, runtime.Config{CacheDir: dir}).rt // checks the artifact
		load(rt)                                              // maps it
		if got := rt.Stats(); got != (runtime.Stats{CacheHits: 2}) {
			t.Fatalf("checked, then mapped: %+v", got)
		}
		editCacheFiles(t, dir, "cwasm", func(path string, b []byte) {
			b[len(b)/2] ^= 0xff
			tmp := path + ".new"
			if err := os.WriteFile(tmp, b, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, path); err != nil {
				t.Fatal(err)
			}
		})
		load(rt)
		if got := rt.Stats(); got != (runtime.Stats{Compiles: 1, CacheHits: 2, CacheCorrupt: 1}) {
			t.Fatalf("replaced artifact: %+v, want it detected and recompiled", got)
		}
		load(rt) // the file this runtime rewrote counts as checked
		if got := rt.Stats(); got != (runtime.Stats{Compiles: 1, CacheHits: 3, CacheCorrupt: 1}) {
			t.Fatalf("after recompiling: %+v, want a hit", got)
		}
	})

	// The sidecar is read only when the artifact is checked: damage to it after the check
	// shows in the next runtime, not in this one.
	t.Run("sum/damaged_after_check", func(t *testing.T) {
		rt := newFixture(t, runtime.Config{CacheDir: dir}).rt // checks the artifact
		editCacheFiles(t, dir, "sum", func(path string, b []byte) {
			if err := os.WriteFile(path, b[:1], 0o600); err != nil {
				t.Fatal(err)
			}
		})
		load(rt)
		if got := rt.Stats(); got != (runtime.Stats{CacheHits: 2}) {
			t.Fatalf("same runtime: %+v, want the checked artifact to load without its sidecar", got)
		}
		wantRecompiled(t, runtime.Stats{Compiles: 1, CacheCorrupt: 1})
	})
}

// editCacheFiles calls edit with the path and contents of every cache file named *.ext.
func editCacheFiles(t *testing.T, dir, ext string, edit func(path string, b []byte)) {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*."+ext))
	if err != nil || len(paths) == 0 {
		t.Fatalf("cache files *.%s: %v, %v", ext, paths, err)
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		edit(p, b)
	}
}

// A cache directory others may write would let them plant artifacts that Wasmtime runs.
func TestCacheDirWritableByOthersIsRefused(t *testing.T) {
	for _, mode := range []os.FileMode{0o777, 0o770, 0o702} {
		dir := filepath.Join(t.TempDir(), "cache")
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, mode); err != nil {
			t.Fatal(err)
		}
		rt, err := runtime.New(runtime.Config{CacheDir: dir})
		if err == nil {
			rt.Close()
			t.Fatalf("mode %#o: New accepted the cache directory", mode)
		}
		if !strings.Contains(err.Error(), "writable by group or others") {
			t.Fatalf("mode %#o: %v", mode, err)
		}
	}
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if rt, err := runtime.New(runtime.Config{CacheDir: file}); err == nil {
		rt.Close()
		t.Fatal("New accepted a file as the cache directory")
	}
}

// Goroutines loading the same cached component at once all get it from the cache.
func TestArtifactCacheConcurrentLoads(t *testing.T) {
	dir := t.TempDir()
	newFixture(t, runtime.Config{CacheDir: dir}) // fills the cache
	rt := newFixture(t, runtime.Config{CacheDir: dir}).rt
	src, err := os.ReadFile("testdata/echo.wat")
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			comp, err := rt.Compile(context.Background(), src)
			if err == nil {
				comp.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := rt.Stats(); got != (runtime.Stats{CacheHits: n + 1}) {
		t.Fatalf("concurrent loads: %+v, want %d cache hits", got, n+1)
	}
}
