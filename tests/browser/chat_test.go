package browser

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"atelier/capnweb"
	"atelier/host/agent/provider"
	"atelier/tests/modelserver"
)

// The scripted agent's gadget: a to-do list as a JS gadget, and its UI.
const (
	todoServer = `export class Gadget {
  add(title) {
    const id = this.storage.get("next") ?? 1;
    const todo = { id, title, done: false };
    this.storage.put({ next: id + 1, ["todo/" + id]: todo });
    return todo;
  }
  list() {
    return [...this.storage.list({ prefix: "todo/" }).values()];
  }
}
`
	todoClient = `const list = document.createElement("ul");
list.id = "todos";
document.body.append(list);
`
)

// injected is markup in the agent's reply: the chat shows it as text.
const injected = `<img src="x" id="injected" onerror="document.title='pwned'">`

// scriptedAgent answers like an agent that builds a to-do gadget: asked for one, it creates it
// (server.js and client.js) in the chat's draft; asked to mark new items done, it edits
// server.js; asked to add an item, it runs Code Mode (dry by default); told a tool's result,
// it says what it did.
func scriptedAgent(r modelserver.Request) modelserver.Turn {
	last := r.Messages[len(r.Messages)-1]
	switch {
	case last.Role == provider.RoleTool && last.IsError:
		return modelserver.Text("The tool failed: " + last.Text)
	case last.Role == provider.RoleTool:
		return modelserver.Text("Done: the change is in the draft, " + injected + " waiting for you to accept it.")
	case strings.Contains(last.Text, "add an item"):
		code, _ := json.Marshal(map[string]string{"code": `export default async (env) => env.todo.add("from the agent")`})
		return modelserver.Tools(modelserver.Call("executeCode", string(code)))
	case strings.Contains(last.Text, "to-do gadget"):
		files, _ := json.Marshal(map[string]any{"name": "todo", "files": map[string]string{"server.js": todoServer, "client.js": todoClient}})
		return modelserver.Tools(modelserver.Call("createGadget", string(files))).WithText("I will write a to-do gadget.")
	case strings.Contains(last.Text, "done"):
		edit, _ := json.Marshal(map[string]string{"gadget": "todo", "file": "server.js", "old": "done: false", "new": "done: true"})
		return modelserver.Tools(modelserver.Call("editFile", string(edit)))
	}
	return modelserver.Text("I can build gadgets; ask me for one.")
}

// TestChatBuildsGadget: a user asks the workspace's agent (a scripted model added in the
// Models screen) for a to-do gadget; its server.js and client.js wait in the chat's draft,
// shown as a diff, and nothing runs until the user clicks Accept; then the gadget works and
// its version names the chat. A second chat's edit, rejected, leaves the gadget as it was; a
// third chat's Code Mode run waits as a dry run until the user clicks Commit (or Discard,
// which leaves the state). Markup in the agent's reply shows as text.
// It runs at a phone's width (390 px) and a desktop's (1400 px), for two users.
func TestChatBuildsGadget(t *testing.T) {
	ms := modelserver.Start(t, modelserver.OpenAI, modelserver.Forever(modelserver.Func(scriptedAgent)))
	h := newHarness(t, "--model-allow-addr", ms.Addr())
	// The second user's tab uses the server under the name localhost: another origin, so
	// another localStorage and session.
	h.chatBuildsGadget(ms, h.base, 1400, true)
	h.chatBuildsGadget(ms, strings.Replace(h.base, "127.0.0.1", "localhost", 1), 390, false)
}

