// Package browser tests the browser shell (host/shell) in a real headless Chromium driven with
// chromedp, against a real `atelier serve` on loopback: sign-up, workspaces and deploys through
// the UI, a gadget UI updating live across tabs and surviving a reload, UI-only changes and
// rollback from the Versions panel, the gadget frame's sandbox (every way out of the frame that
// docs/gadget-ui.md names is tried and must be refused, with no request reaching an outside
// server), a `use` collaborator's view and refusal, gatekeeper bindings and
// the approval queue, the Hooks tab (a hook fired by the notes service, copied, removed), the metrics dashboard, login, reconnection, the cluster admin screen (a
// one-node cluster), the chat panel with a scripted model (a gadget held in a draft until
// Accept, a rejected edit, a committed dry run, at 390 and 1400 px), and screenshots of the main screens as test artifacts
// (tests/browser/artifacts or $ATELIER_ARTIFACTS; each run replaces them).
//
// Chromium is Debian's `chromium` (scripts/setup.sh installs it), or $ATELIER_CHROMIUM. Without
// it the tests skip, except under CI (CI set), where they fail.
package browser
