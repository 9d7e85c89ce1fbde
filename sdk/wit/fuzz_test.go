package wit_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"atelier/sdk/wit"
)

// FuzzParse feeds arbitrary text to LoadSource: it never panics, it returns either a model that
// prints and loads back to the same text, or errors that all carry a position.
func FuzzParse(f *testing.F) {
	for _, pattern := range []string{"testdata/*/*.wit", "testdata/*/*/*.wit", "../../wit/*/*.wit"} {
		files, _ := filepath.Glob(pattern)
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(src)
		}
	}
	f.Add([]byte("package a:b; interface i { type t = list<u8, 4294967296>; }"))
	f.Add([]byte("package a:b@0.1.0; /** doc */ world w { import x: func(); export x: func(); }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		res, pkg, err := wit.LoadSource("fuzz.wit", src)
		if err != nil {
			var list wit.ErrorList
			if !errors.As(err, &list) || len(list) == 0 {
				t.Fatalf("error is %T, want a wit.ErrorList: %v", err, err)
			}
			for _, e := range list {
				if e.Pos.File != "fuzz.wit" || e.Pos.Line < 1 || e.Pos.Column < 1 {
					t.Fatalf("error without a position: %v", e)
				}
			}
			return
		}
		if res == nil || pkg == nil {
			t.Fatal("no error and no model")
		}
		roundTrip(t, "fuzz", res)
	})
}
