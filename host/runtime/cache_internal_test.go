package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestVerifiedFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.cwasm")
	write := func(name string, data string) os.FileInfo {
		t.Helper()
		if err := os.WriteFile(name, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	var v verifiedFiles
	fi := write(path, "artifact")
	if v.has(path, fi) {
		t.Fatal("empty set has a file")
	}
	v.add(path, fi)
	if !v.has(path, fi) {
		t.Fatal("added file is not there")
	}

	changed := map[string]func() os.FileInfo{
		"size": func() os.FileInfo { return write(path, "artifact, longer") },
		"mtime": func() os.FileInfo {
			if err := os.Chtimes(path, time.Time{}, fi.ModTime().Add(-time.Hour)); err != nil {
				t.Fatal(err)
			}
			got, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return got
		},
		"inode": func() os.FileInfo {
			other := filepath.Join(dir, "b.cwasm")
			write(other, "artifact")
			if err := os.Chtimes(other, time.Time{}, fi.ModTime()); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
			got, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			return got
		},
	}
	for name, change := range changed {
		t.Run(name, func(t *testing.T) {
			fi = write(path, "artifact")
			v.add(path, fi)
			if got := change(); v.has(path, got) {
				t.Fatalf("a file with another %s still counts as checked", name)
			}
		})
	}

	v.forget(path)
	if v.has(path, fi) {
		t.Fatal("forgotten file is still there")
	}
	for i := range maxVerified + 10 {
		v.add(fmt.Sprintf("%s.%d", path, i), fi)
	}
	if len(v.m) != maxVerified {
		t.Fatalf("%d files remembered, want the bound %d", len(v.m), maxVerified)
	}
}
