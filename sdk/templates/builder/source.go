package builder

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// FindLine returns "file:line" of the first line of the project's sources (.go, .js, .ts, .c,
// .h files, not under wit/, build/ or node_modules/) for which match is true, or "". With
// vendored false, the folders atelier new and atelier build write (internal/ and the
// generated bindings/) are skipped too.
func FindLine(dir string, vendored bool, match func(string) bool) string {
	found := ""
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || found != "" {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if rel == "wit" || rel == "build" || d.Name() == "node_modules" ||
				!vendored && (rel == "internal" || rel == BindingsDir) {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".js", ".ts", ".c", ".h":
		default:
			return nil
		}
		if found = findInFile(path, match); found != "" {
			return filepath.SkipAll
		}
		return nil
	})
	return found
}

// findInFile returns "path:line" of the first line of the file path for which match is true,
// or "" (also when the file cannot be read).
func findInFile(path string, match func(string) bool) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		if match(sc.Text()) {
			return fmt.Sprintf("%s:%d", path, n)
		}
	}
	return ""
}

// The parts of jco's error for an export whose core signature is not the world's: the export
// (a function, or an interface whose function is named in the mismatch) and both signatures.
var (
	classifyExport = regexp.MustCompile("failed to classify export `([^`]+)`")
	typeMismatch   = regexp.MustCompile("type mismatch for function `([^`]+)`: expected `([^`]*)` but found `([^`]*)`")
)

// mismatchError explains jco's error msg when it says that an export's core signature is not
// the world's: where the world declares the export (and its WIT line), where the code defines
// it (a C export_name, a Go //go:wasmexport), and both core signatures. It returns nil for
// other errors.
func (b *build) mismatchError(msg string) error {
	m := typeMismatch.FindStringSubmatch(msg)
	c := classifyExport.FindStringSubmatch(msg)
	if m == nil || c == nil {
		return nil
	}
	core := c[1]
	if strings.Contains(core, "/") && !strings.Contains(core, "#") {
		core += "#" + m[1] // an interface: the mismatch names its function
	}
	var want *wantExport
	for _, e := range worldExports(b.world) {
		if e.core == core {
			want = &e
			break
		}
	}
	if want == nil {
		return nil
	}
	var s strings.Builder
	if at := FindLine(b.dir, true, definesExport(core)); at != "" {
		s.WriteString(at + ": ")
	}
	fmt.Fprintf(&s, "%s does not match world %s: the code's function has the core signature %s, the world's flattens to %s\n  %s: %s",
		want.sig, b.world.Name, coreSignature(m[3]), coreSignature(m[2]), want.pos, witLine(want.pos.File, want.pos.Line))
	s.WriteString("\nEach parameter and result must be the WIT one flattened to core types (u32 -> uint32_t/uint32, u64 -> uint64_t/uint64, string -> a pointer and a length, a compound result -> a pointer to it)")
	return fmt.Errorf("%s", s.String())
}

// coreSignature rewrites a signature of jco's error ("[I32, I64] -> [I64]") the way the WAT
// text format spells core types: "(i32, i64) -> (i64)".
func coreSignature(sig string) string {
	sig = strings.NewReplacer("[", "(", "]", ")").Replace(sig)
	return strings.ToLower(sig)
}

// definesExport matches the source line that gives a function the core export name core: a Go
// //go:wasmexport directive, a C export_name attribute, or a C macro naming the function of an
// interface export ("EXPORT(\"describe\")" for "ns:pkg/iface@v#describe").
func definesExport(core string) func(string) bool {
	_, fn, isIface := strings.Cut(core, "#")
	return func(line string) bool {
		l := strings.TrimSpace(line)
		switch {
		case l == "//go:wasmexport "+core, strings.Contains(l, `export_name("`+core+`")`):
			return true
		case isIface:
			return strings.Contains(strings.ToLower(l), "export") && strings.Contains(l, `("`+fn+`")`)
		}
		return false
	}
}

// witLine returns line n of file, trimmed, or "" when it cannot be read.
func witLine(file string, n int) string {
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	lines := strings.Split(string(data), "\n")
	if n < 1 || n > len(lines) {
		return ""
	}
	return strings.TrimSpace(lines[n-1])
}
