package browser

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"atelier/sdk/guesttest"
)

// buildControls matches every control of the build and owner roles.
const buildControls = `#create-gadget, #deploy-version, #gadget-client, .rollback, #bind-gadget, .unbind, #create-share-link, #add-collaborator, [data-tab="console"], [data-tab="bindings"], [data-tab="schedules"], [data-tab="hooks"], [data-tab="audit"], #publish-blueprint, #instantiate, #import-blueprint, .export`

// deployOverSocket is run in a page: it opens its own WebSocket to /api with the page's token
// and, speaking Cap'n Web by hand, calls deploy on gadget "todo" of the workspace in the URL;
// it resolves with the server's answer to that call.
const deployOverSocket = `new Promise((resolve) => {
  const ws = new WebSocket("ws://" + location.host + "/api");
  const wsId = location.hash.split("/")[2];
  const token = localStorage.getItem("atelier.token");
  ws.onopen = () => {
    for (const m of [
      ["push", ["pipeline", 0, ["authenticate"], [token]]],
      ["push", ["pipeline", 1, ["openWorkspace"], [wsId]]],
      ["push", ["pipeline", 2, ["gadget"], ["todo"]]],
      ["push", ["pipeline", 3, ["deploy"], [{"server.js": "export class Gadget { hi() { return 1; } }"}]]],
      ["pull", 4],
    ]) ws.send(JSON.stringify(m));
  };
  ws.onmessage = (ev) => {
    const msg = JSON.parse(ev.data);
    if ((msg[0] === "resolve" || msg[0] === "reject") && msg[1] === 4) { resolve(ev.data); ws.close(); }
  };
  ws.onerror = () => resolve("websocket error");
})`

// TestUseCollaborator shares a workspace with a share link of role use: the collaborator's
// browser (another origin, so other storage) joins through the link, uses the to-do UI, sees none of
// the build controls, and is refused with FORBIDDEN when it calls deploy over the socket itself.
func TestUseCollaborator(t *testing.T) {
	h := newHarness(t)
	wasm := guesttest.Path(t, "gadgets/todo-go")
	ui := filepath.Join(h.root, "gadgets", "todo-jsgadget", "client.js")

	owner := h.tab()
	h.run(owner, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(owner, "olga")
	h.createWorkspace(owner, "shared")
	h.deploy(owner, "todo", wasm, ui)
	h.run(owner, "open the sharing tab", click(`[data-tab="sharing"]`), visible("#create-share-link"))
	var link string
	h.run(owner, "create a share link for use", click(`#create-share-link button[type="submit"]`), visible("#share-link input"),
		chromedp.Value("#share-link input", &link, chromedp.ByQuery))
	h.shot(owner, "05-sharing")
	if !strings.HasPrefix(link, h.base+"/#/join/") {
		t.Fatalf("share link %q does not point at the shell", link)
	}

	// Bob's browser: the same server under the name localhost is another origin, so his tab
	// has storage (the session token) of its own. (Chromium refuses new browser contexts
	// created over the DevTools protocol in headless mode here: "no browser is open".)
	other := strings.Replace(h.base, "127.0.0.1", "localhost", 1)
	bob := h.tab()
	h.run(bob, "open the shell as bob", chromedp.Navigate(other+"/"))
	h.signup(bob, "bob")
	var role string
	h.run(bob, "join through the link", chromedp.Navigate(strings.Replace(link, h.base, other, 1)), visible("#ws-role"), visible(`#gadgets tr[data-gadget="todo"] a`), text("#ws-role", &role))
	if role != "use" {
		t.Fatalf("bob's role after joining = %q, want use", role)
	}
	h.noBuildControls(bob, "workspace page")
	h.run(bob, "open the todo UI", click(`#gadgets tr[data-gadget="todo"] a`), visible("iframe.gadget-frame"), visible("#call"))
	f := h.frame(bob)
	h.runFrame(f, "add an item as a use collaborator", f.visible("#new-todo"), f.keys("#new-todo", "from bob\n"), f.visible(`#todos li[data-id="1"]`))
	h.noBuildControls(bob, "gadget page")
	h.shot(bob, "06-use-collaborator")

	var answer string
	h.run(bob, "call deploy over the socket", chromedp.Evaluate(deployOverSocket, &answer, func(p *runtime.EvaluateParams) *runtime.EvaluateParams {
		return p.WithAwaitPromise(true)
	}))
	if !strings.HasPrefix(answer, `["reject",4`) || !strings.Contains(answer, "FORBIDDEN") {
		t.Fatalf("deploy by a use collaborator over the socket answered %s, want a FORBIDDEN rejection", answer)
	}
}

// noBuildControls fails the test when the tab shows any control of the build role.
func (h *harness) noBuildControls(tab context.Context, where string) {
	h.t.Helper()
	var found []string
	h.run(tab, "look for build controls on the "+where, chromedp.Evaluate(
		fmt.Sprintf(`[...document.querySelectorAll(%q)].map((e) => e.id || e.className || e.tagName)`, buildControls), &found))
	if len(found) > 0 {
		h.t.Errorf("a use collaborator sees build controls on the %s: %v", where, found)
	}
}
