package runtime_test

import (
	"context"
	"os"
	"path/filepath"
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

	entries, err := filepath.Glob(filepath.Join(dir, "*.cwasm"))
	if err != nil || len(entries) != 2 {
		t.Fatalf("cache entries: %v, %v", entries, err)
	}
	damage := []struct {
		name string
		edit func([]byte) []byte
	}{
		{"flipped_byte", func(b []byte) []byte { b[len(b)/2] ^= 0xff; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)/3] }},
		{"empty", func([]byte) []byte { return nil }},
		{"garbage", func(b []byte) []byte { return []byte("not an artifact at all, not even close") }},
	}
	for _, d := range damage {
		t.Run(d.name, func(t *testing.T) {
			for _, e := range entries {
				b, err := os.ReadFile(e)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(e, d.edit(b), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			rt := newFixture(t, runtime.Config{CacheDir: dir}).rt
			if got := rt.Stats(); got != (runtime.Stats{Compiles: 1, CacheCorrupt: 1}) {
				t.Fatalf("damaged entry: %+v, want it detected and recompiled", got)
			}
			load(rt)
			if got := rt.Stats(); got.CacheHits != 1 {
				t.Fatalf("after recompiling: %+v, want the rewritten entry to hit", got)
			}
		})
	}
}
