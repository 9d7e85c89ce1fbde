package browser

import (
	"atelier/host/gatekeeper/mcpgk"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/chromedp"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
)

// workshopWidths are the window widths every workshop screen is tried at: a desktop's and a
// phone's.
var workshopWidths = []int64{1400, 390}

// person is a user signed up in a tab of their own, width px wide, with a workspace.
type person struct {
	name   string
	tab    context.Context
	origin string // the tab's origin: one per width, so that each person has storage of their own
	width  int64
	wsID   string
	wsPage string // the workspace's address in the shell
	api    *capnweb.Promise
	ws     *capnweb.Promise // the same person's workspace over a session of the test's own
}

// newPerson opens a tab width px wide, signs up user there and creates workspace ws through
// the shell.
func (h *harness) newPerson(width int64, user, ws string) *person {
	h.t.Helper()
	origin := h.base
	if width < 1000 {
		origin = strings.Replace(h.base, "127.0.0.1", "localhost", 1)
	}
	tab := h.tab()
	h.run(tab, fmt.Sprintf("open the shell at %d px", width), chromedp.EmulateViewport(width, 900), chromedp.Navigate(origin+"/"))
	h.signup(tab, user)
	h.createWorkspace(tab, ws)
	p := &person{name: user, tab: tab, origin: origin, width: width}
	h.run(tab, "read the workspace's address", chromedp.Location(&p.wsPage))
	p.wsID = p.wsPage[strings.Index(p.wsPage, "#/w/")+len("#/w/"):]
	var token string
	h.run(tab, "read the session token", chromedp.Evaluate(`localStorage.getItem("atelier.token")`, &token))
	p.api = h.session(token)
	p.ws = p.api.Call(context.Background(), "openWorkspace", p.wsID)
	return p
}

// session is the authenticated API of token over a Cap'n Web session of the test's own.
func (h *harness) session(token string) *capnweb.Promise {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	sess, err := capnweb.DialWebSocket(ctx, h.srv.URL, capnweb.Options{})
	if err != nil {
		h.t.Fatalf("dial %s: %v", h.srv.URL, err)
	}
	h.t.Cleanup(func() { sess.Close() })
	return sess.Main().Call(context.Background(), "authenticate", token)
}

// tabShot checks that the page fits the tab's width (nothing to scroll sideways) and saves a
// screenshot named name-WIDTH.
func (h *harness) tabShot(p *person, name string) {
	h.t.Helper()
	var fits bool
	h.run(p.tab, "measure "+name, chromedp.Evaluate(`document.documentElement.scrollWidth <= window.innerWidth`, &fits))
	if !fits {
		h.t.Errorf("%s at %d px: the page is wider than the window", name, p.width)
	}
	h.shot(p.tab, fmt.Sprintf("%s-%d", name, p.width))
}

// openTab opens one of the workspace's tabs (from another of them) by its link in the tab bar
// and waits for sel.
func (h *harness) openTab(p *person, tab, sel string) {
	h.t.Helper()
	h.run(p.tab, "open the "+tab+" tab", visible(`nav.tabs [data-tab="`+tab+`"]`), click(`nav.tabs [data-tab="`+tab+`"]`),
		visible(`#tab-`+tab), visible(sel))
}

// deployTodo deploys the to-do JS gadget (add, list) as name from the workspace's gadgets tab.
func (h *harness) deployTodo(p *person, name string) {
	h.t.Helper()
	h.deploy(p.tab, name, h.writeTemp("server.js", []byte(todoServer)))
}

