package store

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"
)

func TestChatsPageDraftsAndDeletion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db := open(t, path)
	ws, _ := workspace(t, db)
	muts := []Mutation{PutChat(Chat{ID: "ch_a", Title: "a", Creator: "u1", LastMessage: 120})}
	for i := uint64(1); i <= 120; i++ {
		muts = append(muts, PutChatMessage(ChatMessage{Chat: "ch_a", ID: i, Data: fmt.Appendf(nil, `{"n":%d}`, i)}))
	}
	base := "old"
	muts = append(muts, PutDraft(Draft{Chat: "ch_a", Gadgets: []DraftGadget{{Gadget: "g1", Name: "notes", Base: 2, Files: []DraftFile{{Name: "a.js", Base: &base, Content: "new"}}}}}))
	if err := ws.Commit(ctx, muts); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Mutation{PutChatMessage(ChatMessage{Chat: "ch_a", ID: 0, Data: []byte("{}")}), PutChatMessage(ChatMessage{Chat: "ch_a", ID: 5, Data: []byte("{")}), PutChat(Chat{ID: "a\x00b"}), DeleteDraft("")} {
		if err := ws.Commit(ctx, []Mutation{DeleteChat("ch_a"), bad}); err == nil {
			t.Fatalf("malformed mutation %+v was committed", bad)
		}
	}
	w, _ := ws.Workspace()
	db.Close()

	db = open(t, path)
	l, err := db.Acquire(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ws, err = db.Open(ctx, w.ID, l); err != nil {
		t.Fatal(err)
	}
	// Pages: the newest 50, then the 50 below the oldest of those, then the rest.
	page, err := ws.ChatMessages("ch_a", 0, 50)
	if err != nil || len(page) != 50 || page[0].ID != 71 || page[49].ID != 120 || string(page[49].Data) != `{"n":120}` {
		t.Fatalf("newest page: %d messages, %v", len(page), err)
	}
	page, err = ws.ChatMessages("ch_a", 71, 50)
	if err != nil || len(page) != 50 || page[0].ID != 21 || page[49].ID != 70 {
		t.Fatalf("second page: %d messages, %v", len(page), err)
	}
	page, err = ws.ChatMessages("ch_a", 21, 50)
	if err != nil || len(page) != 20 || page[0].ID != 1 {
		t.Fatalf("last page: %d messages, %v", len(page), err)
	}
	if page, err = ws.ChatMessages("ch_a", 1000, 1); err != nil || len(page) != 1 || page[0].ID != 120 {
		t.Fatalf("page below an id past the newest: %+v %v", page, err)
	}
	d, ok, err := ws.Draft("ch_a")
	if err != nil || !ok || d.Gadgets[0].Files[0].Content != "new" || *d.Gadgets[0].Files[0].Base != "old" || d.Size() != 6 {
		t.Fatalf("draft after reopen: %+v %v %v", d, ok, err)
	}
	if _, ok, err := ws.Draft("ch_b"); ok || err != nil {
		t.Fatalf("a chat without a draft: %v %v", ok, err)
	}
	if a, errA := ws.HasDraft("ch_a"); !a || errA != nil {
		t.Fatalf("HasDraft of a chat with a draft: %v %v", a, errA)
	}
	if b, errB := ws.HasDraft("ch_b"); b || errB != nil {
		t.Fatalf("HasDraft of a chat without one: %v %v", b, errB)
	}
	if err := ws.Commit(ctx, []Mutation{DeleteChat("ch_a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Chat("ch_a"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleted chat: %v", err)
	}
	if page, err := ws.ChatMessages("ch_a", 0, 50); err != nil || len(page) != 0 {
		t.Fatalf("messages of a deleted chat: %d %v", len(page), err)
	}
	if _, ok, _ := ws.Draft("ch_a"); ok {
		t.Fatal("the draft outlived its chat")
	}
	if err := ws.Commit(ctx, []Mutation{PutChat(Chat{ID: "ch_b", Creator: "u1"}), DeleteWorkspace()}); err != nil {
		t.Fatal(err)
	}
	if _, err := ws.Chats(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("chats of a deleted workspace: %v", err)
	}
}
