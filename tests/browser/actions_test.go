package browser

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/chromedp/chromedp"

	"atelier/sdk/guesttest"
)

// Short forms of the chromedp actions the tests use, all with CSS selectors.

func visible(sel string) chromedp.Action { return chromedp.WaitVisible(sel, chromedp.ByQuery) }
func click(sel string) chromedp.Action   { return chromedp.Click(sel, chromedp.ByQuery) }
func keys(sel, v string) chromedp.Action { return chromedp.SendKeys(sel, v, chromedp.ByQuery) }
func text(sel string, out *string) chromedp.Action {
	return chromedp.Text(sel, out, chromedp.ByQuery)
}

// The same in a gadget frame.

func (f frame) visible(sel string) chromedp.Action { return chromedp.WaitVisible(sel, f.in()...) }
func (f frame) click(sel string) chromedp.Action   { return chromedp.Click(sel, f.in()...) }
func (f frame) keys(sel, v string) chromedp.Action { return chromedp.SendKeys(sel, v, f.in()...) }
func (f frame) text(sel string, out *string) chromedp.Action {
	return chromedp.Text(sel, out, f.in()...)
}
func upload(sel string, files ...string) chromedp.Action {
	return chromedp.SetUploadFiles(sel, files, chromedp.ByQuery)
}

// toastShown waits until the shell shows a toast t for which the JS expression pred holds.
func toastShown(pred string) chromedp.Action {
	return chromedp.Poll(`[...document.querySelectorAll(".toast")].some((t) => `+pred+`)`, nil)
}

// signup signs a new user up in the tab, which shows the shell's login page.
func (h *harness) signup(tab context.Context, username string) {
	h.t.Helper()
	h.run(tab, "sign up "+username,
		visible("#signup"),
		keys(`#signup input[name="username"]`, username),
		keys(`#signup input[name="password"]`, password),
		click(`#signup button[type="submit"]`),
		visible("#user #logout"),
	)
}

// createWorkspace creates a workspace from the workspaces page and waits for it to open.
func (h *harness) createWorkspace(tab context.Context, name string) {
	h.t.Helper()
	h.run(tab, "create workspace "+name,
		visible("#create-workspace"),
		keys(`#create-workspace input[name="name"]`, name),
		click(`#create-workspace button[type="submit"]`),
		visible("#create-gadget"),
	)
}

// deploy creates a gadget from files with the workspace's deploy form (default grants).
func (h *harness) deploy(tab context.Context, name string, files ...string) {
	h.t.Helper()
	h.run(tab, "deploy "+name,
		visible("#create-gadget"),
		keys(`#create-gadget input[name="name"]`, name),
		upload(`#create-gadget input[type="file"]`, files...),
		click(`#create-gadget button[type="submit"]`),
		visible(`#gadgets tr[data-gadget="`+name+`"] a`),
		// The toast comes once the gadget (with its UI script, if any) was created.
		toastShown(`t.textContent === "deployed `+name+`"`),
	)
}

// writeTemp writes data to a file name in a new temporary folder and returns its path.
func (h *harness) writeTemp(name string, data []byte) string {
	h.t.Helper()
	path := filepath.Join(h.t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		h.t.Fatal(err)
	}
	return path
}

// openUI signs user up in tab (a fresh one), creates workspace ws and deploys gadget there: the
// to-do component with ui (a client.js source) as its UI. It opens the gadget's page and waits
// for the UI to write its report into #report, which it decodes into rep. It returns the UI's
// frame and the address of the gadget's page, read as soon as the frame showed.
func (h *harness) openUI(tab context.Context, user, ws, gadget, ui string, rep any) (frame, string) {
	h.t.Helper()
	wasm := guesttest.Path(h.t, "gadgets/todo-go")
	h.run(tab, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(tab, user)
	h.createWorkspace(tab, ws)
	h.deploy(tab, gadget, wasm, h.writeTemp("client.js", []byte(ui))) // the name the deploy form takes a UI by
	var url string
	h.run(tab, "open the "+gadget+" UI", click(`#gadgets tr[data-gadget="`+gadget+`"] a`), visible("iframe.gadget-frame"), chromedp.Location(&url))
	f := h.frame(tab)
	var raw string
	h.runFrame(f, "wait for the "+gadget+" UI's report", f.visible("#report"), f.text("#report", &raw))
	if err := json.Unmarshal([]byte(raw), rep); err != nil {
		h.t.Fatalf("the %s UI's report %q: %v", gadget, raw, err)
	}
	h.t.Logf("the %s UI's report: %s", gadget, raw)
	return f, url
}
