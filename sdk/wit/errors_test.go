package wit_test

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atelier/sdk/wit"
)

var update = flag.Bool("update", false, "rewrite the testdata/errors/*.golden files and testdata/jco/*.wit (TestJcoWit)")

// TestErrorGolden loads each broken file of testdata/errors and compares the errors with the
// file's .golden twin. Run `go test ./sdk/wit -run ErrorGolden -update` after a deliberate change.
func TestErrorGolden(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "errors", "*.wit"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/errors files (%v)", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			_, _, err := wit.Load(file)
			if err == nil {
				t.Fatal("loaded without error")
			}
			var list wit.ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error is %T, want a wit.ErrorList: %v", err, err)
			}
			for _, e := range list {
				if e.Pos.File != file || e.Pos.Line == 0 || e.Pos.Column == 0 {
					t.Errorf("error without a position in %s: %v", file, e)
				}
			}
			got := err.Error() + "\n"
			golden := strings.TrimSuffix(file, ".wit") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("errors differ from %s\n got: %s\nwant: %s", golden, got, want)
			}
		})
	}
}