// waitAction waits until the workspace's action id is in state (and auto-approved or not, as
// auto says), failing the test with what it saw otherwise.
func (h *harness) waitAction(ws *capnweb.Promise, id float64, state string, auto bool, what string) {
	h.t.Helper()
	var seen []map[string]any
	deadline := time.Now().Add(stepTimeout)
	for time.Now().Before(deadline) {
		seen = awaitAs[[]map[string]any](h.t, ws.Call(context.Background(), "listActions"), "listActions")
		for _, a := range seen {
			if a["id"] == id && a["state"] == state && a["autoApproved"] == auto {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.t.Errorf("%s: action %v did not become %s (auto-approved %v); the actions are %v", what, id, state, auto, seen)
}

// TestWorkshopAutoApprove: a person adds an auto-approve rule on the Auto-approve tab, which
// applies the matching action already waiting and then applies a new one without anyone
// deciding, while an action of another kind still waits; removing the rule makes the next one
// wait again.
func TestWorkshopAutoApprove(t *testing.T) {
	h := newHarness(t)
	archive, err := gatekeeper.Pack(gatekeeper.Manifest{
		Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress:         gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{"127.0.0.1:9"}},
		Credentials:    []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources:      []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: probeNotebooks + ":notebook", Egress: []string{"http://127.0.0.1:9/api/notebooks/:notebook"}}},
		AutoApprovable: []string{"tidy"},
	}, guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	admin := h.session(h.srv.AdminToken(t))
	gk := awaitAs[map[string]any](t, admin.Call(context.Background(), "installGatekeeper", archive), "installGatekeeper")["id"].(string)

	for _, width := range workshopWidths {
		p := h.newPerson(width, fmt.Sprintf("rules%d", width), "office")
		ctx := context.Background()
		acct := awaitAs[map[string]any](t, p.api.Call(ctx, "connectAccount", gk, probeNotebooks+"work", map[string]any{"token": "secret"}), "connectAccount")["id"].(string)
		h.deploy(p.tab, "caller", h.writeTemp("server.js", []byte(callerJS)))
		awaitAs[any](t, p.ws.Call(ctx, "bindGatekeeper", "caller", "probe", acct), "bindGatekeeper")
		app := p.ws.Call(ctx, "gadget", "caller").Call(ctx, "connect")
		submit := func(kind string) float64 {
			return awaitAs[float64](t, app.Call(ctx, "call", "probe", "submit", []any{kind, true}), "submit "+kind)
		}
		waiting := submit("tidy")
		h.waitAction(p.ws, waiting, "pending", false, "before the rule")

		h.openTab(p, "rules", "#add-rule")
		h.tabShot(p, "30-rules-empty")
		h.run(p.tab, "add the rule", chromedp.SetValue(`#add-rule select[name="gatekeeper"]`, gk, chromedp.ByQuery),
			chromedp.SetValue(`#add-rule select[name="kind"]`, "tidy", chromedp.ByQuery), click(`#add-rule button[type="submit"]`),
			visible(`#rules tr[data-kind="tidy"][data-gatekeeper="`+gk+`"]`))
		var row string
		h.run(p.tab, "read the rule", text(`#rules tr[data-kind="tidy"]`, &row))
		if !strings.Contains(row, "probe") {
			t.Errorf("the rule's row reads %q, want the gatekeeper's name", row)
		}
		h.tabShot(p, "31-rules")
		h.waitAction(p.ws, waiting, "applied", true, "the tidy action waiting when the rule was added")
		h.waitAction(p.ws, submit("tidy"), "applied", true, "a tidy action submitted under the rule")
		// An action of another kind waits for a person; the person rejects it.
		purge := submit("purge")
		h.waitAction(p.ws, purge, "pending", false, "a purge action under the tidy rule")
		awaitAs[any](t, p.ws.Call(ctx, "rejectAction", purge), "rejectAction")

		h.run(p.tab, "remove the rule", click(`#rules tr[data-kind="tidy"] .remove`), visible("#no-rules"))
		h.waitAction(p.ws, submit("tidy"), "pending", false, "a tidy action after the rule was removed")

		// The MCP gatekeeper's kinds are its servers' tools: the person types one.
		h.run(p.tab, "add a rule for an MCP tool", chromedp.SetValue(`#add-rule select[name="gatekeeper"]`, mcpgk.ID, chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector('#add-rule select[name="gatekeeper"]').dispatchEvent(new Event("change"))`, nil),
			keys(`#add-rule input[name="kind-text"]`, "write_file"), click(`#add-rule button[type="submit"]`),
			visible(`#rules tr[data-kind="write_file"][data-gatekeeper="`+mcpgk.ID+`"]`))
		h.run(p.tab, "remove the MCP rule", click(`#rules tr[data-kind="write_file"] .remove`), visible("#no-rules"))
	}
}

// TestWorkshopBlueprints: a person publishes a gadget as a blueprint on the Blueprints tab,
// makes a new gadget from it (which appears in the workspace and works), exports the blueprint
// as a downloaded file and imports that file again, and makes a gadget from the import.
func TestWorkshopBlueprints(t *testing.T) {
	h := newHarness(t)
	for _, width := range workshopWidths {
		p := h.newPerson(width, fmt.Sprintf("maker%d", width), "studio")
		ctx := context.Background()
		h.deployTodo(p, "todo")
		h.openTab(p, "blueprints", "#publish-blueprint")
		h.run(p.tab, "publish the gadget", keys(`#publish-blueprint input[name="title"]`, "To-do list"),
			keys(`#publish-blueprint input[name="description"]`, "items to do"), click(`#publish-blueprint button[type="submit"]`),
			visible(`#blueprints tr[data-title="To-do list"]`))
		var published string
		h.run(p.tab, "read the blueprint's id", chromedp.Evaluate(`document.querySelector('#blueprints tr[data-title="To-do list"]').dataset.blueprint`, &published))
		h.tabShot(p, "32-blueprints")

		h.run(p.tab, "make a gadget from the blueprint", keys(`#instantiate input[name="name"]`, "todo2"), click(`#instantiate button[type="submit"]`),
			visible(`#gadgets tr[data-gadget="todo2"]`))
		item := awaitAs[map[string]any](t, p.ws.Call(ctx, "gadget", "todo2").Call(ctx, "connect").Call(ctx, "add", "from the blueprint"), "todo2.add")
		if item["title"] != "from the blueprint" {
			t.Errorf("add on the gadget made from the blueprint = %v", item)
		}

		dir := t.TempDir()
		h.openTab(p, "blueprints", `#blueprints tr[data-title="To-do list"] .export`)
		h.run(p.tab, "export the blueprint", browser.SetDownloadBehavior(browser.SetDownloadBehaviorBehaviorAllow).WithDownloadPath(dir),
			click(`#blueprints tr[data-title="To-do list"] .export`))
		file := filepath.Join(dir, "to-do-list.blueprint.tar.gz")
		data := waitFile(t, file)
		if len(data) < 2 || data[0] != 0x1f || data[1] != 0x8b {
			t.Fatalf("the exported blueprint (%d bytes) is not a gzip file", len(data))
		}

		h.run(p.tab, "import the exported file", upload("#import-file", file), click(`#import-blueprint button[type="submit"]`),
			chromedp.Poll(`document.querySelectorAll('#blueprints tr[data-title="To-do list"]').length === 2`, nil))
		var ids []string
		h.run(p.tab, "read the blueprints", chromedp.Evaluate(`[...document.querySelectorAll("#blueprints tr[data-blueprint]")].map((r) => r.dataset.blueprint)`, &ids))
		if len(ids) != 2 || ids[0] == ids[1] {
			t.Fatalf("after the import the blueprints are %v, want the published one and the imported one", ids)
		}
		h.tabShot(p, "33-blueprints-imported")
		imported := ids[0]
		if imported == published {
			imported = ids[1]
		}
		h.run(p.tab, "make a gadget from the imported blueprint", chromedp.SetValue(`#instantiate select[name="blueprint"]`, imported, chromedp.ByQuery),
			keys(`#instantiate input[name="name"]`, "todo3"), click(`#instantiate button[type="submit"]`), visible(`#gadgets tr[data-gadget="todo3"]`))
		item = awaitAs[map[string]any](t, p.ws.Call(ctx, "gadget", "todo3").Call(ctx, "connect").Call(ctx, "add", "imported"), "todo3.add")
		if item["title"] != "imported" || item["id"] != float64(1) {
			t.Errorf("add on the gadget made from the imported blueprint = %v, want item 1 (a blueprint carries no data)", item)
		}
	}
}

// waitFile waits until a download has written path (Chromium writes NAME.crdownload first and
// renames it when done) and returns its bytes.
func waitFile(t *testing.T, path string) []byte {
	t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		data, err := os.ReadFile(path)
		if err == nil {
			return data
		}
		if time.Now().After(deadline) {
			entries, _ := os.ReadDir(filepath.Dir(path))
			t.Fatalf("the download %s did not arrive within %v (the folder holds %v): %v", path, stepTimeout, entries, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestWorkshopSchedules: a person schedules a gadget method every second on the Schedules tab;
// the schedule is listed, runs (its calls reach the gadget and its run count shows), and Cancel
// removes it.
func TestWorkshopSchedules(t *testing.T) {
	h := newHarness(t)
	for _, width := range workshopWidths {
		p := h.newPerson(width, fmt.Sprintf("planner%d", width), "plans")
		ctx := context.Background()
		h.deployTodo(p, "todo")
		h.openTab(p, "schedules", "#add-schedule")
		h.run(p.tab, "add a schedule", keys(`#add-schedule input[name="method"]`, "add"),
			chromedp.SetValue(`#add-schedule input[name="args"]`, `["tick"]`, chromedp.ByQuery),
			chromedp.SetValue(`#add-schedule input[name="everySeconds"]`, "1", chromedp.ByQuery),
			click(`#add-schedule button[type="submit"]`), visible(`#schedules tr[data-gadget="todo"][data-method="add"]`))
		var row string
		h.run(p.tab, "read the schedule", text(`#schedules tr[data-method="add"]`, &row))
		if !strings.Contains(row, `todo.add("tick")`) || !strings.Contains(row, "every 1 s") || !strings.Contains(row, p.name) {
			t.Errorf("the schedule's row reads %q, want the call, its period and its creator", row)
		}
		app := p.ws.Call(ctx, "gadget", "todo").Call(ctx, "connect")
		deadline := time.Now().Add(stepTimeout)
		for len(awaitAs[[]map[string]any](t, app.Call(ctx, "list"), "todo.list")) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("the schedule did not run within %v", stepTimeout)
			}
			time.Sleep(100 * time.Millisecond)
		}
		h.run(p.tab, "see it ran", chromedp.Reload(), visible(`#schedules tr[data-method="add"]`),
			chromedp.Poll(`document.querySelector('#schedules tr[data-method="add"] td:nth-child(4)').textContent !== "0"`, nil))
		h.tabShot(p, "34-schedules")
		h.run(p.tab, "cancel the schedule", click(`#schedules tr[data-method="add"] .cancel`), visible("#no-schedules"))
		if left := awaitAs[[]any](t, p.ws.Call(ctx, "listSchedules"), "listSchedules"); len(left) != 0 {
			t.Errorf("after Cancel the workspace has schedules %v", left)
		}

		// A one-shot at a local time: the server gets that instant.
		h.run(p.tab, "add a one-shot schedule", keys(`#add-schedule input[name="method"]`, "list"),
			chromedp.Evaluate(`(() => {
  const kind = document.querySelector('#add-schedule select[name="kind"]');
  kind.value = "at";
  kind.dispatchEvent(new Event("change"));
})()`, nil),
			visible(`#add-schedule input[name="at"]`),
			chromedp.Evaluate(`document.querySelector('#add-schedule input[name="at"]').value = "2030-01-02T09:30:00"`, nil),
			click(`#add-schedule button[type="submit"]`), visible(`#schedules tr[data-method="list"]`))
		var want string
		h.run(p.tab, "read the instant", chromedp.Evaluate(`new Date("2030-01-02T09:30:00").toISOString()`, &want))
		once := awaitAs[[]map[string]any](t, p.ws.Call(ctx, "listSchedules"), "listSchedules")
		if len(once) != 1 || once[0]["everyMs"] != nil || !sameInstant(t, once[0]["next"], want) {
			t.Errorf("the one-shot schedule is %v, want one run at %s", once, want)
		}
		h.run(p.tab, "cancel the one-shot", click(`#schedules tr[data-method="list"] .cancel`), visible("#no-schedules"))
	}
}

// sameInstant reports whether got (a time from the API) is the instant of want (RFC 3339).
func sameInstant(t *testing.T, got any, want string) bool {
	t.Helper()
	w, err := time.Parse(time.RFC3339, want)
	if err != nil {
		t.Fatalf("parse %q: %v", want, err)
	}
	switch g := got.(type) {
	case time.Time:
		return g.Equal(w)
	case string:
		parsed, err := time.Parse(time.RFC3339, g)
		return err == nil && parsed.Equal(w)
	}
	return false
}

// TestWorkshopAuditLog: the Audit log tab shows the calls just made (newest first, a page of
// 50), loads older lines on demand (the gadget's creation, made before them), and asks the
// server for the lines of an action or an actor.
func TestWorkshopAuditLog(t *testing.T) {
	h := newHarness(t)
	for _, width := range workshopWidths {
		p := h.newPerson(width, fmt.Sprintf("auditor%d", width), "ledger")
		ctx := context.Background()
		h.deployTodo(p, "todo")
		const renames = 55 // more than a page
		for i := 1; i <= renames; i++ {
			awaitAs[any](t, p.ws.Call(ctx, "rename", fmt.Sprintf("ledger-%d", i)), "rename")
		}
		h.openTab(p, "audit", "#audit")
		var first struct {
			Rows    int
			Newest  string
			Created bool
		}
		const read = `({Rows: document.querySelectorAll("#audit tr[data-seq]").length,
  Newest: document.querySelector("#audit tr[data-seq]").textContent,
  Created: !!document.querySelector('#audit tr[data-action="gadget.create"]')})`
		h.run(p.tab, "read the first page", chromedp.Evaluate(read, &first))
		if first.Rows != 50 || !strings.Contains(first.Newest, "workspace.rename") || !strings.Contains(first.Newest, "ledger-55") ||
			!strings.Contains(first.Newest, p.name) || first.Created {
			t.Errorf("the first page has %d lines, the newest %q, the gadget's creation shown %v; want 50, the last rename by %s first, no creation",
				first.Rows, first.Newest, first.Created, p.name)
		}
		h.tabShot(p, "35-audit")
		h.run(p.tab, "load older lines", click("#audit-older"), visible(`#audit tr[data-action="gadget.create"]`))
		var older bool
		h.run(p.tab, "look for more", chromedp.Evaluate(`!document.querySelector("#audit-older").hidden`, &older))
		if older {
			t.Errorf("with every line loaded the Older lines button still shows")
		}
		// Who and what are the server's filters: a fresh first page of the matching lines.
		var actions []string
		h.run(p.tab, "filter by action", chromedp.SetValue("#audit-action", "gadget.", chromedp.ByQuery),
			chromedp.Evaluate(`document.querySelector("#audit-action").dispatchEvent(new Event("change"))`, nil),
			chromedp.WaitNotPresent(`#audit tr[data-action="workspace.rename"]`, chromedp.ByQuery),
			chromedp.Evaluate(`[...document.querySelectorAll("#audit tr[data-seq]")].map((r) => r.dataset.action + " " + r.children[4].textContent)`, &actions))
		if strings.Join(actions, "|") != "gadget.create todo" {
			t.Errorf("filtered by gadget. the log shows %q, want the one creation of todo", actions)
		}
		h.tabShot(p, "36-audit-filtered")
		h.run(p.tab, "filter by who", chromedp.Evaluate(`document.querySelector("#audit-action").value = "";
document.querySelector("#audit-actor").value = "nobody";
document.querySelector("#audit-actor").dispatchEvent(new Event("change"))`, nil),
			visible("#no-audit"))
	}
}

// TestWorkshopChangePassword: from the account page (the user's name in the header) a person
// sees inline errors for a mismatched confirmation and a wrong current password, changes the
// password, and then signs in with the new one while the old one is refused.
func TestWorkshopChangePassword(t *testing.T) {
	h := newHarness(t)
	const newPassword = "a much newer passphrase"
	for _, width := range workshopWidths {
		p := h.newPerson(width, fmt.Sprintf("keeper%d", width), "keys")
		fill := func(old, new, confirm string) chromedp.Tasks {
			return chromedp.Tasks{
				chromedp.SetValue(`#change-password input[name="old"]`, old, chromedp.ByQuery),
				chromedp.SetValue(`#change-password input[name="new"]`, new, chromedp.ByQuery),
				chromedp.SetValue(`#change-password input[name="confirm"]`, confirm, chromedp.ByQuery),
				click(`#change-password button[type="submit"]`),
			}
		}
		h.run(p.tab, "open the account page", click("#account-link"), visible("#change-password"))
		var msg string
		h.run(p.tab, "confirm another password", fill(password, newPassword, newPassword+"!"), visible("#password-message.error"), text("#password-message", &msg))
		if !strings.Contains(msg, "differ") {
			t.Errorf("a mismatched confirmation shows %q", msg)
		}
		h.run(p.tab, "give a wrong current password", chromedp.Evaluate(`document.querySelector("#password-message").hidden = true`, nil),
			fill("not my password", newPassword, newPassword), visible("#password-message.error"), text("#password-message", &msg))
		if !strings.Contains(msg, "old password is wrong") {
			t.Errorf("a wrong current password shows %q", msg)
		}
		h.tabShot(p, "37-password-error")
		h.run(p.tab, "change the password", fill(password, newPassword, newPassword), visible("#password-message.ok"))
		h.tabShot(p, "38-password-changed")

		login := func(pw string) chromedp.Tasks {
			return chromedp.Tasks{
				visible("#login"),
				chromedp.SetValue(`#login input[name="username"]`, p.name, chromedp.ByQuery),
				chromedp.SetValue(`#login input[name="password"]`, pw, chromedp.ByQuery),
				click(`#login button[type="submit"]`),
			}
		}
		h.run(p.tab, "log out", click("#logout"), visible("#login"))
		h.run(p.tab, "log in with the old password", login(password), toastShown(`t.textContent.includes("wrong username or password")`))
		var in int
		h.run(p.tab, "look for the session", chromedp.Evaluate(`document.querySelectorAll("#user #logout").length`, &in))
		if in != 0 {
			t.Fatalf("the old password signed %s in", p.name)
		}
		h.run(p.tab, "log in with the new password", login(newPassword), visible("#user #logout"))
	}
}

// TestWorkshopRoles: the workshop's screens follow the role. A collaborator with the use role
// (at a phone's width) sees the Blueprints and Auto-approve tabs but none of the build
// controls (publish, instantiate, import, export) nor the Schedules and Audit log tabs; an agent
// with the build role has Schedules and Audit log but no Auto-approve tab (agents have no rules).
func TestWorkshopRoles(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	owner := h.newPerson(1400, "olive", "shop")
	h.deployTodo(owner, "todo")
	awaitAs[string](t, owner.ws.Call(ctx, "publishBlueprint", "todo", "To-do list", ""), "publishBlueprint")

	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	sess, err := capnweb.DialWebSocket(sctx, h.srv.URL, capnweb.Options{})
	if err != nil {
		t.Fatalf("dial %s: %v", h.srv.URL, err)
	}
	t.Cleanup(func() { sess.Close() })
	uma := awaitAs[string](t, sess.Main().Call(ctx, "signup", "uma", password), "signup uma")
	awaitAs[any](t, owner.ws.Call(ctx, "addCollaborator", "uma", "use"), "addCollaborator")
	scope := map[string]any{"workspaces": map[string]any{owner.wsID: map[string]any{"role": "build", "gadgets": []any{"*"}}}}
	agent := awaitAs[map[string]any](t, owner.api.Call(ctx, "createAgent", "helper", scope), "createAgent")["token"].(string)

	other := strings.Replace(h.base, "127.0.0.1", "localhost", 1)
	tab := h.tab()
	signIn := func(token string) chromedp.Tasks {
		return chromedp.Tasks{
			chromedp.Evaluate(`localStorage.setItem("atelier.token", `+fmt.Sprintf("%q", token)+`)`, nil),
			chromedp.Navigate(other + "/#/w/" + owner.wsID + "/blueprints"), chromedp.Reload(), visible("#tab-blueprints"),
		}
	}
	var tabs []string
	readTabs := chromedp.Evaluate(`[...document.querySelectorAll("nav.tabs [data-tab]")].map((a) => a.dataset.tab)`, &tabs)
	h.run(tab, "open the shell as uma", chromedp.EmulateViewport(390, 900), chromedp.Navigate(other+"/"), visible("#login"),
		signIn(uma), visible("#no-blueprints"), readTabs)
	if got := strings.Join(tabs, " "); !strings.Contains(got, "rules") || !strings.Contains(got, "blueprints") {
		t.Errorf("a use collaborator's tabs are %q, want Auto-approve and Blueprints among them", got)
	}
	h.noBuildControls(tab, "blueprints tab")
	h.shot(tab, "39-blueprints-use-390")

	h.run(tab, "sign in as the agent", signIn(agent), visible("#blueprints"), readTabs)
	if got := " " + strings.Join(tabs, " ") + " "; strings.Contains(got, " rules ") || !strings.Contains(got, " schedules ") || !strings.Contains(got, " audit ") {
		t.Errorf("a build agent's tabs are %q, want Schedules and Audit log and no Auto-approve", got)
	}
}
