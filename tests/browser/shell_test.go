package browser

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"atelier/sdk/guesttest"
)

// TestTodoAcrossTabs signs up, creates a workspace and deploys the to-do component with its
// UI through the shell, adds items in one tab and sees them appear live in a second tab (and a
// toggle in the second reach the first), then reloads and finds them still there.
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
}
