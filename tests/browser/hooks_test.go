package browser

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"atelier/tests/notessvc"
)

// TestWorkshopHooks: with no hooks the Hooks tab says how a gadget registers one; a hook
// registered for the to-do gadget (bound to the person's account on the notes service) is
// listed with its event, binding, method, source, URL (which Copy puts on the clipboard) and
// creator; a note added at the service fires it (the gadget gets the event, the row counts the
// fire); Remove asks first and then takes it away, on the server too.
func TestWorkshopHooks(t *testing.T) {
	svc := notessvc.Start(t)
	const event = "note-added" // the notes gatekeeper's webhook event
	h := newHarness(t, "--gatekeeper-allow-addr", svc.Addr)
	admin := h.session(h.srv.AdminToken(t))
	gk := awaitAs[map[string]any](t, admin.Call(context.Background(), "installGatekeeper", svc.Archive(t, svc.Manifest(t, 0))), "installGatekeeper")["id"].(string)

	for _, width := range workshopWidths {
		p := h.newPerson(width, fmt.Sprintf("hooker%d", width), "inbox")
		ctx := context.Background()
		acct := awaitAs[map[string]any](t, p.api.Call(ctx, "connectAccount", gk, svc.Notebook(), map[string]any{"token": notessvc.Token}), "connectAccount")["id"].(string)
		h.deployTodo(p, "todo")
		awaitAs[any](t, p.ws.Call(ctx, "bindGatekeeper", "todo", "notes", acct), "bindGatekeeper")

		h.openTab(p, "hooks", "#no-hooks")
		var empty string
		h.run(p.tab, "read the empty state", text("#no-hooks", &empty))
		if !strings.Contains(empty, "No hooks") || !strings.Contains(empty, "atelier:host/hooks") || !strings.Contains(empty, "register(binding, event, method, params)") {
			t.Errorf("the empty Hooks tab reads %q, want how a gadget registers a hook", empty)
		}
		h.tabShot(p, "40-hooks-empty")

		hk := awaitAs[map[string]any](t, p.ws.Call(ctx, "registerHook", "todo", "notes", event, "add"), "registerHook")
		id, _ := hk["id"].(string)
		url, _ := hk["url"].(string)
		if !strings.HasPrefix(id, "hk_") || !strings.HasSuffix(url, "/hooks/"+id) {
			t.Fatalf("registerHook = %v, want an hk_ id and its /hooks/ URL", hk)
		}
		row := `#hooks tr[data-hook="` + id + `"]`
		h.run(p.tab, "see the hook", chromedp.Reload(), visible(row))
		var cells, shown string
		h.run(p.tab, "read the hook's row", text(row, &cells), text(row+" .hook-url", &shown))
		for _, w := range []string{event, "via binding notes", "todo.add", "webhook", "not yet", p.name} {
			if !strings.Contains(cells, w) {
				t.Errorf("the hook's row reads %q, want %q in it", cells, w)
			}
		}
		if shown != url {
			t.Errorf("the hook's row shows the URL %q, want %q", shown, url)
		}
		var fires string
		h.run(p.tab, "read the fires", text(row+" td.fires", &fires))
		if fires != "0" {
			t.Errorf("a new hook's fires read %q, want 0", fires)
		}

		// The service posts a new note to the hook's URL: the gadget gets the event.
		svc.AddNote(t, "from the service")
		app := p.ws.Call(ctx, "gadget", "todo").Call(ctx, "connect")
		deadline := time.Now().Add(stepTimeout)
		var todos []map[string]any
		for len(todos) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the hook did not fire within %v: %v", stepTimeout, awaitAs[[]map[string]any](t, p.ws.Call(ctx, "listHooks"), "listHooks"))
			}
			time.Sleep(100 * time.Millisecond)
			todos = awaitAs[[]map[string]any](t, app.Call(ctx, "list"), "todo.list")
		}
		if got := fmt.Sprint(todos[0]["title"]); !strings.Contains(got, "from the service") {
			t.Errorf("the gadget got the event %s, want the note added at the service", got)
		}
		h.run(p.tab, "see it fired", chromedp.Reload(), visible(row),
			chromedp.Poll(`document.querySelector('`+row+` td.fires').textContent === "1"`, nil))
		var last string
		h.run(p.tab, "read the last fire", text(row+" td.last", &last))
		if last == "" || strings.Contains(last, "not yet") {
			t.Errorf("after a fire the last-fire cell reads %q, want its time", last)
		}
		h.tabShot(p, "41-hooks")
		var copied string
		h.run(p.tab, "copy the URL", grantClipboard(), click(row+" .copy"),
			chromedp.Poll(`[...document.querySelectorAll(".toast.info")].some((t) => t.textContent.includes("copied the hook's URL"))`, nil),
			chromedp.Evaluate(`navigator.clipboard.readText()`, &copied, awaitPromise))
		if copied != url {
			t.Errorf("after Copy the clipboard holds %q, want the hook's URL %q", copied, url)
		}

		// Remove asks first: declined, the hook stays; accepted, it goes.
		d := answerDialogs(p.tab, false)
		h.run(p.tab, "decline removing the hook", click(row+" .remove"))
		d.waitAnswers(t, 1)
		// The page's answer to a declined confirm is to do nothing: wait for that to have run.
		h.run(p.tab, "let the page handle the answer", chromedp.Evaluate(`new Promise((done) => setTimeout(done, 0))`, nil, awaitPromise))
		if got := awaitAs[[]map[string]any](t, p.ws.Call(ctx, "listHooks"), "listHooks"); len(got) != 1 {
			t.Errorf("after declining Remove the workspace has hooks %v, want the one", got)
		}
		h.run(p.tab, "see the hook still listed", visible(row))
		d.set(true)
		h.run(p.tab, "remove the hook", click(row+" .remove"), visible("#no-hooks"))
		if left := awaitAs[[]any](t, p.ws.Call(ctx, "listHooks"), "listHooks"); len(left) != 0 {
			t.Errorf("after Remove the workspace has hooks %v", left)
		}
	}
}

