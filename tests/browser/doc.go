// Package browser tests the browser shell (host/shell) in a real headless Chromium driven with
// chromedp, against a real `atelier serve` on loopback: sign-up, workspaces and deploys through
// the UI, a gadget UI updating live across tabs and surviving a reload, the gadget frame's
// sandbox (every way out of the frame is tried and must be blocked), a `use` collaborator's view
// and refusal, and screenshots of the main screens as test artifacts (tests/browser/artifacts or
// $ATELIER_ARTIFACTS).
//
// Chromium is Debian's `chromium` (scripts/setup.sh installs it), or $ATELIER_CHROMIUM. Without
// it the tests skip, except under CI (CI set), where they fail.
package browser
