package gatekeeper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
)

// The slides gadget (gadgets/slides-go) through a real kernel, a real Cap'n Web session over a
// WebSocket and the real notes gatekeeper against the loopback notes service: deck resources
// held as stubs, slides edited, events delivered, input refused, and a deck published as a
// note that reaches the service only once the account's owner approves it.

// slidesGrants are the grants the slides gadget is deployed with.
var slidesGrants = []any{"atelier:host/kv", "atelier:host/log", "atelier:host/events", "atelier:host/bindings"}

// slide returns a slide as a Cap'n Web client sends it (the WIT record slide).
func slide(title, body, layout string, notes any) map[string]any {
	return map[string]any{"title": title, "body": body, "layout": layout, "notes": notes}
}

// takeStub awaits a call that returns a resource and keeps its stub (the promise is disposed).
func takeStub(t *testing.T, p *capnweb.Promise) *capnweb.Stub {
	t.Helper()
	s, ok := await(t, p).(*capnweb.Stub)
	if !ok {
		t.Fatal("the call did not return a stub")
	}
	s = s.Dup()
	p.Dispose()
	return s
}

// titles returns the titles of a deck's slides, in order.
func titles(t *testing.T, deck *capnweb.Stub) []string {
	t.Helper()
	var out []string
	for _, s := range await(t, deck.Call(context.Background(), "slides")).([]any) {
		out = append(out, s.(map[string]any)["title"].(string))
	}
	return out
}

func wantTitles(t *testing.T, deck *capnweb.Stub, want ...string) {
	t.Helper()
	if got := titles(t, deck); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("slides = %q, want %q", got, want)
	}
}

// nextEvent returns the next event of topic, skipping others.
func nextEvent(t *testing.T, events <-chan map[string]any, topic string) map[string]any {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev := <-events:
			if ev["topic"] == topic {
				return ev["payload"].(map[string]any)
			}
		case <-timeout:
			t.Fatalf("no event on %s", topic)
		}
	}
}

// wantEvent wants the next event of topic to be of kind, with the deck holding n slides.
func wantEvent(t *testing.T, events <-chan map[string]any, topic, kind string, n float64) map[string]any {
	t.Helper()
	ev := nextEvent(t, events, topic)
	if ev["kind"] != kind || ev["deck"].(map[string]any)["slides"] != n {
		t.Fatalf("event %v, want kind %s with %v slides", ev, kind, n)
	}
	return ev
}

