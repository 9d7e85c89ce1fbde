package browser

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// acceptDialogs accepts every confirm() the tab's page shows from now on.
func acceptDialogs(tab context.Context) {
	chromedp.ListenTarget(tab, func(ev any) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			// Not from the listener itself (it would wait on itself); should this fail, the
			// step waiting for the dialog's effect fails.
			go func() { _ = chromedp.Run(tab, page.HandleJavaScriptDialog(true)) }()
		}
	})
}

// TestFirstRunAdmin: on a new server the admin signs in to the workshop with the first-run
// token pasted on the sign-in page (a wrong one is refused), sets a password when offered,
// logs out and logs in with it, installs a gatekeeper package and removes it again after
// confirming; a user sees neither the install form nor a Remove button.
func TestFirstRunAdmin(t *testing.T) {
	h := newHarness(t)
	pkg, _ := probeFiles(t)
	token := h.srv.AdminToken(t)
	const adminPassword = "the admin's own password"

	// The admin's browser (another origin: storage of its own).
	origin := strings.Replace(h.base, "127.0.0.1", "localhost", 1)
	admin := h.tab()
	acceptDialogs(admin)
	h.run(admin, "open the sign-in page", chromedp.Navigate(origin+"/"), visible("#login"), click("#first-run summary"), visible("#token-login"))
	h.run(admin, "try a wrong token", keys(`#token-login input[name="token"]`, "atl_not-the-token"), click(`#token-login button[type="submit"]`),
		visible(".toast.error .error-code"))
	h.run(admin, "sign in with the first-run token", chromedp.SetValue(`#token-login input[name="token"]`, token, chromedp.ByQuery),
		click(`#token-login button[type="submit"]`), visible("#user #logout"), visible("#password-offer"))
	var user string
	h.run(admin, "read the header's user", text("#user", &user))
	if !strings.HasPrefix(user, "admin") {
		t.Errorf("after the token sign-in the header reads %q, want admin", user)
	}
	h.shot(admin, "20-first-run-password-offer")
	h.run(admin, "set a password", keys(`#set-password input[name="password"]`, adminPassword), keys(`#set-password input[name="again"]`, adminPassword),
		click(`#set-password button[type="submit"]`), chromedp.WaitNotPresent("#password-offer", chromedp.ByQuery),
		toastShown(`t.textContent.includes("password is set")`))
	h.run(admin, "log out", click("#logout"), visible("#login"))
	h.run(admin, "log in as admin with the password", keys(`#login input[name="username"]`, "admin"), keys(`#login input[name="password"]`, adminPassword),
		click(`#login button[type="submit"]`), visible("#user #logout"))
	var offers int
	h.run(admin, "look for the password offer", chromedp.Evaluate(`document.querySelectorAll("#password-offer").length`, &offers))
	if offers != 0 {
		t.Error("a password login still offers to set a password")
	}

	h.run(admin, "install the probe gatekeeper", chromedp.Navigate(origin+"/#/gatekeepers"), visible("#install-gatekeeper"),
		upload("#install-gatekeeper", pkg), click("#install"), visible(`#gatekeepers tr[data-gatekeeper="probe"]`), toastShown(`t.textContent === "installed probe"`))
	h.shot(admin, "21-gatekeeper-installed")

	// A user sees the gatekeeper, and neither the install form nor a Remove button.
	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(a, "ada")
	var controls int
	h.run(a, "open the gatekeepers as a user", chromedp.Navigate(h.base+"/#/gatekeepers"), visible(`#gatekeepers tr[data-gatekeeper="probe"]`),
		chromedp.Evaluate(`document.querySelectorAll("#install-gatekeeper, .remove-gatekeeper").length`, &controls))
	if controls != 0 {
		t.Errorf("a user sees %d of the admin's gatekeeper controls", controls)
	}

	// Back in the admin's tab (a tab behind another draws no frames: no polls, no screenshots).
	h.run(admin, "remove the gatekeeper", page.BringToFront(), click(`#gatekeepers tr[data-gatekeeper="probe"] .remove-gatekeeper`),
		toastShown(`t.textContent === "removed probe"`), visible("#install-gatekeeper"), chromedp.WaitNotPresent(`#gatekeepers tr[data-gatekeeper="probe"]`, chromedp.ByQuery))
	h.run(a, "see it gone as the user", chromedp.Reload(), visible(`#gatekeepers tr[data-gatekeeper="mcp"]`), chromedp.WaitNotPresent(`#gatekeepers tr[data-gatekeeper="probe"]`, chromedp.ByQuery))
}

