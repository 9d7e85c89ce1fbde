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
