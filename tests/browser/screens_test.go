package browser

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"atelier/capnweb"
)

// codeSnippet is run in the Code Mode tab: it adds a note through the binding and counts.
const codeSnippet = `export default async function (env) {
  await env.notes.create({ title: "from Code Mode", tags: ["agent"] });
  console.log("created a note");
  return (await env.notes.list()).length;
}`

// TestScreens deploys the notes JS gadget (server files and client.js) through the shell, uses
// its UI, runs a Code Mode snippet against it, watches the console panel receive the gadget's
// lines, sees a note written in one tab arrive live in another's notes UI, watches the metrics
// dashboard chart calls made across several of its polls, and opens the agents screen, saving
// a screenshot of each.
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

	// Realtime: a note written in tab a appears in tab b's notes UI without a reload.
	h.run(b, "open the notes UI in tab b", chromedp.Navigate(url), visible("iframe.gadget-frame"))
	fb := h.frame(b)
	h.runFrame(fb, "see the notes in tab b", fb.visible(`#notes li[data-id="2"]`))
	h.runFrame(f, "write a third note in tab a", f.click("#new-note"), f.keys("#note-title", "Live"), f.click("#save-note"), f.visible(`#notes li[data-id="3"]`))
	h.runFrame(fb, "see it arrive live in tab b", fb.visible(`#notes li[data-id="3"]`))

	// The dashboard polls every 2 s; calls keep coming meanwhile, until the calls-per-second
	// chart has drawn a rate above zero across several samples.
	var token string
	h.run(a, "read the session token", chromedp.Evaluate(`localStorage.getItem("atelier.token")`, &token))
	stop := h.keepCalling(token, wsPage[strings.Index(wsPage, "#/w/")+len("#/w/"):], "notes", "list")
	h.run(a, "open the metrics", chromedp.Navigate(wsPage+"/metrics"), visible(`#metrics-table tr[data-gadget="notes"]`),
		chromedp.Poll(rateDrawn, nil, chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(stepTimeout)))
	var calls, instances string
	h.run(a, "read the notes gadget's calls", text(`#metrics-table tr[data-gadget="notes"] td:nth-child(2)`, &calls),
		text(`#metrics-table tr[data-gadget="notes"] td.instances`, &instances))
	if calls == "0" || calls == "" {
		t.Errorf("the metrics table counts %q calls of notes, want some", calls)
	}
	if instances != "1" {
		t.Errorf("the metrics table shows %q live instances of notes, want 1", instances)
	}
	h.shot(a, "11-metrics")
	stop()
	h.run(a, "open the agents", chromedp.Navigate(h.base+"/#/agents"), visible("#create-agent"),
		chromedp.SetValue(`#create-agent input[name="name"]`, "helper", chromedp.ByQuery), click(`#create-agent button[type="submit"]`), visible("#agent-token input"))
	var agentToken string
	h.run(a, "read the agent's token", chromedp.Value("#agent-token input", &agentToken, chromedp.ByQuery))
	if !strings.HasPrefix(agentToken, "atl_") {
		t.Errorf("the new agent's token reads %q", agentToken)
	}
	h.shot(a, "13-agents")
}

// rateDrawn is true once the dashboard's calls-per-second chart has a line of three points or
// more, one of them above zero (the chart's zero is at y = 120).
const rateDrawn = `(() => {
  const path = document.querySelector("#chart-rate svg path");
  if (!path) return false;
  const ys = [...path.getAttribute("d").matchAll(/[ML][-\d.]+,([-\d.]+)/g)].map((m) => Number(m[1]));
  return ys.length >= 3 && ys.some((y) => y < 119.5);
})()`

// keepCalling calls method of gadget in workspace ws, as the holder of token, over a session of
// its own, one call after the other until the returned stop is called (or the test ends); a
// failed call fails the test.
func (h *harness) keepCalling(token, ws, gadget, method string) (stop func()) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sess, err := capnweb.DialWebSocket(ctx, h.srv.URL, capnweb.Options{})
	if err != nil {
		h.t.Fatalf("dial %s: %v", h.srv.URL, err)
	}
	app := sess.Main().Call(ctx, "authenticate", token).Call(ctx, "openWorkspace", ws).Call(ctx, "gadget", gadget).Call(ctx, "connect")
	done := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			p := app.Call(ctx, method)
			_, err := p.Await(ctx)
			p.Dispose()
			if err != nil && ctx.Err() == nil {
				done <- fmt.Errorf("%s.%s: %w", gadget, method, err)
				return
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
		done <- nil
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				h.t.Errorf("keep calling: %v", err)
			}
			sess.Close()
		})
	}
	h.t.Cleanup(stop) // when a step fails before the test stops it
	return stop
}
