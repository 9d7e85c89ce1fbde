package kernel_test

import (
	"os"
	"path/filepath"
	"testing"

	"atelier/host/kernel"
)

// maxResult is the result bound of the servers of these tests.
func maxResult(c *kernel.Config) { c.Limits.MaxResult = 1 << 20 }

// TestGadgetResultTooLarge deploys host/runtime/testdata/bigresult.wat as a gadget and asks
// for results past a 1 MiB MaxResult: each is refused with RESOURCE_EXHAUSTED saying how large
// it is, the instance is reset (its call counter starts over), and results within the bound
// still reach the client, lists of scalars as arrays.
func TestGadgetResultTooLarge(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), maxResult)
	ws, _, counter := home(t, s.user(t, "ada"))
	src, err := os.ReadFile("../runtime/testdata/bigresult.wat")
	if err != nil {
		t.Fatal(err)
	}
	big := ws.Call(ctx, "createGadget", "big", src, []string{}).Call(ctx, "connect")
	if n := await(t, big.Call(ctx, "count")); n != float64(1) {
		t.Fatalf("count = %v", n)
	}
	refused(t, big.Call(ctx, "bools", 4<<20), "RESOURCE_EXHAUSTED", "result is about 20 MiB encoded, over the 1 MiB message limit; return less")
	refused(t, big.Call(ctx, "text", 2<<20), "RESOURCE_EXHAUSTED", "over the 1 MiB message limit")
	refused(t, big.Call(ctx, "points", 100_000), "RESOURCE_EXHAUSTED", "over the 1 MiB message limit")
	if n := await(t, big.Call(ctx, "count")); n != float64(1) {
		t.Fatalf("count after a refused result = %v, want 1 (a fresh instance)", n)
	}
	bools := await(t, big.Call(ctx, "bools", 3)).([]any)
	if len(bools) != 3 || bools[0] != true {
		t.Fatalf("bools(3) = %v", bools)
	}
	u32s := await(t, big.Call(ctx, "u32s", 2)).([]any)
	if len(u32s) != 2 || u32s[1] != float64(0x01010101) {
		t.Fatalf("u32s(2) = %v", u32s)
	}
	if b := await(t, big.Call(ctx, "bytes", 3)); string(b.([]byte)) != "aaa" {
		t.Fatalf("bytes(3) = %v", b)
	}
	if n := await(t, counter.Call(ctx, "get")); n != float64(1) {
		t.Fatalf("the counter gadget's state = %v, want 1", n)
	}
}

// TestJSGadgetResultTooLarge has a JS gadget with a kv counter return results past a 1 MiB
// MaxResult: refused with RESOURCE_EXHAUSTED, the call's own write discarded, and the counter
// written before intact.
func TestJSGadgetResultTooLarge(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), maxResult)
	ws, _, _ := home(t, s.user(t, "ada"))
	src := `export class Gadget {
  bump() { const n = (this.storage.get("n") ?? 0) + 1; this.storage.put("n", n); return n; }
  big(n, s) { this.bump(); return s ? "x".repeat(n) : new Array(n).fill(true); }
}`
	g := ws.Call(ctx, "createGadget", "big-js", map[string]any{"server.js": src}, jsGrants).Call(ctx, "connect")
	if n := await(t, g.Call(ctx, "bump")); n != float64(1) {
		t.Fatalf("bump = %v", n)
	}
	refused(t, g.Call(ctx, "big", 1<<20, false), "RESOURCE_EXHAUSTED", "result is about 5 MB encoded, over the 1 MiB message limit")
	refused(t, g.Call(ctx, "big", 3<<20, true), "RESOURCE_EXHAUSTED", "over the 1 MiB message limit")
	if n := await(t, g.Call(ctx, "bump")); n != float64(2) {
		t.Fatalf("bump after the refusals = %v, want 2 (the state before them, the refused calls' writes discarded)", n)
	}
	if v := await(t, g.Call(ctx, "big", 3, false)).([]any); len(v) != 3 {
		t.Fatalf("big(3) = %v", v)
	}
}

// TestExecuteCodeResultTooLarge returns snippet values past a 1 MiB MaxResult: refused with
// RESOURCE_EXHAUSTED, and the workspace runs the next snippet.
func TestExecuteCodeResultTooLarge(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), maxResult)
	ws, _ := codeWorkspace(t, s.user(t, "ada"))
	for _, body := range []string{`"x".repeat(3 << 20)`, `"x".repeat(1.5 * 2 ** 20)`, `new Array(1 << 20).fill(true)`} {
		p := ws.Call(ctx, "executeCode", "export default async () => "+body)
		refused(t, p, "RESOURCE_EXHAUSTED", "the snippet's value is about")
	}
	res := run(t, ws, `export default async (env) => [await env.counter.get(), "x".repeat(1000).length]`)
	if v, _ := res["value"].([]any); len(v) != 2 || v[0] != float64(1) || v[1] != float64(1000) {
		t.Fatalf("snippet after the refusals = %v", res)
	}
}
