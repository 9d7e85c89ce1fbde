package shell

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
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

var nonceRE = regexp.MustCompile(`'nonce-([A-Za-z0-9_-]+)'`)

func TestPageHasPolicyAndFreshNonce(t *testing.T) {
	h := New(built)
	seen := map[string]bool{}
	for range 3 {
		r := get(t, h, http.MethodGet, "/")
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET / = %d, want 200", r.StatusCode)
		}
		csp := r.Header.Get("Content-Security-Policy")
		m := nonceRE.FindStringSubmatch(csp)
		if m == nil {
			t.Fatalf("Content-Security-Policy %q has no script nonce", csp)
		}
		for _, want := range []string{"default-src 'none'", "object-src 'none'", "frame-ancestors 'none'", "base-uri 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
			}
		}
		if strings.Contains(csp, "unsafe-eval") || strings.Contains(csp, "script-src 'self' 'unsafe-inline'") {
			t.Errorf("Content-Security-Policy %q lets scripts run that the shell does not need", csp)
		}
		page := body(t, r)
		if !strings.Contains(page, `nonce="`+m[1]+`" src="/assets/shell.js"`) {
			t.Errorf("the page's script does not carry the policy's nonce %s:\n%s", m[1], page)
		}
		if seen[m[1]] {
			t.Errorf("nonce %s served twice", m[1])
		}
		seen[m[1]] = true
		if got := r.Header.Get("X-Frame-Options"); got != "DENY" {
			t.Errorf("X-Frame-Options = %q, want DENY", got)
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
