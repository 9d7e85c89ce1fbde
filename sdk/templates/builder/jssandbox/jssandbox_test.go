package jssandbox

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"
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