// chatBuildsGadget runs the scenario in a new tab at origin, width px wide, for a new user; the
// dry run is committed, or (commit false) discarded.
func (h *harness) chatBuildsGadget(ms *modelserver.Server, origin string, width int64, commit bool) {
	t := h.t
	user := fmt.Sprintf("chatter%d", width)
	tab := h.tab()
	h.run(tab, "open the shell at "+fmt.Sprint(width), chromedp.EmulateViewport(width, 900), chromedp.Navigate(origin+"/"))
	h.signup(tab, user)
	h.createWorkspace(tab, "chat-"+user)
	var wsPage string
	h.run(tab, "read the workspace's address", chromedp.Location(&wsPage))
	wsID := wsPage[strings.Index(wsPage, "#/w/")+len("#/w/"):]

	h.run(tab, "add the scripted model", chromedp.Navigate(origin+"/#/models"), visible("#add-model"),
		keys(`#add-model input[name="name"]`, "scripted"),
		chromedp.SetValue(`#add-model select[name="provider"]`, "openai", chromedp.ByQuery),
		keys(`#add-model input[name="baseUrl"]`, ms.URL()),
		keys(`#add-model input[name="model"]`, "scripted-model"),
		keys(`#add-model input[name="apiKey"]`, "sk-test"),
		click(`#add-model button[type="submit"]`),
		visible("#models tr[data-model]"))
	var keyShown bool
	h.run(tab, "look for the key", chromedp.Evaluate(`document.body.textContent.includes("sk-test")`, &keyShown))
	if keyShown {
		t.Errorf("the Models screen shows the model's key")
	}

	h.run(tab, "ask for a to-do gadget", chromedp.Navigate(wsPage), visible("#chat-model"), visible("#gadgets"),
		chromedp.SetValue("#chat-input", "Please make me a to-do gadget", chromedp.ByQuery), click("#chat-send"),
		visible(`#draft .draft-file[data-file="server.js"]`), visible(`#draft .draft-file[data-file="client.js"]`),
		visible(`#chat-log details.tool[data-tool="createGadget"]`))
	var added []string
	var chat string
	h.run(tab, "read the draft", chromedp.Evaluate(`[...document.querySelectorAll('#draft .draft-file[data-file="server.js"] .dl.add')].map((l) => l.textContent)`, &added),
		chromedp.Evaluate(`document.querySelector(".chat-open").dataset.chat`, &chat))
	if !strings.Contains(strings.Join(added, ""), "+export class Gadget {") {
		t.Errorf("the draft's server.js diff adds %q, want the gadget's source", added)
	}
	var markup struct {
		Shown    bool
		Elements int
	}
	h.run(tab, "look for the reply's markup", chromedp.Poll(`document.querySelector("#chat-log").textContent.includes("waiting for you")`, nil),
		chromedp.Evaluate(`({Shown: document.querySelector("#chat-log").textContent.includes(`+"`"+injected+"`"+`), Elements: document.querySelectorAll("#injected").length})`, &markup))
	if !markup.Shown || markup.Elements != 0 {
		t.Errorf("the reply's markup: shown as text %v, elements made of it %d; want text and none", markup.Shown, markup.Elements)
	}
	api := h.userAPI(tab, wsID)
	if gs := api.gadgets(); len(gs) != 0 {
		t.Fatalf("before Accept the workspace has gadgets %v, want none: nothing runs until the user accepts", gs)
	}
	h.layoutFits(tab, width)
	h.shot(tab, fmt.Sprintf("20-chat-draft-%d", width))

	h.run(tab, "accept the draft", click("#draft-accept"), visible(`#gadgets tr[data-gadget="todo"]`),
		chromedp.Poll(`!document.querySelector("#draft")`, nil))
	if item := api.call("todo", "add", "milk"); item["title"] != "milk" || item["done"] != false {
		t.Errorf("add(milk) on the accepted gadget = %v", item)
	}
	g := api.gadget("todo")
	if len(g.Versions) != 1 || g.Versions[0].Chat != chat {
		t.Errorf("the accepted gadget's versions are %+v, want one that names chat %s", g.Versions, chat)
	}

	h.run(tab, "ask a second chat for an edit", click("#chat-new"), visible("#chat-model"),
		chromedp.SetValue("#chat-input", "Make new items done", chromedp.ByQuery), click("#chat-send"),
		visible(`#draft .draft-file[data-file="server.js"][data-status="modified"]`))
	var removed, put []string
	h.run(tab, "read the edit's diff", chromedp.Evaluate(`[...document.querySelectorAll("#draft .dl.del")].map((l) => l.textContent)`, &removed),
		chromedp.Evaluate(`[...document.querySelectorAll("#draft .dl.add")].map((l) => l.textContent)`, &put))
	if !strings.Contains(strings.Join(removed, ""), "done: false") || !strings.Contains(strings.Join(put, ""), "done: true") {
		t.Errorf("the edit's diff removes %q and adds %q, want done: false -> done: true", removed, put)
	}
	var chats int
	h.run(tab, "count the chats", chromedp.Evaluate(`document.querySelectorAll("#chat-list li[data-chat]").length`, &chats))
	if chats != 2 {
		t.Errorf("the chat list shows %d chats, want 2", chats)
	}
	h.shot(tab, fmt.Sprintf("21-chat-edit-%d", width))
	h.run(tab, "reject the edit", click("#draft-reject"), chromedp.Poll(`!document.querySelector("#draft")`, nil))
	if g := api.gadget("todo"); g.Current != 1 || len(g.Versions) != 1 {
		t.Errorf("after Reject the gadget is at version %d of %d, want 1 of 1", g.Current, len(g.Versions))
	}
	if item := api.call("todo", "add", "eggs"); item["done"] != false {
		t.Errorf("after Reject add(eggs) = %v, want an open item (the edit did not land)", item)
	}

	h.run(tab, "ask a third chat to add an item", click("#chat-new"), visible("#chat-model"),
		chromedp.SetValue("#chat-input", "Please add an item", chromedp.ByQuery), click("#chat-send"),
		visible(`.dry-run .dry-gadget[data-gadget="todo"] tr.added`))
	var key string
	h.run(tab, "read the dry run's diff", text(`.dry-run tr.added td:nth-child(2)`, &key))
	if key != "todo/3" {
		t.Errorf("the dry run adds key %q, want todo/3", key)
	}
	if titles := api.titles("todo"); strings.Contains(titles, "from the agent") {
		t.Errorf("before Commit the items are %s: the dry run wrote through", titles)
	}
	h.shot(tab, fmt.Sprintf("22-chat-dry-run-%d", width))
	if !commit {
		h.run(tab, "discard the dry run", click(".dry-run .dry-discard"), chromedp.Poll(`document.querySelector(".dry-run h3").textContent.includes("discarded")`, nil))
		if titles := api.titles("todo"); strings.Contains(titles, "from the agent") {
			t.Errorf("after Discard the items are %s, want no item of the agent's", titles)
		}
		return
	}
	h.run(tab, "commit the dry run", click(".dry-run .dry-commit"), chromedp.Poll(`document.querySelector(".dry-run h3").textContent.includes("committed")`, nil))
	if titles := api.titles("todo"); !strings.Contains(titles, "from the agent") {
		t.Errorf("after Commit the items are %s, want the agent's", titles)
	}
}

