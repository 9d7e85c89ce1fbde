package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestReconnect: when the server goes away the shell shows it is offline; once the server is
// back on the same address the shell reconnects and signs in again by itself (no reload), and
// calls that need the session work. Then the user logs out and back in through the login
// form, finds the workspaces, and gets an error page (not a blank one) for a malformed address.
func TestReconnect(t *testing.T) {
	h := newHarness(t)
	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"), visible(`#conn-state[data-state="online"]`))
	h.signup(a, "ada")
	h.createWorkspace(a, "home")

	h.srv.Terminate(t)
	h.run(a, "see the shell go offline", visible(`#conn-state:not([data-state="online"])`))
	h.shot(a, "15-offline")
	h.srv = h.srv.Restart(t)
	h.run(a, "see the shell reconnect by itself", visible(`#conn-state[data-state="online"]`), visible("#user #logout"))
	h.run(a, "go to the workspaces page without a reload", chromedp.Evaluate(`location.hash = "#/"`, nil))
	h.createWorkspace(a, "work")

	h.run(a, "log out", click("#user #logout"), visible("#login"))
	h.run(a, "log in through the form", keys(`#login input[name="username"]`, "ada"), keys(`#login input[name="password"]`, password),
		click(`#login button[type="submit"]`), visible("#user #logout"), chromedp.Evaluate(`location.hash = "#/"`, nil),
		visible(`#workspaces tr[data-name="home"]`), visible(`#workspaces tr[data-name="work"]`))
	h.run(a, "open a malformed address", chromedp.Evaluate(`location.hash = "#/w/%E0%A4%A"`, nil), visible("#view-error"))
}
