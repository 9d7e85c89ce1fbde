package store

import (
	"errors"
	"path/filepath"
	"testing"
)

// A version's UI script is a code blob like its code: kept while a version refers to it,
// shared by content, and collected with the last version that used it.
func TestClientScriptsAreReferencedCode(t *testing.T) {
	db := open(t, filepath.Join(t.TempDir(), "c.db"))
	ws, _ := workspace(t, db)
	code, ui1, ui2 := []byte("\x00asm code"), []byte("export default 1"), []byte("export default 2")
	v := func(n int, ui []byte) Version {
		out := Version{Number: n, SHA256: CodeSHA(code), Size: len(code)}
		if ui != nil {
			out.Client = CodeSHA(ui)
		}
		return out
	}
	stored := func(blob []byte) bool {
		t.Helper()
		got, err := db.Code(ctx, CodeSHA(blob))
		if errors.Is(err, ErrNotFound) {
			return false
		}
		if err != nil || string(got) != string(blob) {
			t.Fatalf("Code(%s) = %q, %v", blob, got, err)
		}
		return true
	}
	g := Gadget{ID: "g1", Name: "ui", Current: 1, Versions: []Version{v(1, ui1)}}
	if err := ws.Commit(ctx, []Mutation{PutCode(code), PutCode(ui1), PutGadget(g)}); err != nil {
		t.Fatal(err)
	}
	if !stored(ui1) {
		t.Fatal("the UI script of version 1 is not stored")
	}
	// Version 2 swaps the UI; version 3 removes it; version 1 still holds ui1.
	g.Versions = append(g.Versions, v(2, ui2), v(3, nil))
	if err := ws.Commit(ctx, []Mutation{PutCode(ui2), PutGadget(g)}); err != nil {
		t.Fatal(err)
	}
	if !stored(ui1) || !stored(ui2) {
		t.Fatal("a UI script still referred to was collected")
	}
	// Dropping version 1 (as a rewrite of the record) releases ui1 only.
	g.Versions = g.Versions[1:]
	if err := ws.Commit(ctx, []Mutation{PutGadget(g)}); err != nil {
		t.Fatal(err)
	}
	if stored(ui1) || !stored(ui2) || !stored(code) {
		t.Fatal("after dropping version 1: want ui1 collected, ui2 and the code kept")
	}
	// A UI blob never referred to is not kept.
	orphan := []byte("nobody uses me")
	if err := ws.Commit(ctx, []Mutation{PutCode(orphan)}); err != nil {
		t.Fatal(err)
	}
	if stored(orphan) {
		t.Fatal("an unreferenced UI script was kept")
	}
	if err := ws.Commit(ctx, []Mutation{DeleteGadget("g1")}); err != nil {
		t.Fatal(err)
	}
	if stored(ui2) || stored(code) {
		t.Fatal("deleting the gadget left its code or UI script behind")
	}
}
