package browser

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
)

// TestObserverRequirementsFlow: the owner requires use collaborators, on the Sharing tab, to
// read a gadget's notebook binding themselves. At a desktop's and a phone's width a use
// collaborator opening the workspace gets a panel instead of its gadgets: one connects an
// account for the notebook in the panel, the other (with an account of another notebook,
// which does not count) connects one elsewhere and picks it; then the workspace opens.
// Disconnecting the account brings the panel back.
func TestObserverRequirementsFlow(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	archive, err := gatekeeper.Pack(gatekeeper.Manifest{
		Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress:      gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{"127.0.0.1:9"}},
		Credentials: []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources:   []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: probeNotebooks + ":notebook", Egress: []string{"http://127.0.0.1:9/api/notebooks/:notebook"}}},
	}, guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	admin := h.session(h.srv.AdminToken(t))
	gk := awaitAs[map[string]any](t, admin.Call(ctx, "installGatekeeper", archive), "installGatekeeper")["id"].(string)
	work := probeNotebooks + "work"

	// The owner binds a gadget to her notebook account and requires it on the Sharing tab.
	owner := h.newPerson(1400, "olga", "shared")
	acct := awaitAs[map[string]any](t, owner.api.Call(ctx, "connectAccount", gk, work, map[string]any{"token": "olgas"}), "connectAccount")["id"].(string)
	h.deploy(owner.tab, "caller", h.writeTemp("server.js", []byte(callerJS)))
	awaitAs[any](t, owner.ws.Call(ctx, "bindGatekeeper", "caller", "notes", acct), "bindGatekeeper")
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	sess, err := capnweb.DialWebSocket(sctx, h.srv.URL, capnweb.Options{})
	if err != nil {
		t.Fatalf("dial %s: %v", h.srv.URL, err)
	}
	t.Cleanup(func() { sess.Close() })
	tokens := map[string]string{}
	for _, name := range []string{"cleo", "cora"} {
		tokens[name] = awaitAs[string](t, sess.Main().Call(ctx, "signup", name, password), "signup "+name)
		awaitAs[any](t, owner.ws.Call(ctx, "addCollaborator", name, "use"), "addCollaborator "+name)
	}
	h.openTab(owner, "sharing", "#observer-use")
	h.run(owner.tab, "require caller.notes of use", click(`#observer-use input[data-binding="caller.notes"]`),
		click(`#observer-use button[type="submit"]`), toastShown(`t.textContent.includes("must read caller.notes themselves")`))
	h.tabShot(owner, "40-observer-settings")
	reqs := awaitAs[[]map[string]any](t, owner.ws.Call(ctx, "listObserverRequirements", "use"), "listObserverRequirements")
	if len(reqs) != 1 || reqs[0]["binding"] != "caller.notes" || reqs[0]["resource"] != work {
		t.Fatalf("requirements after saving the Sharing tab = %v", reqs)
	}

	other := strings.Replace(h.base, "127.0.0.1", "localhost", 1)
	tab := h.tab()
	h.run(tab, "open the shell", chromedp.Navigate(other+"/"), visible("#login"))
	wsPage := other + "/#/w/" + owner.wsID
	req := `#observer-panel .requirement[data-binding="caller.notes"]`
	for i, width := range workshopWidths {
		name := []string{"cleo", "cora"}[i]
		p := &person{name: name, tab: tab, origin: other, width: width}
		api := h.session(tokens[name])
		h.run(tab, fmt.Sprintf("open the workspace as %s at %d px", name, width), chromedp.EmulateViewport(width, 900),
			chromedp.Evaluate(`localStorage.setItem("atelier.token", `+fmt.Sprintf("%q", tokens[name])+`)`, nil),
			chromedp.Navigate(wsPage), chromedp.Reload(), visible(req))
		var panel string
		var gadgets int
		h.run(tab, "read the panel", text("#observer-panel", &panel), chromedp.Evaluate(`document.querySelectorAll("#tab-gadgets, nav.tabs").length`, &gadgets))
		if !strings.Contains(panel, "olga shows this workspace only to collaborators who can read its data themselves") ||
			!strings.Contains(panel, work) || !strings.Contains(panel, "You have no account for it yet") || gadgets != 0 {
			t.Fatalf("%s's panel reads %q (%d workspace elements shown), want the notebook to read and no gadgets", name, panel, gadgets)
		}
		h.tabShot(p, fmt.Sprintf("41-observer-panel-%s", name))

		if name == "cleo" { // connects the account in the panel
			h.run(tab, "connect an account in the panel", keys(req+` input[name="cred:token"]`, "cleos"),
				click(req+` button[type="submit"]`), visible(`#gadgets tr[data-gadget="caller"]`))
		} else { // an account of another notebook does not count; one for the notebook is picked
			awaitAs[any](t, api.Call(ctx, "connectAccount", gk, probeNotebooks+"home", map[string]any{"token": "x"}), "connect home")
			h.run(tab, "reload with an account of another notebook", chromedp.Reload(), visible(req+" form.connect-for-requirement"))
			mine := awaitAs[map[string]any](t, api.Call(ctx, "connectAccount", gk, work, map[string]any{"token": "coras"}), "connect work")["id"].(string)
			var picked string
			h.run(tab, "reload with an account for the notebook", chromedp.Reload(), visible(req+" form.pick-account"),
				chromedp.Value(req+` select[name="account"]`, &picked, chromedp.ByQuery))
			if picked != mine {
				t.Errorf("the panel offers %q, want the account for the notebook %s", picked, mine)
			}
			h.tabShot(p, "42-observer-pick")
			h.run(tab, "pick the account", click(req+` form.pick-account button[type="submit"]`), visible(`#gadgets tr[data-gadget="caller"]`))
		}
		h.tabShot(p, fmt.Sprintf("43-observer-open-%s", name))
		got := awaitAs[[]map[string]any](t, api.Call(ctx, "openWorkspace", owner.wsID).Call(ctx, "listObserverRequirements", ""), "listObserverRequirements")
		if len(got) != 1 || got[0]["satisfied"] != true {
			t.Fatalf("%s's requirements after the panel = %v", name, got)
		}

		// Disconnecting the account locks the workspace again.
		awaitAs[any](t, api.Call(ctx, "disconnectAccount", got[0]["account"]), "disconnectAccount")
		h.run(tab, "open the workspace after disconnecting", chromedp.Navigate(wsPage+"/gadgets"), chromedp.Reload(), visible(req))
	}
}