// awaitPromise makes chromedp.Evaluate wait for the promise the expression returns.
func awaitPromise(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) }

// grantClipboard lets the page write and read the clipboard (Copy buttons, and the test
// reading what they copied).
func grantClipboard() chromedp.Action {
	return browser.GrantPermissions([]browser.PermissionType{browser.PermissionTypeClipboardReadWrite, browser.PermissionTypeClipboardSanitizedWrite})
}

// dialogs answers the confirm() dialogs of a tab's page: accept or dismiss, as set last.
type dialogs struct {
	accept   atomic.Bool
	answered changes // notified after each answer
	count    atomic.Int64
}

// answerDialogs answers every confirm() the tab's page shows from now on with accept, until
// its set changes the answer.
func answerDialogs(tab context.Context, accept bool) *dialogs {
	d := &dialogs{answered: newChanges()}
	d.accept.Store(accept)
	chromedp.ListenTarget(tab, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			// Not from the listener itself (it would wait on itself); should this fail, the
			// step waiting for the answer fails.
			go func() {
				if chromedp.Run(tab, page.HandleJavaScriptDialog(d.accept.Load())) == nil {
					d.count.Add(1)
					d.answered.notify()
				}
			}()
		}
	})
	return d
}

// set changes the answer to the next dialogs.
func (d *dialogs) set(accept bool) { d.accept.Store(accept) }

// waitAnswers waits until n dialogs were answered in all, failing the test otherwise.
func (d *dialogs) waitAnswers(t *testing.T, n int64) {
	t.Helper()
	if !d.answered.await(func() bool { return d.count.Load() >= n }) {
		t.Fatalf("%d confirmation dialogs answered, want %d", d.count.Load(), n)
	}
}
