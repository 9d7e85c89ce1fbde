package kernel_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
)

const notesJS = "gadgets/notes-js"

// noteIDs returns the ids of a list of notes, in order.
func noteIDs(t *testing.T, v any) []float64 {
	t.Helper()
	ids := []float64{}
	for _, n := range v.([]any) {
		ids = append(ids, n.(map[string]any)["id"].(float64))
	}
	return ids
}

func wantIDs(t *testing.T, what string, p *capnweb.Promise, want ...float64) {
	t.Helper()
	if got := noteIDs(t, await(t, p)); !reflect.DeepEqual(got, append([]float64{}, want...)) {
		t.Fatalf("%s: ids %v, want %v", what, got, want)
	}
}

// TestNotesGadget deploys gadgets/notes-js and drives it as a UI would: create, update, pin,
// search by tag and text, remove, with an event on every change, refusals of bad input that
// change nothing, and the notes kept across a restart.
func TestNotesGadget(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	s := startServer(t, data)
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	notes := ws.Call(ctx, "createGadget", "notes", jsFiles(t, notesJS), jsGrants)
	events := newCollector()
	await(t, notes.Call(ctx, "subscribe", events.fn))
	app := notes.Call(ctx, "connect")

	first := await(t, app.Call(ctx, "create", map[string]any{"title": "  Groceries ", "body": "- milk\n- *bread*", "tags": []any{"Home", "#shopping", "home"}})).(map[string]any)
	if first["id"] != float64(1) || first["title"] != "Groceries" || !reflect.DeepEqual(first["tags"], []any{"home", "shopping"}) || first["pinned"] != false {
		t.Fatalf("create = %v", first)
	}
	if _, err := time.Parse(time.RFC3339, first["updated"].(string)); err != nil || first["created"] != first["updated"] {
		t.Fatalf("create times: %v", first)
	}
	await(t, app.Call(ctx, "create", map[string]any{"title": "Trip plan", "tags": []any{"travel"}}))
	await(t, app.Call(ctx, "create", map[string]any{"title": "Standup", "body": "Ship the notes UI", "tags": []any{"work"}, "pinned": true}))
	wantIDs(t, "list", app.Call(ctx, "list"), 3, 2, 1) // pinned first, then the newest

	upd := await(t, app.Call(ctx, "update", 1, map[string]any{"body": "- milk\n- eggs", "pinned": true})).(map[string]any)
	if upd["title"] != "Groceries" || upd["body"] != "- milk\n- eggs" || upd["pinned"] != true || upd["created"] != first["created"] {
		t.Fatalf("update = %v", upd)
	}
	if got := await(t, app.Call(ctx, "get", 1)); !reflect.DeepEqual(got, upd) {
		t.Fatalf("get(1) = %v, want %v", got, upd)
	}

	wantIDs(t, "search #home", app.Call(ctx, "search", "#HOME"), 1)
	wantIDs(t, "search text", app.Call(ctx, "search", "EGGS"), 1)
	wantIDs(t, "search text in tags", app.Call(ctx, "search", "trav"), 2)
	wantIDs(t, "search {tag, text}", app.Call(ctx, "search", map[string]any{"tag": "work", "text": "ship"}), 3)
	wantIDs(t, "search no match", app.Call(ctx, "search", map[string]any{"tag": "work", "text": "milk"}))
	wantTags := []any{
		map[string]any{"tag": "home", "count": float64(1)}, map[string]any{"tag": "shopping", "count": float64(1)},
		map[string]any{"tag": "travel", "count": float64(1)}, map[string]any{"tag": "work", "count": float64(1)},
	}
	if got := await(t, app.Call(ctx, "tags")); !reflect.DeepEqual(got, wantTags) {
		t.Fatalf("tags = %v", got)
	}

	if await(t, app.Call(ctx, "remove", 2)) != true || await(t, app.Call(ctx, "remove", 2)) != false {
		t.Fatal("remove(2) twice: want true, then false")
	}
	wantIDs(t, "list after remove", app.Call(ctx, "list"), 1, 3)

	// Bad input is refused with a clear error and changes nothing.
	for _, bad := range []struct {
		method string
		args   []any
		want   string
	}{
		{"create", []any{map[string]any{}}, "create: title is required"},
		{"create", []any{map[string]any{"title": "   "}}, "title must be a non-empty string"},
		{"create", []any{map[string]any{"title": strings.Repeat("t", 201)}}, "at most 200 characters"},
		{"create", []any{map[string]any{"title": "x", "color": "red"}}, `unknown field "color"`},
		{"create", []any{map[string]any{"title": "x", "tags": []any{"no spaces"}}}, `tag "no spaces" must be`},
		{"create", []any{map[string]any{"title": "x", "tags": "home"}}, "tags must be an array"},
		{"create", []any{map[string]any{"title": "x", "body": strings.Repeat("b", 100_001)}}, "body must be a string of at most 100000"},
		{"create", []any{"just a title"}, "want an object"},
		{"update", []any{1, map[string]any{"pinned": "yes"}}, "pinned must be true or false"},
		{"update", []any{99, map[string]any{"title": "x"}}, "update: no note with id 99"},
		{"get", []any{"1"}, `get: id must be a positive integer, got "1"`},
		{"remove", []any{-1}, "remove: id must be a positive integer"},
		{"search", []any{"  "}, "search: the query is empty"},
		{"search", []any{42}, "search: want"},
	} {
		refused(t, app.Call(ctx, bad.method, bad.args...), "GADGET_ERROR", bad.want)
	}
	wantIDs(t, "list after refusals", app.Call(ctx, "list"), 1, 3)

	// One event per change, in order, carrying the note; the refusals published nothing (the
	// next change's event follows the removal's directly).
	await(t, app.Call(ctx, "create", map[string]any{"title": "After the refusals"}))
	var kinds []string
	for _, ev := range events.wait(t, 6) {
		p := ev["payload"].(map[string]any)
		if ev["topic"] != "notes" || p["note"].(map[string]any)["id"] == nil {
			t.Fatalf("event %v", ev)
		}
		kinds = append(kinds, p["kind"].(string))
	}
	if want := "created created created updated removed created"; strings.Join(kinds, " ") != want {
		t.Fatalf("event kinds %v, want %q", kinds, want)
	}

	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	s.stop()
	s = startServer(t, data)
	root := s.dial(t)
	tok := await(t, root.Call(ctx, "login", "ada", "password-ada")).(string)
	app = root.Call(ctx, "authenticate", tok).Call(ctx, "openWorkspace", wsID).Call(ctx, "gadget", "notes").Call(ctx, "connect")
	wantIDs(t, "list after a restart", app.Call(ctx, "list"), 1, 3, 4)
}
