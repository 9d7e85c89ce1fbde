package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestHooksAreIndexedAndSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h.db")
	db := open(t, path)
	ws, _ := workspace(t, db)
	other, _ := workspace(t, db)
	t0 := time.Unix(1_800_000_000, 0).UTC()
	a := Hook{ID: "hk_a", Gadget: "g1", Method: "onNote", Binding: "notes", Account: "acct1", Event: "note-added", Source: "webhook", Secret: []byte("sealed"), Creator: "u1", Created: t0}
	b := Hook{ID: "hk_b", Gadget: "g1", Method: "digest", Binding: "notes", Account: "acct2", Event: "digest", Source: "poll", EveryMs: 60000, Next: t0, Creator: "u1", Created: t0}
	if err := ws.Commit(ctx, []Mutation{PutHook(a), PutHook(b)}); err != nil {
		t.Fatal(err)
	}
	// Malformed hook mutations are refused whole, and an id of another workspace is not taken.
	for _, bad := range []Mutation{PutHook(Hook{ID: "x", Gadget: "g1"}), PutHook(Hook{Gadget: "g1", Method: "m", Account: "a", Source: "poll"}), DeleteHook("a\x00b")} {
		if err := ws.Commit(ctx, []Mutation{DeleteHook("hk_a"), bad}); err == nil {
			t.Fatalf("malformed mutation %+v was committed", bad)
		}
	}
	if err := other.Commit(ctx, []Mutation{PutHook(Hook{ID: "hk_a", Gadget: "g2", Method: "m", Account: "a", Source: "webhook"})}); !errors.Is(err, ErrConflict) {
		t.Fatalf("another workspace took hook hk_a: %v", err)
	}
	if err := other.Commit(ctx, []Mutation{PutHook(Hook{ID: "hk_c", Gadget: "g2", Method: "m", Account: "acct1", Source: "notify"})}); err != nil {
		t.Fatal(err)
	}
	w, _ := ws.Workspace()
	ref, err := db.HookRef(ctx, "hk_b")
	if err != nil || ref.Workspace != w.ID || ref.Account != "acct2" || ref.Source != "poll" || !ref.Next.Equal(t0) {
		t.Fatalf("index entry of hk_b: %+v %v", ref, err)
	}
	if _, err := db.HookRef(ctx, "hk_nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown hook: %v", err)
	}
	db.Close()

	db = open(t, path)
	l, err := db.Acquire(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ws, err = db.Open(ctx, w.ID, l); err != nil {
		t.Fatal(err)
	}
	got, err := ws.Hooks()
	if err != nil || len(got) != 2 || got[0].ID != "hk_a" || string(got[0].Secret) != "sealed" || got[1].EveryMs != 60000 {
		t.Fatalf("hooks after reopen: %+v %v", got, err)
	}
	refs, err := db.HookRefs(ctx)
	if err != nil || len(refs) != 3 {
		t.Fatalf("index after reopen: %+v %v", refs, err)
	}
	// Deleting one hook, then the workspace, drops their index entries; the other
	// workspace's stays.
	if err := ws.Commit(ctx, []Mutation{DeleteHook("hk_a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.HookRef(ctx, "hk_a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted hook still indexed: %v", err)
	}
	if err := ws.Commit(ctx, []Mutation{DeleteWorkspace()}); err != nil {
		t.Fatal(err)
	}
	refs, err = db.HookRefs(ctx)
	if err != nil || len(refs) != 1 || refs[0].ID != "hk_c" {
		t.Fatalf("index after deleting the workspace: %+v %v", refs, err)
	}
}
