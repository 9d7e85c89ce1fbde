package browser

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/serveproc"
)

const (
	// stepTimeout bounds one step of a test in the browser (a few actions).
	stepTimeout = 45 * time.Second
	// password is every test user's password.
	password = "correct horse battery staple"
)

// tmpDir holds this run's binary and compiled-component cache.
var tmpDir string

func TestMain(m *testing.M) { serveproc.Main(m, "browser", &tmpDir) }

// chromium returns the browser to drive: $ATELIER_CHROMIUM, else Debian's chromium. Without
// one it skips the test, or fails it under CI.
func chromium(tb testing.TB) string {
	tb.Helper()
	if p := os.Getenv("ATELIER_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		tb.Fatal("chromium is not installed: scripts/setup.sh installs Debian's chromium (or set ATELIER_CHROMIUM)")
	}
	tb.Skip("skipped: chromium is not installed (scripts/setup.sh installs it; CI fails instead of skipping)")
	return ""
}

// harness is one `atelier serve` and one headless Chromium, shared by the steps of a test.
type harness struct {
	t         *testing.T
	root      string // the repository root
	base      string // http://HOST:PORT of the server
	srv       *serveproc.Process
	browser   context.Context // the browser's first tab; new tabs derive from it
	artifacts string          // where screenshots go
}

// newHarness builds and starts the server on a fresh data file (with serverArgs, more flags of
// `atelier serve`) and starts Chromium.
func newHarness(t *testing.T, serverArgs ...string) *harness {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: builds bin/atelier and drives Chromium")
	}
	exe := chromium(t)
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "host", "shell", "dist", "shell.js")); err != nil {
		t.Fatalf("the browser shell is not built (%v): run scripts/setup.sh", err)
	}
	artifacts := os.Getenv("ATELIER_ARTIFACTS")
	if artifacts == "" {
		artifacts = filepath.Join(root, "tests", "browser", "artifacts")
	}
	if err := os.MkdirAll(artifacts, 0o755); err != nil {
		t.Fatal(err)
	}
	clearArtifacts.Do(func() { removeScreenshots(t, artifacts) })
	bin := serveproc.Binary(t, tmpDir)
	srv := serveproc.Launch(t, bin, filepath.Join(t.TempDir(), "atelier.db"), filepath.Join(tmpDir, "cache"), serverArgs...).Wait(t)
	base := "http://" + strings.TrimSuffix(strings.TrimPrefix(srv.URL, "ws://"), "/api")

	// Chromium may still write to its profile while it exits, after the test's own TempDir
	// would be removed: the profile lives in the run's folder, which serveproc.Main removes.
	profile, err := os.MkdirTemp(tmpDir, "chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // the tests run as root in CI
		chromedp.WindowSize(1280, 900),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("user-data-dir", profile),
		// Keep sandboxed frames in the page's process, so that queries reach the gadget frame's
		// document from the tab (chromedp does not drive out-of-process frames). The sandbox
		// and the CSP are enforced the same either way; the process split is Chromium's own
		// extra layer. The rest is chromedp's default list.
		chromedp.Flag("disable-features", "site-per-process,Translate,BlinkGenPropertyTrees,IsolateSandboxedIframes"),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancelBrowser := chromedp.NewContext(alloc)
	t.Cleanup(func() {
		cancelBrowser()
		cancelAlloc()
	})
	if err := chromedp.Run(browser); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	return &harness{t: t, root: root, base: base, srv: srv, browser: browser, artifacts: artifacts}
}

// adminTab opens a tab at origin (the server's base URL, or the same under another host name
// for storage of its own) signed in as the admin, with the token the server printed on its
// first run (a node of a cluster prints it after its listening line: it is waited for).
func (h *harness) adminTab(origin string) context.Context {
	h.t.Helper()
	token := h.srv.AdminToken(h.t)
	tab := h.tab()
	h.run(tab, "sign in as the admin", chromedp.Navigate(origin+"/"), visible("#login"),
		chromedp.Evaluate(`localStorage.setItem("atelier.token", `+strconv.Quote(token)+`)`, nil), chromedp.Reload(), visible("#user #logout"))
	return tab
}

// tab opens a tab: in the browser's default context (sharing localStorage with the other tabs
// there), or with chromedp.WithNewBrowserContext() in a context of its own (another person).
func (h *harness) tab(opts ...chromedp.ContextOption) context.Context {
	ctx, cancel := chromedp.NewContext(h.browser, opts...)
	h.t.Cleanup(cancel)
	h.listen(ctx, "tab")
	if err := chromedp.Run(ctx); err != nil {
		h.t.Fatalf("open a tab: %v", err)
	}
	return ctx
}

// run runs actions in ctx within stepTimeout; on failure it saves a screenshot of the tab and
// fails the test, naming the step.
func (h *harness) run(ctx context.Context, step string, actions ...chromedp.Action) {
	h.t.Helper()
	h.runDumping(ctx, step, func() string { return h.body(ctx) }, actions...)
}

