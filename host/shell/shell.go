// Package shell serves Atelier's browser shell: the page at / and its bundled assets under
// /assets/. The assets are built from web/ into dist/ by `go run ./host/shell/build` (run by
// scripts/setup.sh) and embedded in the binary; without them / answers 503 and says so.
//
// Every page carries a Content-Security-Policy with a fresh script nonce. The shell renders
// gadget UIs in sandboxed srcdoc frames, which inherit this policy on top of their own, so the
// frame's scripts carry the same nonce (see docs/gadget-ui.md).
package shell

import (
	"crypto/rand"
	"embed"
	"encoding/base64"
	"fmt"
	"html/template"
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

var page = template.Must(template.New("index").Parse(indexHTML))

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
	case strings.HasPrefix(r.URL.Path, "/assets/"):
		h.serveAsset(w, r)
	default:
		http.NotFound(w, r)
	}
}

// CSP returns the page's Content-Security-Policy for a script nonce. Gadget frames inherit it:
// their scripts need the nonce, their inline styles 'unsafe-inline', their data: images
// img-src data:.
func CSP(nonce string) string {
	return "default-src 'none'; script-src 'self' 'nonce-" + nonce + "'; style-src 'self' 'unsafe-inline'; " +
		"img-src 'self' data:; font-src 'self' data:; connect-src 'self'; frame-src 'self'; " +
		"worker-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
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
	nonce := newNonce()
	hdr.Set("Content-Security-Policy", CSP(nonce))
	hdr.Set("Content-Type", "text/html; charset=utf-8")
	if err := page.Execute(w, struct{ Nonce string }{nonce}); err != nil {
		http.Error(w, "shell: render page: "+err.Error(), http.StatusInternalServerError)
	}
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

// newNonce returns 144 random bits for one page's script nonce.
func newNonce() string {
	var b [18]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
