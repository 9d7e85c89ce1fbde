package jssandbox

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	os.Exit(m.Run())
}

// TestRun runs a module and gets its value; a module that reaches for the outside finds
// nothing there, and one that throws fails with the error.
func TestRun(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	v, err := Run(ctx, cache, `const answer = 6 * 7;
export default async function () {
  return { answer, fetch: typeof fetch, process: typeof process, require: typeof require, env: typeof std };
}`)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"answer": float64(42), "fetch": "undefined", "process": "undefined", "require": "undefined", "env": "undefined"}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("Run = %v, want %v", v, want)
	}
	if _, err := Run(ctx, cache, `import * as os from "os"; export default async () => os.getenv("HOME");`); err == nil {
		t.Fatal("a module importing QuickJS's os module ran")
	}
	if _, err := Run(ctx, cache, `throw new Error("top level"); export default async () => 1;`); err == nil || !strings.Contains(err.Error(), "top level") {
		t.Fatalf("a throwing module: %v", err)
	}
}

// TestLimits runs modules that would never finish or that allocate without end: each is
// stopped, with an error that says which limit it hit, and the next run works.
func TestLimits(t *testing.T) {
	ctx := context.Background()
	cache := t.TempDir()
	for _, c := range []struct{ name, module, want string }{
		{"loop", `while (true) {} export default async () => 1;`, "ran past its deadline of 2s"},
		{"allocation", `const a = []; for (;;) a.push(new Array(1 << 20).fill(1)); export default async () => a.length;`, "out of memory"},
		{"string", `export default async () => "x".repeat(1 << 28).length;`, "out of memory"},
	} {
		start := time.Now()
		_, err := Run(ctx, cache, c.module)
		t.Logf("%s: %v after %v", c.name, err, time.Since(start))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
	if v, err := Run(ctx, cache, `export default async () => 1;`); err != nil || v != float64(1) {
		t.Fatalf("a run after the limits: %v, %v", v, err)
	}
}
