package witdecode_test

import (
	"os"
	"path/filepath"
	"testing"

	"atelier/sdk/wit"
	"atelier/sdk/wit/witdecode"
)

// TestCorpusAgainstJco decodes every component in the directory WITDECODE_CORPUS names
// (components built elsewhere, e.g. jco's own test fixtures; see docs/inspect.md) and compares
// the world with what `jco wit` prints for it, and checks that the whole WIT loads back.
func TestCorpusAgainstJco(t *testing.T) {
	dir := os.Getenv("WITDECODE_CORPUS")
	if dir == "" {
		t.Skip("WITDECODE_CORPUS is not set: name a directory of .wasm components to compare with jco")
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.wasm"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no .wasm files in %s (%v)", dir, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := witdecode.Decode(b)
			if err != nil {
				t.Fatal(err)
			}
			text := res.WIT()
			diffLines(t, filepath.Base(f), normalizeWorld(text), jcoWorld(t, f))
			if _, _, err := wit.LoadSource("decoded.wit", []byte(text)); err != nil {
				t.Errorf("the decoded WIT does not load: %v\n%s", err, text)
			}
		})
	}
}
