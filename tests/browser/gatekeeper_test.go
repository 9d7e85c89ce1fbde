package browser

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
)

// callerJS is a JS gadget that calls any method of any of its bindings.
const callerJS = `export class Gadget {
  call(name, method, args) { return this.env[name][method](...args); }
}`

// probeNotebooks is where the probe gatekeeper's notebooks would be: nothing listens there, and
// nothing in the test reaches it (actions are queued, applied and rejected without requests).
const probeNotebooks = "http://127.0.0.1:9/notebooks/"

// probeFiles writes the probe gatekeeper's package (probe.gkp, for the notebooks at
// probeNotebooks) and the caller gadget (server.js) to a temporary folder and returns their paths.
func probeFiles(t *testing.T) (pkg, server string) {
	t.Helper()
	dir := t.TempDir()
	pkg = filepath.Join(dir, "probe.gkp")
	archive, err := gatekeeper.Pack(gatekeeper.Manifest{
		Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress:      gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{"127.0.0.1:9"}},
		Credentials: []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources:   []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: probeNotebooks + ":notebook", Egress: []string{"http://127.0.0.1:9/api/notebooks/:notebook"}}},
	}, guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	server = filepath.Join(dir, "server.js")
	for path, data := range map[string][]byte{pkg: archive, server: []byte(callerJS)} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return pkg, server
}

