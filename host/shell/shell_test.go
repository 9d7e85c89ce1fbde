package shell

import (
	"crypto/sha256"
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/fstest"
)

func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var built = fstest.MapFS{
	"shell.js":  {Data: []byte("console.log('shell')")},
	"shell.css": {Data: []byte("body{}")},
}

func TestPagePolicy(t *testing.T) {
	r := get(t, New(built), http.MethodGet, "/")
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET / = %d, want 200", r.StatusCode)
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self';", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "nonce-") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
		t.Errorf("Content-Security-Policy %q lets scripts run that the shell does not need", csp)
	}
	if page := body(t, r); !strings.Contains(page, `<script type="module" src="/assets/shell.js">`) {
		t.Errorf("the page does not load the bundle:\n%s", page)
	}
	if got := r.Header.Get("X-Frame-Options"); got != "DENY" {
		t.Errorf("X-Frame-Options = %q, want DENY", got)
	}
}

// The gadget frame's document runs one inline script, allowed by its hash in both policies;
// the first policy is the reference's (section 3.2) plus the sandbox, the second allows no
// script URL but data:.
func TestGadgetFrameDocument(t *testing.T) {
	r := get(t, New(built), http.MethodGet, framePath)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d, want 200", framePath, r.StatusCode)
	}
	doc := body(t, r)
	if n := strings.Count(doc, "<script"); n != 1 {
		t.Fatalf("the frame document has %d scripts, want 1:\n%s", n, doc)
	}
	_, rest, _ := strings.Cut(doc, "<script>")
	script, _, _ := strings.Cut(rest, "</script>")
	sum := sha256.Sum256([]byte(script))
	hash := base64.StdEncoding.EncodeToString(sum[:])
	policies := r.Header.Values("Content-Security-Policy")
	if len(policies) != 2 {
		t.Fatalf("the frame document has %d policies, want 2: %q", len(policies), policies)
	}
	for i, want := range []string{"script-src 'sha256-" + hash + "' 'strict-dynamic';", "script-src 'sha256-" + hash + "' data:"} {
		if !strings.Contains(policies[i], want) || strings.Count(policies[i], "script-src") != 1 {
			t.Errorf("frame policy %d %q does not allow exactly %q", i, policies[i], want)
		}
	}
	for _, want := range []string{"sandbox allow-scripts;", "default-src 'none'", "connect-src 'none'", "frame-src 'none'", "worker-src 'none'", "form-action 'none'", "object-src 'none'", "base-uri 'none'", "frame-ancestors 'self'"} {
		if !strings.Contains(policies[0], want) {
			t.Errorf("frame policy %q lacks %q", policies[0], want)
		}
	}
}

func TestAssets(t *testing.T) {
	h := New(built)
	r := get(t, h, http.MethodGet, "/assets/shell.js")
	if r.StatusCode != http.StatusOK || body(t, r) != "console.log('shell')" {
		t.Fatalf("GET /assets/shell.js = %d", r.StatusCode)
	}
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("Content-Type of shell.js = %q", ct)
	}
	if r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Error("assets are served without X-Content-Type-Options: nosniff")
	}
	for _, path := range []string{"/assets/", "/assets/.", "/assets/missing.js", "/assets/../shell.go", "/assets/a/../shell.js", "/index.html", "/shell.js"} {
		if r := get(t, h, http.MethodGet, path); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", path, r.StatusCode)
		}
	}
	if r := get(t, h, http.MethodPost, "/"); r.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST / = %d, want 405", r.StatusCode)
	}
}

func TestNotBuilt(t *testing.T) {
	h := New(fstest.MapFS{"README.md": {Data: []byte("placeholder")}})
	if h.Built() {
		t.Fatal("Built() with no shell.js")
	}
	r := get(t, h, http.MethodGet, "/")
	if r.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("GET / without the bundle = %d, want 503", r.StatusCode)
	}
	if b := body(t, r); !strings.Contains(b, "scripts/setup.sh") {
		t.Errorf("the 503 page does not say to run scripts/setup.sh:\n%s", b)
	}
}

// The embedded bundle is whatever the build left in dist/: without shell.js, the 503 page.
func TestEmbedded(t *testing.T) {
	h := Embedded()
	want := http.StatusServiceUnavailable
	if h.Built() {
		want = http.StatusOK
	}
	if r := get(t, h, http.MethodGet, "/"); r.StatusCode != want {
		t.Fatalf("GET / = %d, want %d (built: %v)", r.StatusCode, want, h.Built())
	}
}