// layoutFits checks the workspace page at width: the header does not overflow, nor does the
// page, and the chat panel is on screen.
func (h *harness) layoutFits(tab context.Context, width int64) {
	h.t.Helper()
	var fits struct {
		Header, Page, Chat bool
	}
	h.run(tab, "measure the layout", chromedp.Evaluate(`(() => {
  const bar = document.querySelector("header.bar");
  const chat = document.querySelector("#chat-panel").getBoundingClientRect();
  return {
    Header: bar.scrollWidth <= bar.clientWidth,
    Page: document.documentElement.scrollWidth <= window.innerWidth,
    Chat: chat.width > 200 && chat.left >= 0 && chat.right <= window.innerWidth,
  };
})()`, &fits))
	if !fits.Header || !fits.Page || !fits.Chat {
		h.t.Errorf("at %d px: header fits %v, page fits %v, chat panel on screen %v", width, fits.Header, fits.Page, fits.Chat)
	}
}

// userAPI is a Cap'n Web session of the tab's user, in workspace ws.
type userAPI struct {
	h  *harness
	ws *capnweb.Promise
}

func (h *harness) userAPI(tab context.Context, ws string) userAPI {
	h.t.Helper()
	var token string
	h.run(tab, "read the session token", chromedp.Evaluate(`localStorage.getItem("atelier.token")`, &token))
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	sess, err := capnweb.DialWebSocket(ctx, h.srv.URL, capnweb.Options{})
	if err != nil {
		h.t.Fatalf("dial %s: %v", h.srv.URL, err)
	}
	h.t.Cleanup(func() { sess.Close() })
	return userAPI{h: h, ws: sess.Main().Call(context.Background(), "authenticate", token).Call(context.Background(), "openWorkspace", ws)}
}

// gadgetInfo is the part of a GadgetInfo the test reads.
type gadgetInfo struct {
	Name     string `json:"name"`
	Current  int    `json:"current"`
	Versions []struct {
		Number int    `json:"number"`
		Chat   string `json:"chat"`
	} `json:"versions"`
}

func (a userAPI) gadgets() []gadgetInfo {
	a.h.t.Helper()
	return awaitAs[[]gadgetInfo](a.h.t, a.ws.Call(context.Background(), "listGadgets"), "listGadgets")
}

func (a userAPI) gadget(name string) gadgetInfo {
	a.h.t.Helper()
	return awaitAs[gadgetInfo](a.h.t, a.ws.Call(context.Background(), "gadget", name).Call(context.Background(), "info"), name+".info")
}

func (a userAPI) call(gadget, method string, args ...any) map[string]any {
	a.h.t.Helper()
	app := a.ws.Call(context.Background(), "gadget", gadget).Call(context.Background(), "connect")
	defer app.Dispose()
	return awaitAs[map[string]any](a.h.t, app.Call(context.Background(), method, args...), gadget+"."+method)
}

// titles lists the titles of a to-do gadget's items, comma-separated.
func (a userAPI) titles(gadget string) string {
	a.h.t.Helper()
	app := a.ws.Call(context.Background(), "gadget", gadget).Call(context.Background(), "connect")
	defer app.Dispose()
	var out []string
	for _, it := range awaitAs[[]map[string]any](a.h.t, app.Call(context.Background(), "list"), gadget+".list") {
		out = append(out, fmt.Sprint(it["title"]))
	}
	return strings.Join(out, ",")
}

// awaitAs awaits p within stepTimeout, failing the test on an error.
func awaitAs[T any](t *testing.T, p *capnweb.Promise, what string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stepTimeout)
	defer cancel()
	v, err := capnweb.AwaitAs[T](ctx, p)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}
