package tsc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheck: code that uses a disposable handle passes; a strict-mode error fails with the
// compiler's diagnostic naming the file.
func TestCheck(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	dir := t.TempDir()
	for name, src := range map[string]string{
		"ok.ts":  "interface H { [Symbol.dispose](): void }\nexport function f(h: H): void { using g = h; void g; }\n",
		"bad.ts": "export function g(x) { return x; }\n",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Check(root, dir, "ok.ts"); err != nil {
		t.Errorf("ok.ts: %v", err)
	}
	if err := Check(root, dir, "bad.ts"); err == nil || !strings.Contains(err.Error(), "bad.ts(1,") || !strings.Contains(err.Error(), "implicitly has an 'any' type") {
		t.Errorf("bad.ts: %v, want tsc's implicit-any error", err)
	}
}