func TestSlidesGadget(t *testing.T) {
	ctx := context.Background()
	svc := startService(t)
	wasm := guest(t, "gadgets/slides-go")
	s := startServer(t, svc, filepath.Join(t.TempDir(), "atelier.db"))
	admin, alice, bob := s.authed(t, s.adminToken(t)), s.user(t, "alice"), s.user(t, "bob")
	gk := installGatekeeper(t, admin, notesManifest(t, svc), guest(t, "gatekeepers/notes-go"))
	acct := await(t, alice.Call(ctx, "connectAccount", gk, svc.Origin+"/notebooks/work", map[string]any{"token": aliceToken})).(map[string]any)["id"].(string)

	// Without the bindings grant the component is refused before it runs.
	ws := alice.Call(ctx, "createWorkspace", "talks")
	refused(t, ws.Call(ctx, "createGadget", "slides", wasm, slidesGrants[:3]), "INVALID_ARGUMENT", "atelier:host/bindings")
	g := ws.Call(ctx, "createGadget", "slides", wasm, slidesGrants)
	client, err := os.ReadFile("../../gadgets/slides-go/client.js")
	if err != nil {
		t.Fatal(err)
	}
	await(t, g.Call(ctx, "setClient", string(client)))
	app := g.Call(ctx, "connect")
	decks := app.Get("decks")
	events := make(chan map[string]any, 256)
	await(t, g.Call(ctx, "subscribe", func(ev map[string]any) { events <- ev }))

	// open creates a deck, titled after its name; the stub's methods are the resource's.
	deck := takeStub(t, decks.Call(ctx, "open", "intro"))
	wantEvent(t, events, "deck/intro", "created", 0)
	if n := await(t, deck.Call(ctx, "name")); n != "intro" {
		t.Fatalf("name() = %v", n)
	}
	await(t, deck.Call(ctx, "setTitle", "Atelier in ten minutes"))
	wantEvent(t, events, "deck/intro", "retitled", 0)
	for i, title := range []string{"Welcome", "Gadgets", "Gatekeepers", "Questions"} {
		layout := "content"
		if i == 0 {
			layout = "title"
		}
		if idx := await(t, deck.Call(ctx, "addSlide", slide(title, "- point one\n- point <two>", layout, nil))); idx != float64(i) {
			t.Fatalf("addSlide(%s) = %v, want %d", title, idx, i)
		}
		ev := wantEvent(t, events, "deck/intro", "added", float64(i+1))
		if ev["index"] != float64(i) || ev["slide"].(map[string]any)["title"] != title || ev["slide"].(map[string]any)["body"] != "- point one\n- point <two>" {
			t.Fatalf("added event %v", ev)
		}
	}
	wantTitles(t, deck, "Welcome", "Gadgets", "Gatekeepers", "Questions")

	// Update (with speaker notes), move, remove: each stored and announced.
	await(t, deck.Call(ctx, "updateSlide", 1, slide("Gadgets are actors", "one call at a time\n---\nstate in kv", "two-column", "say: Durable Objects")))
	if ev := wantEvent(t, events, "deck/intro", "updated", 4); ev["index"] != 1.0 || ev["slide"].(map[string]any)["notes"] != "say: Durable Objects" {
		t.Fatalf("updated event %v", ev)
	}
	await(t, deck.Call(ctx, "moveSlide", 3, 0))
	if ev := wantEvent(t, events, "deck/intro", "moved", 4); ev["from"] != 3.0 || ev["to"] != 0.0 {
		t.Fatalf("moved event %v", ev)
	}
	wantTitles(t, deck, "Questions", "Welcome", "Gadgets are actors", "Gatekeepers")
	await(t, deck.Call(ctx, "moveSlide", 0, 3))
	wantEvent(t, events, "deck/intro", "moved", 4)
	await(t, deck.Call(ctx, "removeSlide", 2))
	if ev := wantEvent(t, events, "deck/intro", "removed", 3); ev["index"] != 2.0 {
		t.Fatalf("removed event %v", ev)
	}
	wantTitles(t, deck, "Welcome", "Gadgets are actors", "Questions")
	got := await(t, deck.Call(ctx, "slides")).([]any)[1].(map[string]any)
	if got["layout"] != "two-column" || got["notes"] != "say: Durable Objects" || got["body"] != "one call at a time\n---\nstate in kv" {
		t.Fatalf("the updated slide reads back as %v", got)
	}

	// Bad input is refused with a message saying what is wrong; the deck is unchanged.
	refused(t, decks.Call(ctx, "open", "Bad Name"), "GADGET_ERROR", `deck name "Bad Name": use 1 to 64 of a-z, 0-9, - and _`)
	refused(t, decks.Call(ctx, "open", "-x"), "GADGET_ERROR", "starting with a letter or digit")
	refused(t, decks.Call(ctx, "open", strings.Repeat("a", 65)), "GADGET_ERROR", "use 1 to 64")
	refused(t, deck.Call(ctx, "addSlide", slide(" ", "", "content", nil)), "GADGET_ERROR", "slide title is empty")
	refused(t, deck.Call(ctx, "addSlide", slide("two\nlines", "", "content", nil)), "GADGET_ERROR", "slide title must be one line")
	refused(t, deck.Call(ctx, "addSlide", slide(strings.Repeat("t", 201), "", "content", nil)), "GADGET_ERROR", "slide title is 201 bytes, at most 200")
	refused(t, deck.Call(ctx, "addSlide", slide("big", strings.Repeat("b", 16<<10+1), "content", nil)), "GADGET_ERROR", "slide body is 16385 bytes, at most 16384")
	refused(t, deck.Call(ctx, "addSlide", slide("long notes", "", "content", strings.Repeat("n", 4097))), "GADGET_ERROR", "slide notes are 4097 bytes")
	refused(t, deck.Call(ctx, "addSlide", slide("odd", "", "diagonal", nil)), "INVALID_ARGUMENT", "diagonal")
	refused(t, deck.Call(ctx, "addSlide", map[string]any{"title": "no layout", "body": ""}), "INVALID_ARGUMENT", `missing field "layout" of slide`)
	refused(t, deck.Call(ctx, "updateSlide", 3, slide("x", "", "content", nil)), "GADGET_ERROR", "deck intro has no slide 3 (it has 3, numbered from 0)")
	refused(t, deck.Call(ctx, "moveSlide", 0, 7), "GADGET_ERROR", "has no slide 7")
	refused(t, deck.Call(ctx, "removeSlide", 9), "GADGET_ERROR", "has no slide 9")
	refused(t, deck.Call(ctx, "removeSlide", -1), "INVALID_ARGUMENT", "args[0]")
	refused(t, deck.Call(ctx, "setTitle", ""), "GADGET_ERROR", "deck title is empty")
	wantTitles(t, deck, "Welcome", "Gadgets are actors", "Questions")

	// A slide too large to carry in an event (escaped JSON over 64 KiB) is announced without
	// its content; reading the slides gives it.
	control := strings.Repeat("\x01", 12000)
	await(t, deck.Call(ctx, "addSlide", slide("control", control, "content", strings.Repeat("\x02", 4000))))
	if ev := wantEvent(t, events, "deck/intro", "added", 4); ev["index"] != 3.0 || ev["slide"] != nil {
		t.Fatalf("added event of a large slide: kind %v index %v, slide present: %t", ev["kind"], ev["index"], ev["slide"] != nil)
	}
	if b := await(t, deck.Call(ctx, "slides")).([]any)[3].(map[string]any)["body"]; b != control {
		t.Fatal("the large slide does not read back")
	}
	await(t, deck.Call(ctx, "removeSlide", 3))
	wantEvent(t, events, "deck/intro", "removed", 3)

	// Disposing the stub drops the handle; reopening shows the stored deck, also to another
	// collaborator (role use) on another session, whose changes reach this subscriber.
	deck.Dispose()
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	bobDecks := bob.Call(ctx, "openWorkspace", wsID, "").Call(ctx, "gadget", "slides").Call(ctx, "connect").Get("decks")
	bobDeck := takeStub(t, bobDecks.Call(ctx, "open", "intro"))
	wantTitles(t, bobDeck, "Welcome", "Gadgets are actors", "Questions")
	await(t, bobDeck.Call(ctx, "addSlide", slide("Thanks", "bob was here", "section", nil)))
	wantEvent(t, events, "deck/intro", "added", 4)
	deck = takeStub(t, decks.Call(ctx, "open", "intro"))
	wantTitles(t, deck, "Welcome", "Gadgets are actors", "Questions", "Thanks")
	info := await(t, deck.Call(ctx, "info")).(map[string]any)
	if info["title"] != "Atelier in ten minutes" || info["slides"] != 4.0 || info["updated-ms"].(float64) <= 0 {
		t.Fatalf("info() = %v", info)
	}

	// Listing and deleting decks; a handle of a deleted deck fails with a reason.
	scratch := takeStub(t, decks.Call(ctx, "open", "scratch"))
	wantEvent(t, events, "deck/scratch", "created", 0)
	await(t, scratch.Call(ctx, "addSlide", slide("draft", "", "content", nil)))
	list := await(t, decks.Call(ctx, "listDecks")).([]any)
	if len(list) != 2 || list[0].(map[string]any)["name"] != "intro" || list[1].(map[string]any)["name"] != "scratch" || list[1].(map[string]any)["slides"] != 1.0 {
		t.Fatalf("listDecks = %v", list)
	}
	if ok := await(t, decks.Call(ctx, "deleteDeck", "scratch")); ok != true {
		t.Fatalf("deleteDeck = %v", ok)
	}
	if ok := await(t, decks.Call(ctx, "deleteDeck", "scratch")); ok != false {
		t.Fatalf("deleteDeck of a deleted deck = %v", ok)
	}
	refused(t, scratch.Call(ctx, "slides"), "GADGET_ERROR", "deck scratch was deleted")
	refused(t, scratch.Call(ctx, "addSlide", slide("x", "", "content", nil)), "GADGET_ERROR", "was deleted")
	scratch = takeStub(t, decks.Call(ctx, "open", "scratch"))
	wantTitles(t, scratch) // opened anew: empty, none of the old slides' keys left behind
	if list := await(t, decks.Call(ctx, "listDecks")).([]any); len(list) != 2 || list[1].(map[string]any)["slides"] != 0.0 {
		t.Fatalf("listDecks after re-creating scratch = %v", list)
	}

	// Publishing needs a bound gatekeeper.
	refused(t, deck.Call(ctx, "publish", ""), "GADGET_ERROR", "name the gatekeeper binding")
	refused(t, deck.Call(ctx, "publish", "notes"), "GADGET_ERROR", `publish deck intro through "notes": gadget slides has no binding "notes"`)
	refused(t, scratch.Call(ctx, "publish", "notes"), "GADGET_ERROR", "has no slides yet")
	await(t, ws.Call(ctx, "bindGatekeeper", "slides", "notes", acct))

	// Published through the notes gatekeeper: one action, pending until alice approves it;
	// the note is not on the service before, and holds the slides as markdown after.
	notes := func() []note {
		_, body := svc.direct(t, "GET", "/api/notebooks/work/notes", aliceToken)
		var res struct{ Notes []note }
		if err := json.Unmarshal([]byte(body), &res); err != nil {
			t.Fatalf("notes service: %q: %v", body, err)
		}
		return res.Notes
	}
	action := await(t, deck.Call(ctx, "publish", "notes"))
	if ev := wantEvent(t, events, "deck/intro", "published", 4); ev["action"] != action || ev["binding"] != "notes" {
		t.Fatalf("published event %v (action %v)", ev, action)
	}
	if n := notes(); len(n) != 0 {
		t.Fatalf("the note reached the service before approval: %v", n)
	}
	var queued map[string]any
	for _, a := range await(t, ws.Call(ctx, "listActions", map[string]any{"pending": true})).([]any) {
		if a.(map[string]any)["id"] == action {
			queued = a.(map[string]any)
		}
	}
	if queued == nil || queued["state"] != "pending" || queued["caller"] != "gadget:slides" || queued["kind"] != "add-note" {
		t.Fatalf("pending action %v: %v", action, queued)
	}
	// bob, who may use the gadget, does not decide what alice's account does.
	refused(t, bob.Call(ctx, "openWorkspace", wsID, "").Call(ctx, "approveAction", action), "NOT_FOUND", "no action")
	await(t, ws.Call(ctx, "approveAction", action))
	n := notes()
	if len(n) != 1 || n[0].Title != "Atelier in ten minutes" {
		t.Fatalf("notes after approval: %v", n)
	}
	for _, want := range []string{"*4 slides from the deck `intro` (Atelier in ten minutes)*", "## Welcome\n\n- point one\n- point <two>", "## Gadgets are actors\n\none call at a time\n---\nstate in kv\n\n> **Notes:** say: Durable Objects", "## Thanks\n\nbob was here"} {
		if !strings.Contains(n[0].Body, want) {
			t.Fatalf("the note's body lacks %q:\n%s", want, n[0].Body)
		}
	}

	// The state survives the gadget's restart (a redeploy): stubs made before it fail, a new
	// open shows the deck.
	await(t, g.Call(ctx, "deploy", wasm))
	refused(t, deck.Call(ctx, "slides"), "FAILED_PRECONDITION", "restarted")
	deck = takeStub(t, decks.Call(ctx, "open", "intro"))
	wantTitles(t, deck, "Welcome", "Gadgets are actors", "Questions", "Thanks")
}

// TestSlidesClientParses checks that the UI script is a module node can load: its syntax
// (top-level await included) parses.
func TestSlidesClientParses(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not found: run scripts/setup.sh")
	}
	src, err := os.ReadFile("../../gadgets/slides-go/client.js")
	if err != nil {
		t.Fatal(err)
	}
	mjs := filepath.Join(t.TempDir(), "client.mjs")
	if err := os.WriteFile(mjs, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "--check", mjs).CombinedOutput(); err != nil {
		t.Fatalf("node --check client.js: %v\n%s", err, out)
	}
}