// TestErrorSentences: a refused action shows a sentence for its code, the server's message and
// the code in small print; the error toast goes away when the next action succeeds.
func TestErrorSentences(t *testing.T) {
	h := newHarness(t)
	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"))
	h.signup(a, "ada")
	long := strings.Repeat("w", 65) // workspace names are at most 64 bytes
	var sentence, detail, code string
	h.run(a, "create a workspace with too long a name", visible("#create-workspace"), keys(`#create-workspace input[name="name"]`, long),
		click(`#create-workspace button[type="submit"]`), visible(".toast.error .error-code"),
		text(".toast.error .error-sentence", &sentence), text(".toast.error .error-detail", &detail), text(".toast.error small.error-code", &code))
	if sentence != "Something you entered is not valid." || code != "INVALID_ARGUMENT" || !strings.Contains(detail, "want 1 to 64 bytes") {
		t.Errorf("the error toast reads %q / %q / %q, want the sentence, the server's message and INVALID_ARGUMENT", sentence, detail, code)
	}
	var small bool
	h.run(a, "measure the code's print", chromedp.Evaluate(`(() => {
  const size = (sel) => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize);
  return size(".toast.error small.error-code") < size(".toast.error .error-sentence");
})()`, &small))
	if !small {
		t.Error("the error code is not in smaller print than the sentence")
	}
	h.shot(a, "22-error-toast")
	// The success is checked the moment the workspace opens (the toast would show for seconds more).
	var stale bool
	h.run(a, "create the workspace with a good name", chromedp.Evaluate(`window.errorToast = document.querySelector(".toast.error")`, nil),
		chromedp.SetValue(`#create-workspace input[name="name"]`, "home", chromedp.ByQuery),
		click(`#create-workspace button[type="submit"]`), visible("#create-gadget"),
		chromedp.Evaluate(`window.errorToast.isConnected || document.querySelectorAll(".toast.error").length > 0`, &stale))
	if stale {
		t.Error("the error toast still shows after the next action succeeded")
	}
}

// screen is a page of the workshop and what shows once it rendered.
type screen struct{ name, hash, ready string }

// TestWidths signs up and deploys the notes JS gadget, sees a call of its method panel write a
// line into the gadget page's live console, then checks every main screen at a phone's width
// (390 px) and a desktop's (1400 px): the page is no wider than the window, the header is on
// screen whole, and the gadget frame fits; a screenshot of each is kept.
func TestWidths(t *testing.T) {
	h := newHarness(t)
	files, err := filepath.Glob(filepath.Join(h.root, "gadgets", "notes-js", "*.[jt]s"))
	if err != nil || len(files) < 2 {
		t.Fatalf("notes gadget files: %v %v", files, err)
	}
	a := h.tab()
	h.run(a, "open the shell", chromedp.Navigate(h.base+"/"), visible("#login"))
	for _, w := range []int64{390, 1400} {
		h.run(a, fmt.Sprintf("size the window to %d px", w), chromedp.EmulateViewport(w, 860))
		h.fits(a, w, screen{"sign-in", "", "#login"})
	}
	h.run(a, "size the window back", chromedp.EmulateViewport(1280, 900))
	h.signup(a, "grace")
	h.createWorkspace(a, "notebook")
	h.deploy(a, "notes", files...)
	var url string
	h.run(a, "open the notes gadget", click(`#gadgets tr[data-gadget="notes"] a`), visible("iframe.gadget-frame"), visible("#gadget-console"), chromedp.Location(&url))

	// The gadget page's console shows what a call made the gadget write, as it writes it.
	h.callGadget(a, `[{"title": "from the method panel", "tags": []}]`)
	h.run(a, "see the call's console line", chromedp.Poll(`document.querySelector("#gadget-console").textContent.includes("created note 1: from the method panel")`, nil))
	var line string
	h.run(a, "read the console line", text("#gadget-console .line", &line))
	if !strings.Contains(line, "notes") {
		t.Errorf("the console line reads %q, want the gadget's name with the text", line)
	}

	ws := url[strings.Index(url, "#/w/")+len("#/w/") : strings.Index(url, "/g/")]
	screens := []screen{
		{"workspaces", "#/", "#create-workspace"},
		{"gadgets", "#/w/" + ws, "#tab-gadgets > *"},
		{"gadget", "#/w/" + ws + "/g/notes", "#gadget-console"},
		{"bindings", "#/w/" + ws + "/bindings", "#tab-bindings > *"},
		{"sharing", "#/w/" + ws + "/sharing", "#tab-sharing > *"},
		{"approvals", "#/w/" + ws + "/approvals", "#tab-approvals > *"},
		{"hooks", "#/w/" + ws + "/hooks", "#tab-hooks > *"},
		{"console", "#/w/" + ws + "/console", "#console-log"},
		{"code", "#/w/" + ws + "/code", "#code-run"},
		{"metrics", "#/w/" + ws + "/metrics", "#tab-metrics > *"},
		{"agents", "#/agents", "#create-agent"},
		{"gatekeepers", "#/gatekeepers", "main h1"},
		{"models", "#/models", "main h1"},
	}
	for _, w := range []int64{390, 1400} {
		h.run(a, fmt.Sprintf("size the window to %d px", w), chromedp.EmulateViewport(w, 860))
		for _, s := range screens {
			h.fits(a, w, s)
		}
	}
}

