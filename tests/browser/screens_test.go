package browser

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// codeSnippet is run in the Code Mode tab: it adds a note through the binding and counts.
const codeSnippet = `export default async function (env) {
  await env.notes.create({ title: "from Code Mode", tags: ["agent"] });
  console.log("created a note");
  return (await env.notes.list()).length;
}`

// TestScreens deploys the notes JS gadget (server files and client.js) through the shell, uses
// its UI, runs a Code Mode snippet against it, watches the console panel receive the gadget's
// lines, and opens the metrics, approvals, agents and gatekeepers screens, saving a screenshot
// of each.
func TestScreens(t *testing.T) {
	h := newHarness(t)
	dir := filepath.Join(h.root, "gadgets", "notes-js")
	files, err := filepath.Glob(filepath.Join(dir, "*.[jt]s"))
	if err != nil || len(files) < 2 {
		t.Fatalf("notes gadget files in %s: %v %v", dir, files, err)
	}

	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(a, "grace")
	h.createWorkspace(a, "notebook")
	h.deploy(a, "notes", files...)
	h.run(a, "open the notes gadget", click(`#gadgets tr[data-gadget="notes"] a`), visible("iframe.gadget-frame"))
	f := h.frame(a)
	h.runFrame(f, "write a note", f.visible("#note-title"), f.keys("#note-title", "Shopping"), f.keys("#note-tags", "home, errands"),
		f.keys("#note-body", "milk, bread"), f.click("#save-note"), f.visible(`#notes li[data-id="1"]`))
	var url string
	h.run(a, "read the gadget page's URL", chromedp.Location(&url))
	h.shot(a, "08-gadget-notes")

	// A second tab follows the console while the first runs Code Mode.
	wsPage := url[:strings.Index(url, "/g/")]
	b := h.tab()
	h.run(b, "open the console", chromedp.Navigate(wsPage+"/console"), visible("#console-log"))
	h.run(a, "run a Code Mode snippet", chromedp.Navigate(wsPage+"/code"), visible("#code-run"),
		chromedp.SetValue("#code", codeSnippet, chromedp.ByQuery), click("#code-run"), visible("#code-value"))
	var value string
	h.run(a, "read the snippet's value", text("#code-value", &value))
	if strings.TrimSpace(value) != "2" {
		t.Errorf("the snippet returned %q, want 2 (the note from the UI and its own)", value)
	}
	h.shot(a, "09-code-mode")
	var lines string
	h.run(b, "see the gadget's console line", visible("#console-log .line"), text("#console-log", &lines))
	if !strings.Contains(lines, "from Code Mode") {
		t.Errorf("the console panel shows %q, want the gadget's line about the note from Code Mode", lines)
	}
	h.shot(b, "10-console")
	h.run(a, "see the snippet's note arrive in the UI", chromedp.Navigate(url), visible("iframe.gadget-frame"))
	f = h.frame(a)
	h.runFrame(f, "find both notes", f.visible(`#notes li[data-id="2"]`))

	h.run(a, "open the metrics", chromedp.Navigate(wsPage+"/metrics"), visible(`#metrics-table tr[data-gadget="notes"]`), visible("#metrics-charts svg"))
	var calls string
	h.run(a, "read the notes gadget's calls", text(`#metrics-table tr[data-gadget="notes"] td:nth-child(2)`, &calls))
	if calls == "0" || calls == "" {
		t.Errorf("the metrics table counts %q calls of notes, want some", calls)
	}
	h.shot(a, "11-metrics")
	h.run(a, "open the approvals", chromedp.Navigate(wsPage+"/approvals"), visible("#actions"))
	h.shot(a, "12-approvals")
	h.run(a, "open the agents", chromedp.Navigate(h.base+"/#/agents"), visible("#create-agent"),
		chromedp.SetValue(`#create-agent input[name="name"]`, "helper", chromedp.ByQuery), click(`#create-agent button[type="submit"]`), visible("#agent-token input"))
	var token string
	h.run(a, "read the agent's token", chromedp.Value("#agent-token input", &token, chromedp.ByQuery))
	if !strings.HasPrefix(token, "atl_") {
		t.Errorf("the new agent's token reads %q", token)
	}
	h.shot(a, "13-agents")
	h.run(a, "open the gatekeepers", chromedp.Navigate(h.base+"/#/gatekeepers"), visible("main h1"))
	h.shot(a, "14-gatekeepers")
}
