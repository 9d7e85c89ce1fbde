package browser

import (
	"testing"

	"github.com/chromedp/chromedp"
)

// TestReconnect: when the server goes away the shell shows it is offline; once the server is
// back on the same address the shell reconnects and signs in again by itself (no reload), and
// calls that need the session work.
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
}
