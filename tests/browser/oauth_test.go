package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
	"atelier/tests/oauthop"
)

// signInPopup waits for the provider's sign-in window that the page opens while act runs,
// signs in there as the provider's user, and waits until the provider sent the window back
// to the server's callback page, which says the account is connected.
func (h *harness) signInPopup(tab context.Context, p *oauthop.Provider, step string, act chromedp.Action) {
	h.t.Helper()
	opened := chromedp.WaitNewTarget(tab, func(info *target.Info) bool { return info.Type == "page" })
	h.run(tab, step, act)
	popup, cancel := chromedp.NewContext(tab, chromedp.WithTargetID(<-opened))
	defer cancel()
	h.run(popup, "sign in at the provider", visible("#username"), keys("#username", p.User()), keys("#password", oauthop.Password),
		click(`button[type="submit"]`), chromedp.WaitReady(`#oauth-result[data-ok="true"]`, chromedp.ByQuery))
}

// TestOAuthAccountInWorkshop: a user connects an OAuth account from the Gatekeepers page: the
// provider opens in a new window, the user signs in there, the server receives the callback
// and the account list shows the account; a gadget bound to it reaches the resource server
// with the access token (which checks it at the provider) and never sees the token. When the
// provider stops accepting the account's refresh token, the account shows Reconnect, and
// reconnecting restores it.
func TestOAuthAccountInWorkshop(t *testing.T) {
	p, err := oauthop.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rs := oauthop.StartResourceServer(p)
	defer rs.Close()
	h := newHarness(t, "--gatekeeper-allow-addr", rs.Addr+","+p.Addr)
	const clientID, secret = "atelier-browser", "browser-client-secret-0b9d"
	p.Register(clientID, secret, h.base+"/oauth/callback")

	// The admin installs the gatekeeper and configures its OAuth client over the API.
	archive, err := gatekeeper.Pack(oauthop.Manifest("calendar", p, rs), guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sess, err := capnweb.DialWebSocket(ctx, h.srv.URL, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	admin := sess.Main().Call(ctx, "authenticate", h.srv.AdminToken(t))
	info, err := capnweb.AwaitAs[map[string]any](ctx, admin.Call(ctx, "installGatekeeper", archive))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Call(ctx, "setOAuthClient", info["id"], clientID, secret).Await(ctx); err != nil {
		t.Fatal(err)
	}

	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(a, "ada")
	work := rs.URL + "/notebooks/work"
	h.run(a, "open the gatekeepers", chromedp.Navigate(h.base+"/#/gatekeepers"), visible("#connect-account"), visible("#oauth-note"),
		keys(`#connect-account input[name="resource"]`, work))
	h.signInPopup(a, p, "connect the account", click(`#connect-account button[type="submit"]`))
	h.run(a, "see the account", visible(`#accounts tr[data-state="ok"]`))
	h.shot(a, "50-oauth-account")

	dir := t.TempDir()
	server := filepath.Join(dir, "server.js")
	if err := os.WriteFile(server, []byte(callerJS), 0o644); err != nil {
		t.Fatal(err)
	}
	h.run(a, "go to the workspaces", chromedp.Navigate(h.base+"/#/"))
	h.createWorkspace(a, "office")
	h.deploy(a, "caller", server)
	h.run(a, "bind the gadget to the account", click(`[data-tab="bindings"]`), visible("#bind-gatekeeper"),
		keys(`#bind-gatekeeper input[name="name"]`, "work"), click(`#bind-gatekeeper button[type="submit"]`),
		visible(`#gatekeeper-bindings tr[data-gadget="caller"][data-name="work"]`))
	var gadgetURL string
	h.run(a, "open the caller gadget", click(`[data-tab="gadgets"]`), click(`#gadgets tr[data-gadget="caller"] a`), visible("#call"), chromedp.Location(&gadgetURL))
	whoami := `["work", "fetch", ["GET", "` + rs.URL + `/api/notebooks/work/whoami", {}, ""]]`
	out := h.callGadget(a, whoami)
	if !strings.Contains(out, `\"user\":\"id1\"`) && !strings.Contains(out, `"user":"id1"`) || !strings.Contains(out, "[credential removed by atelier]") {
		t.Fatalf("the gadget's call through the gatekeeper shows %s, want the provider's user and the scrubbed echo of the token", out)
	}
	if accepted, _ := rs.Counts(); accepted != 1 {
		t.Fatalf("the resource server accepted %d tokens, want the account's one", accepted)
	}

	// The provider forgets the account's tokens: the next call fails saying to reconnect, and
	// the account shows Reconnect.
	p.Restart()
	if out := h.callGadgetFails(a, whoami); !strings.Contains(out, "must be reconnected") {
		t.Fatalf("a call with tokens the provider forgot shows %q, want the reconnect error", out)
	}
	h.run(a, "see the account to reconnect", chromedp.Navigate(h.base+"/#/gatekeepers"), visible(`#accounts tr[data-state="reconnect"] .reconnect`))
	h.shot(a, "51-oauth-reconnect")
	h.signInPopup(a, p, "reconnect the account", click(`#accounts tr[data-state="reconnect"] .reconnect`))
	h.run(a, "see the account reconnected", visible(`#accounts tr[data-state="ok"]`))
	h.run(a, "open the caller gadget again", chromedp.Navigate(gadgetURL), visible("#call"))
	if out := h.callGadget(a, whoami); !strings.Contains(out, "[credential removed by atelier]") {
		t.Fatalf("after reconnecting the call shows %s", out)
	}
}