// fits opens screen s in the tab at width w and checks that nothing is wider than the window,
// that the header is on screen whole and, with a gadget frame, that the frame fits; it saves a
// screenshot as w-NAME.png.
func (h *harness) fits(tab context.Context, w int64, s screen) {
	h.t.Helper()
	var steps []chromedp.Action
	if s.hash != "" {
		steps = append(steps, chromedp.Navigate(h.base+"/"+s.hash))
	}
	steps = append(steps, visible(s.ready), visible("header.bar"))
	var got struct {
		Page, Header bool
		Outside      []string
		Frame        float64 // the gadget frame's right edge (0: none)
		Width        float64
	}
	steps = append(steps, chromedp.Evaluate(`(() => {
  const bar = document.querySelector("header.bar");
  const r = bar.getBoundingClientRect();
  const outside = [...bar.querySelectorAll("*")].filter((e) => {
    const b = e.getBoundingClientRect();
    return b.width > 0 && (b.left < -0.5 || b.right > innerWidth + 0.5 || b.top < -0.5);
  }).map((e) => e.id || e.textContent.trim().slice(0, 20) || e.tagName);
  const frame = document.querySelector("iframe.gadget-frame");
  return {
    Page: document.documentElement.scrollWidth <= innerWidth,
    Header: r.left >= 0 && r.top >= 0 && r.right <= innerWidth + 0.5 && bar.scrollWidth <= bar.clientWidth,
    Outside: outside,
    Frame: frame ? frame.getBoundingClientRect().right : 0,
    Width: innerWidth,
  };
})()`, &got))
	h.run(tab, fmt.Sprintf("measure %s at %d px", s.name, w), steps...)
	if got.Width != float64(w) {
		h.t.Fatalf("%s: the window is %v px wide, want %d", s.name, got.Width, w)
	}
	if !got.Page || !got.Header || len(got.Outside) > 0 || got.Frame > float64(w) {
		var scroll string
		_ = chromedp.Run(tab, chromedp.Evaluate(`[...document.querySelectorAll("main *")].filter((e) => e.getBoundingClientRect().right > innerWidth + 0.5).slice(0, 5).map((e) => e.tagName + "." + e.className + "#" + e.id).join(", ")`, &scroll))
		h.t.Errorf("%s at %d px: page fits %v, header on screen %v (outside: %q), gadget frame's right edge %v; too wide: %s", s.name, w, got.Page, got.Header, got.Outside, got.Frame, scroll)
	}
	h.shot(tab, strconv.FormatInt(w, 10)+"-"+s.name)
}
