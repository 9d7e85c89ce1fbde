package browser

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"atelier/sdk/guesttest"
)

// TestTodoAcrossTabs signs up, creates a workspace and deploys the to-do component with its
// UI through the shell (one version holds both), adds items in one tab and sees them appear
// live in a second tab (and a toggle in the second reach the first), then reloads and finds
// them still there. Then it changes the UI alone, removes it, and rolls back to the first
// version from the Versions panel, which says which version carries which UI.
func TestTodoAcrossTabs(t *testing.T) {
	h := newHarness(t)
	wasm := guesttest.Path(t, "gadgets/todo-go")
	ui := filepath.Join(h.root, "gadgets", "todo-jsgadget", "client.js")

	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"), visible("#signup"), visible(`#conn-state[data-state="online"]`))
	h.shot(a, "01-login")
	h.signup(a, "ada")
	h.shot(a, "02-workspaces")
	h.createWorkspace(a, "home")
	h.deploy(a, "todo", wasm, ui)
	h.shot(a, "03-workspace-gadgets")
	h.run(a, "open the todo gadget", click(`#gadgets tr[data-gadget="todo"] a`), visible("iframe.gadget-frame"))

	h.wantVersions(a, "1 UI "+shortSHA(t, ui))
	fa := h.frame(a)
	h.runFrame(fa, "add an item in tab 1", fa.visible("#new-todo"), fa.keys("#new-todo", "buy milk\n"), fa.visible(`#todos li[data-id="1"]`))
	var url string
	h.run(a, "read the gadget page's URL", chromedp.Location(&url))

	b := h.tab()
	h.run(b, "open the gadget in tab 2", chromedp.Navigate(url), visible("iframe.gadget-frame"))
	fb := h.frame(b)
	h.runFrame(fb, "see tab 1's item in tab 2", fb.visible(`#todos li[data-id="1"]`))
	h.runFrame(fa, "add a second item in tab 1", fa.keys("#new-todo", "walk the dog\n"))
	h.runFrame(fb, "see it arrive live in tab 2", fb.visible(`#todos li[data-id="2"]`))
	h.runFrame(fb, "toggle the first item in tab 2", fb.click(`#todos li[data-id="1"] input[type="checkbox"]`))
	h.runFrame(fa, "see the toggle arrive live in tab 1", fa.visible(`#todos li.done[data-id="1"]`))
	h.shot(a, "04-gadget-todo")

	h.run(b, "reload tab 2", chromedp.Reload(), visible("iframe.gadget-frame"))
	fb = h.frame(b)
	var items string
	h.runFrame(fb, "find the items after the reload", fb.visible(`#todos li.done[data-id="1"]`), fb.visible(`#todos li[data-id="2"]`), fb.text("#todos", &items))
	for _, want := range []string{"buy milk", "walk the dog"} {
		if !strings.Contains(items, want) {
			t.Errorf("after a reload the list reads %q, want it to hold %q", items, want)
		}
	}

	other := h.writeTemp("client.js", []byte(otherUI))
	h.run(b, "set another UI alone", upload(`#gadget-client input[type="file"]`, other), click("#set-client"), visible(`#versions tr.current[data-version="2"]`))
	fb = h.frame(b)
	var shown string
	h.runFrame(fb, "see the other UI over the same state", fb.visible("#other-ui"), fb.text("#other-ui", &shown))
	if shown != "2 items" {
		t.Errorf("the other UI shows %q, want the 2 items", shown)
	}
	h.run(b, "remove the UI", click("#remove-client"), visible(`#versions tr.current[data-version="3"]`), visible("#gadget-ui p.muted"))
	h.wantVersions(b, "3 no UI", "2 UI "+shortSHA(t, other), "1 UI "+shortSHA(t, ui))
	h.shot(b, "16-versions")
	h.run(b, "roll back to version 1", click(`#versions tr[data-version="1"] .rollback`), visible(`#versions tr.current[data-version="1"]`))
	fb = h.frame(b)
	h.runFrame(fb, "find the first UI with the items", fb.visible(`#todos li.done[data-id="1"]`), fb.visible(`#todos li[data-id="2"]`))
}

// otherUI is a second UI for the to-do gadget: it shows how many items there are.
const otherUI = `const p = document.createElement("p");
p.id = "other-ui";
p.textContent = (await gadget.list()).length + " items";
document.body.append(p);`

// shortSHA is the first 12 hex digits of the SHA-256 of a file, as the Versions panel shows.
func shortSHA(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12]
}

// wantVersions checks the gadget page's Versions panel: each row as "NUMBER UI-CELL", newest
// first.
func (h *harness) wantVersions(tab context.Context, want ...string) {
	h.t.Helper()
	var rows []string
	h.run(tab, "read the versions", visible("#versions"), chromedp.Evaluate(
		`[...document.querySelectorAll("#versions tr[data-version]")].map((r) => r.dataset.version + " " + r.querySelector(".ui-cell").textContent)`, &rows))
	if strings.Join(rows, "|") != strings.Join(want, "|") {
		h.t.Errorf("the Versions panel reads %q, want %q", rows, want)
	}
}
