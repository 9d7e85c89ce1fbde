package witdecode_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// jcoPath is jco's command line, installed by the sdk's npm tools (sdk/componentize).
const jcoPath = "../../componentize/node_modules/.bin/jco"

// normalizeWorld reduces WIT text to what `jco wit` prints and how it may differ in layout:
// only the root package (jco prints the world alone, not the packages of the interfaces it
// names), each line trimmed, blank lines dropped, and lines sorted (jco groups a world's items
// differently).
func normalizeWorld(text string) []string {
	var out []string
	for i, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if i > 0 && strings.HasPrefix(l, "package ") {
			break
		}
		if l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return out
}

// jcoWorld runs `jco wit` on path, skipping the test when jco is not installed.
func jcoWorld(t *testing.T, path string) []string {
	t.Helper()
	jco, err := filepath.Abs(jcoPath)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(jco); err != nil {
		t.Skipf("jco is not installed (%v): run the sdk setup to install the npm tools", err)
	}
	out, err := exec.Command(jco, "wit", path).CombinedOutput()
	if err != nil {
		t.Fatalf("jco wit %s: %v\n%s", path, err, out)
	}
	return normalizeWorld(string(out))
}

func diffLines(t *testing.T, name string, got, want []string) {
	t.Helper()
	if slices.Equal(got, want) {
		return
	}
	for _, l := range want {
		if !slices.Contains(got, l) {
			t.Errorf("%s: missing %q", name, l)
		}
	}
	for _, l := range got {
		if !slices.Contains(want, l) {
			t.Errorf("%s: extra %q", name, l)
		}
	}
}