// runFrame is run for steps in the gadget frame f: a failure shows the frame's document.
func (h *harness) runFrame(f frame, step string, actions ...chromedp.Action) {
	h.t.Helper()
	h.runDumping(f.tab, step, func() string {
		sctx, cancel := context.WithTimeout(f.tab, 5*time.Second)
		defer cancel()
		var html string
		if err := chromedp.Run(sctx, chromedp.OuterHTML("body", &html, f.in()...)); err != nil {
			return "(unreadable: " + err.Error() + ")"
		}
		return html
	}, actions...)
}

func (h *harness) runDumping(ctx context.Context, step string, dump func() string, actions ...chromedp.Action) {
	h.t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Run(sctx, actions...); err != nil {
		if errors.Is(sctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("%w (step timed out after %v)", err, stepTimeout)
		}
		h.shot(ctx, "failed-"+strings.ReplaceAll(step, " ", "-"))
		h.t.Fatalf("%s: %v\ndocument: %s", step, err, dump())
	}
}

// body returns the start of the document's body (for failure messages).
func (h *harness) body(ctx context.Context) string {
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var html string
	if err := chromedp.Run(sctx, chromedp.Evaluate(`document.body ? document.body.outerHTML : ""`, &html)); err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(html) > 3000 {
		html = html[:3000] + "..."
	}
	return html
}

// listen logs the console lines and uncaught exceptions of ctx's target as test log lines.
func (h *harness) listen(ctx context.Context, who string) {
	chromedp.ListenTarget(ctx, func(ev any) {
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			var parts []string
			for _, a := range ev.Args {
				if a.Value != nil {
					parts = append(parts, string(a.Value))
				} else {
					parts = append(parts, a.Description)
				}
			}
			h.t.Logf("%s console.%s: %s", who, ev.Type, strings.Join(parts, " "))
		case *runtime.EventExceptionThrown:
			h.t.Logf("%s exception: %s", who, ev.ExceptionDetails.Error())
		}
	})
}

// shot saves a full-page screenshot of the tab as ARTIFACTS/name.png; the test fails (and
// goes on) when it cannot.
func (h *harness) shot(ctx context.Context, name string) {
	h.t.Helper()
	sctx, cancel := context.WithTimeout(ctx, stepTimeout)
	defer cancel()
	var png []byte
	if err := chromedp.Run(sctx, chromedp.FullScreenshot(&png, 100)); err != nil {
		h.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	if err := os.WriteFile(filepath.Join(h.artifacts, name+".png"), png, 0o644); err != nil {
		h.t.Errorf("screenshot %s: %v", name, err)
	}
}

// changes wakes a waiter when what it watches changed (a signal, not a count).
type changes chan struct{}

func newChanges() changes { return make(changes, 1) }

// notify wakes the waiter, if there is one.
func (c changes) notify() {
	select {
	case c <- struct{}{}:
	default:
	}
}

// await checks cond now and after each change until it holds, for up to stepTimeout; it
// reports whether cond held.
func (c changes) await(cond func() bool) bool {
	deadline := time.After(stepTimeout)
	for !cond() {
		select {
		case <-c:
		case <-deadline:
			return false
		}
	}
	return true
}

// clearArtifacts empties the screenshot folder once per run, so that it holds this run's only.
var clearArtifacts sync.Once

// removeScreenshots removes the .png files of dir (the folder may be the user's own, through
// ATELIER_ARTIFACTS: nothing else in it is touched).
func removeScreenshots(t *testing.T, dir string) {
	old, err := filepath.Glob(filepath.Join(dir, "*.png"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatalf("clear the screenshots of an earlier run: %v", err)
		}
	}
}

// frame is a tab's gadget UI frame: its queries run in the frame's document.
type frame struct {
	tab  context.Context
	node *cdp.Node // the iframe element, whose content document the queries search
}

// in returns the query options that search the frame's document.
func (f frame) in() []chromedp.QueryOption {
	return []chromedp.QueryOption{chromedp.ByQuery, chromedp.FromNode(f.node)}
}

// frame finds the tab's gadget UI frame once its client.js has built something.
func (h *harness) frame(tab context.Context) frame {
	h.t.Helper()
	deadline := time.Now().Add(stepTimeout)
	for {
		var nodes []*cdp.Node
		h.run(tab, "find the gadget frame", chromedp.Nodes("iframe.gadget-frame", &nodes, chromedp.ByQuery))
		f := frame{tab: tab, node: nodes[0]}
		if f.node.ContentDocument != nil {
			ctx, cancel := context.WithTimeout(tab, time.Second)
			err := chromedp.Run(ctx, chromedp.WaitReady("body > *", f.in()...))
			cancel()
			if err == nil {
				return f
			}
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("the gadget frame showed nothing within %v\ndocument: %s", stepTimeout, h.body(tab))
		}
	}
}
