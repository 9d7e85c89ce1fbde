// Package shell serves Atelier's browser shell: the page at / and its bundled assets under
// /assets/. The assets are built from web/ into dist/ by `go run ./host/shell/build` (run by
// scripts/setup.sh) and embedded in the binary; without them / answers 503 and says so.
//
// The page runs only the bundle's script ('self'). Gadget UIs run in sandboxed frames showing
// /assets/gadget-frame.html (frame.html), a document with its own, stricter policy: a network
// document, it does not inherit the page's policy, and its scripts need nothing of the page's
// (see docs/gadget-ui.md).
package shell

import (
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

// Entry is the bundle's script; its absence means the shell was not built.
const Entry = "shell.js"

//go:embed all:dist
var dist embed.FS

//go:embed index.html
var indexHTML string

// pageCSP is the page's Content-Security-Policy.
const pageCSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-src 'self'; " +
	"worker-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// framePath is where the gadget frame's document is served.
const framePath = "/assets/gadget-frame.html"

//go:embed frame.html
var frameHTML string

// frameCSP is the gadget frame's pair of policies, both enforced (see framePolicies).
var frameCSP = framePolicies(frameHTML)

// notBuilt is the body of / when the bundle is missing.
const notBuilt = `<!doctype html><meta charset="utf-8"><title>Atelier: shell not built</title>
<h1>The browser shell is not built</h1>
<p>This atelier binary was built without the shell's bundle (host/shell/dist/shell.js).
Run <code>scripts/setup.sh</code>: it installs the npm packages of host/shell/web, bundles the shell
(<code>go run ./host/shell/build</code>) and rebuilds <code>bin/atelier</code>.</p>
<p>The API itself works: Cap'n Web at <code>/api</code>.</p>
`

// Handler serves the shell: GET / (and HEAD) is the page, /assets/NAME a file of the bundle.
type Handler struct {
	assets fs.FS
	built  bool
}

// New returns a Handler serving the bundle in assets (a folder holding shell.js and shell.css).
func New(assets fs.FS) *Handler {
	_, err := fs.Stat(assets, Entry)
	return &Handler{assets: assets, built: err == nil}
}

// Embedded returns a Handler serving the bundle embedded in the binary.
func Embedded() *Handler {
	sub, err := fs.Sub(dist, "dist")
	if err != nil {
		panic(fmt.Sprintf("shell: embedded dist: %v", err)) // cannot happen: "dist" is a valid path
	}
	return New(sub)
}

// Built reports whether the bundle is present.
func (h *Handler) Built() bool { return h.built }

// ServeHTTP serves / and /assets/.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	hdr := w.Header()
	hdr.Set("X-Content-Type-Options", "nosniff")
	hdr.Set("Referrer-Policy", "no-referrer")
	switch {
	case r.URL.Path == "/":
		h.serveIndex(w)
	case r.URL.Path == framePath:
		serveFrame(w)
	case strings.HasPrefix(r.URL.Path, "/assets/"):
		h.serveAsset(w, r)
	default:
		http.NotFound(w, r)
	}
}

// framePolicies returns the gadget frame's two policies for its document. The first is the
// reference's (section 3.2), tightened: it lets scripts run only from frame.html's one inline
// script, by its hash, and from the scripts that script (or a script it ran) inserts
// ('strict-dynamic'); the second limits every script to that inline one and data: URLs, which
// 'strict-dynamic' alone would not. Frames nested in the gadget frame (srcdoc ones, which
// frame-src does not stop) inherit both, so nothing runs in them before that inline script.
func framePolicies(doc string) [2]string {
	_, rest, ok := strings.Cut(doc, "<script>")
	script, _, ok2 := strings.Cut(rest, "</script>")
	if !ok || !ok2 {
		panic("shell: frame.html has no inline <script>") // cannot happen: frame.html is embedded
	}
	sum := sha256.Sum256([]byte(script))
	hash := "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
	return [2]string{
		"sandbox allow-scripts; default-src 'none'; script-src " + hash + " 'strict-dynamic'; " +
			"style-src data: 'unsafe-inline'; img-src data:; media-src data:; connect-src 'none'; " +
			"frame-src 'none'; child-src 'none'; worker-src 'none'; manifest-src 'none'; " +
			"object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'self'",
		"script-src " + hash + " data:",
	}
}

func (h *Handler) serveIndex(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Frame-Options", "DENY")
	if !h.built {
		hdr.Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, notBuilt)
		return
	}
	hdr.Set("Content-Security-Policy", pageCSP)
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprint(w, indexHTML)
}

// serveFrame serves the gadget frame's document: the shell puts it in an iframe with
// sandbox="allow-scripts" and sends it the scripts to run (web/src/gadgetframe.js).
func serveFrame(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("Cache-Control", "no-cache")
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	for _, p := range frameCSP {
		hdr.Add("Content-Security-Policy", p)
	}
	fmt.Fprint(w, frameHTML)
}

func (h *Handler) serveAsset(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/assets/")
	if name == "" || name == "." || name != path.Clean(name) || !fs.ValidPath(name) || strings.Contains(name, "/") {
		http.NotFound(w, r)
		return
	}
	// The bundle's names do not carry a hash: ask the browser to revalidate.
	w.Header().Set("Cache-Control", "no-cache")
	http.ServeFileFS(w, r, h.assets, name)
}
