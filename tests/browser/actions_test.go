package browser

import (
	"context"

	"github.com/chromedp/chromedp"
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
		// The toast comes after the UI script was set too.
		chromedp.Poll(`[...document.querySelectorAll(".toast")].some((t) => t.textContent === "deployed `+name+`")`, nil),
	)
}