// TestGatekeeperBindingAndApprovals: the admin installs a gatekeeper package (.gkp) from the
// Gatekeepers page; a user connects an account on it, binds a gadget to the account on the
// Bindings tab (listed there with its account), makes the gadget submit two actions, approves
// one and rejects the other in the approval queue (which names the gatekeeper and the
// account's resource, not the account's id), and unbinds the account from the Bindings
// tab, after which the kernel refuses the gadget's calls of the binding (it has no such name).
func TestGatekeeperBindingAndApprovals(t *testing.T) {
	h := newHarness(t)
	pkg, server := probeFiles(t)

	// The admin's browser (another origin: storage of its own). A single server shows no
	// Cluster screen.
	other := strings.Replace(h.base, "127.0.0.1", "localhost", 1)
	admin := h.adminTab(other)
	var clusterLinks int
	h.run(admin, "look for the cluster screen", chromedp.Evaluate(`document.querySelectorAll("#nav-cluster").length`, &clusterLinks),
		chromedp.Navigate(other+"/#/cluster"), visible("#view-error"))
	if clusterLinks != 0 {
		t.Error("a single server shows the admin a Cluster link")
	}
	h.run(admin, "install the probe gatekeeper", chromedp.Navigate(other+"/#/gatekeepers"), visible("#install-gatekeeper"),
		upload("#install-gatekeeper", pkg), click("#install"), visible("#gatekeepers"))
	h.shot(admin, "14-gatekeepers")

	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(a, "ada")
	h.run(a, "connect an account", chromedp.Navigate(h.base+"/#/gatekeepers"), visible("#connect-account"),
		keys(`#connect-account input[name="resource"]`, probeNotebooks+"work"), keys(`#connect-account input[name="cred:token"]`, "secret-token"),
		click(`#connect-account button[type="submit"]`), visible("#accounts"))
	h.run(a, "go to the workspaces", chromedp.Navigate(h.base+"/#/"))
	h.createWorkspace(a, "office")
	h.deploy(a, "caller", server)
	h.run(a, "bind the gadget to the account", click(`[data-tab="bindings"]`), visible("#bind-gatekeeper"),
		keys(`#bind-gatekeeper input[name="name"]`, "probe"), click(`#bind-gatekeeper button[type="submit"]`),
		visible(`#gatekeeper-bindings tr[data-gadget="caller"][data-name="probe"]`))
	var row string
	h.run(a, "read the binding", text(`#gatekeeper-bindings tr[data-name="probe"]`, &row))
	if !strings.Contains(row, "probe") || !strings.Contains(row, "ada's") || !strings.Contains(row, probeNotebooks+"work") {
		t.Errorf("the binding's row reads %q, want the gatekeeper, ada's account and its resource", row)
	}
	h.shot(a, "07-bindings")

	var url string
	h.run(a, "open the caller gadget", click(`[data-tab="gadgets"]`), click(`#gadgets tr[data-gadget="caller"] a`), visible("#call"), chromedp.Location(&url))
	approve := h.callGadget(a, `["probe", "submit", ["approve-me", false]]`)
	reject := h.callGadget(a, `["probe", "submit", ["reject-me", false]]`)
	if approve == reject {
		t.Fatalf("both actions have id %s", approve)
	}
	wsPage := url[:strings.Index(url, "/g/")]
	row = `#actions tr[data-action="` + approve + `"]`
	other2 := `#actions tr[data-action="` + reject + `"]`
	h.run(a, "see the pending actions", chromedp.Navigate(wsPage+"/approvals"), visible(row+`[data-state="pending"]`), visible(other2+`[data-state="pending"]`))
	h.shot(a, "12-approvals")
	var account string
	h.run(a, "read the pending action's gatekeeper and resource", text(row+" td.account", &account))
	if !strings.Contains(account, "probe") || !strings.Contains(account, probeNotebooks+"work") || strings.Contains(account, "acct_") {
		t.Errorf("the pending action's account cell reads %q, want the gatekeeper's name and the account's resource, no account id", account)
	}
	h.run(a, "approve one", click(row+" .approve"), visible(row+`[data-state="applied"]`))
	h.run(a, "reject the other", click(other2+" .reject"), visible(other2+`[data-state="rejected"]`))
	var applied string
	h.run(a, "read the applied action", text(row, &applied))
	if !strings.Contains(applied, "applied approve-me") {
		t.Errorf("the approved action reads %q, want the gatekeeper's result", applied)
	}

	h.run(a, "unbind the account", chromedp.Navigate(wsPage+"/bindings"), visible(`#gatekeeper-bindings tr[data-name="probe"]`),
		click(`#gatekeeper-bindings tr[data-name="probe"] .unbind`), chromedp.WaitNotPresent("#gatekeeper-bindings", chromedp.ByQuery), visible("#bind-gatekeeper"))
	h.run(a, "open the caller gadget again", chromedp.Navigate(url), visible("#call"))
	// The kernel's refusal of a binding name the gadget no longer has (host/kernel/bindings.go).
	const refusal = `gadget caller has no binding "probe"`
	if out := h.callGadgetFails(a, `["probe", "submit", ["unbound", false]]`); !strings.Contains(out, refusal) {
		t.Errorf("after the unbind the gadget's call of the binding shows %q, want the refusal %q", out, refusal)
	}
}

// callGadget calls the method of the gadget page's call panel with args (JSON) and returns
// the output it shows; a failed call fails the test.
func (h *harness) callGadget(tab context.Context, args string) string {
	h.t.Helper()
	out, failed := h.call(tab, args)
	if failed {
		h.t.Fatalf("call %s failed: %s", args, out)
	}
	return out
}

// callGadgetFails is callGadget for a call that must fail: it returns the error shown ("" if
// the call succeeded).
func (h *harness) callGadgetFails(tab context.Context, args string) string {
	h.t.Helper()
	out, failed := h.call(tab, args)
	if !failed {
		return ""
	}
	return out
}

func (h *harness) call(tab context.Context, args string) (out string, failed bool) {
	h.t.Helper()
	h.run(tab, "call with "+args,
		chromedp.Evaluate(`document.querySelector("#call-output").textContent = ""`, nil),
		chromedp.SetValue(`#call input[name="args"]`, args, chromedp.ByQuery),
		click(`#call button[type="submit"]`),
		chromedp.Poll(`document.querySelector("#call-output").textContent !== ""`, nil),
		text("#call-output", &out),
		chromedp.Evaluate(`document.querySelector("#call-output").classList.contains("error")`, &failed))
	return strings.TrimSpace(out), failed
}
