package gateway_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"atelier/host/gateway"
)

// TestHostsAllows checks the allow-list over binds, ports, IPv6, case and trailing dots.
func TestHostsAllows(t *testing.T) {
	public, _ := url.Parse("https://Atelier.Example.com")
	proxied, _ := url.Parse("http://10.1.2.3:9000/base")
	for _, tc := range []struct {
		name  string
		cfg   gateway.HostsConfig
		allow []string
		deny  []string
	}{
		{name: "loopback bind", cfg: gateway.HostsConfig{Listen: "127.0.0.1:8787"},
			allow: []string{"127.0.0.1:8787", "localhost:8787", "LOCALHOST:8787", "localhost.:8787", "[::1]:8787", "[0:0:0:0:0:0:0:1]:8787", "localhost:08787"},
			deny: []string{"evil.example:8787", "localhost:8788", "localhost", "127.0.0.1", "", "127.1:8787", "[::1]", "localhost:0",
				"localhost:99999", "localhost:", "127.0.0.2:8787", "[::ffff:127.0.0.1]:8787", "::1:8787", "localhost..:8787", "a b:8787"}},
		{name: "IPv6 loopback bind", cfg: gateway.HostsConfig{Listen: "[::1]:8787"},
			allow: []string{"[::1]:8787", "localhost:8787", "127.0.0.1:8787"}, deny: []string{"evil.example:8787"}},
		{name: "loopback bind on port 80", cfg: gateway.HostsConfig{Listen: "127.0.0.1:80"},
			allow: []string{"localhost", "localhost:80", "127.0.0.1"}, deny: []string{"evil.example"}},
		{name: "wildcard bind", cfg: gateway.HostsConfig{Listen: "0.0.0.0:8787"},
			allow: []string{"localhost:8787", "127.0.0.1:8787"}, deny: []string{"10.0.0.5:8787", "evil.example:8787", "0.0.0.0:8787"}},
		{name: "wildcard bind with allowed hosts", cfg: gateway.HostsConfig{Listen: ":8787", Allowed: []string{"10.0.0.5:8787", "Box.LAN", "[fd00::5]:8787"}},
			allow: []string{"10.0.0.5:8787", "box.lan:8787", "box.lan.:1234", "box.lan", "[FD00::5]:8787", "[fd00:0::5]:8787", "localhost:8787"},
			deny:  []string{"10.0.0.5:8788", "evil.example:8787", "[fd00::6]:8787", "sub.box.lan:8787"}},
		{name: "specific bind", cfg: gateway.HostsConfig{Listen: "10.0.0.5:8787"},
			allow: []string{"10.0.0.5:8787"}, deny: []string{"localhost:8787", "127.0.0.1:8787", "evil.example:8787"}},
		{name: "public URL", cfg: gateway.HostsConfig{Listen: "127.0.0.1:8787", PublicURL: public},
			allow: []string{"atelier.example.com", "atelier.example.com:443", "ATELIER.example.com.", "localhost:8787"},
			deny:  []string{"atelier.example.com:8787", "example.com", "evil.example"}},
		{name: "public URL with a port", cfg: gateway.HostsConfig{Listen: "0.0.0.0:8787", PublicURL: proxied},
			allow: []string{"10.1.2.3:9000", "10.1.2.3", "localhost:8787"}, deny: []string{"10.1.2.3:8787"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, err := gateway.NewHosts(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, host := range tc.allow {
				if !h.Allows(host) {
					t.Errorf("Allows(%q) = false, want true", host)
				}
			}
			for _, host := range tc.deny {
				if h.Allows(host) {
					t.Errorf("Allows(%q) = true, want false", host)
				}
			}
		})
	}
}

// TestHostsConfig: Unconfigured is set only for a wildcard bind with nothing else to answer;
// bad names are refused.
func TestHostsConfig(t *testing.T) {
	public, _ := url.Parse("https://atelier.example.com")
	for cfg, want := range map[*gateway.HostsConfig]bool{
		{Listen: "0.0.0.0:8787"}:                        true,
		{Listen: "[::]:8787"}:                           true,
		{Listen: ":8787"}:                               true,
		{Listen: ":8787", Allowed: []string{"box.lan"}}: false,
		{Listen: "0.0.0.0:8787", PublicURL: public}:     false,
		{Listen: "127.0.0.1:8787"}:                      false,
	} {
		h, err := gateway.NewHosts(*cfg)
		if err != nil || h.Unconfigured() != want {
			t.Errorf("NewHosts(%+v): Unconfigured() = %v, %v; want %v", *cfg, h != nil && h.Unconfigured(), err, want)
		}
	}
	ftp, _ := url.Parse("ftp://atelier.example.com")
	for _, cfg := range []gateway.HostsConfig{
		{Listen: "8787"}, {Listen: "127.0.0.1:8787", PublicURL: ftp},
		{Listen: "127.0.0.1:8787", Allowed: []string{"box.lan:http"}}, {Listen: "127.0.0.1:8787", Allowed: []string{"::1"}},
		{Listen: "127.0.0.1:8787", Allowed: []string{""}},
	} {
		if _, err := gateway.NewHosts(cfg); err == nil {
			t.Errorf("NewHosts(%+v) = nil error, want one", cfg)
		}
	}
}

// TestHostsCheckOrigin compares Origin with the list, never with the request's Host.
func TestHostsCheckOrigin(t *testing.T) {
	public, _ := url.Parse("https://atelier.example.com")
	h, err := gateway.NewHosts(gateway.HostsConfig{Listen: "127.0.0.1:8787", PublicURL: public})
	if err != nil {
		t.Fatal(err)
	}
	for origin, want := range map[string]bool{
		"":                                 true,
		"http://localhost:8787":            true,
		"http://127.0.0.1:8787":            true,
		"https://atelier.example.com":      true,
		"https://atelier.example.com:443":  true,
		"http://evil.example:8787":         false,
		"null":                             false,
		"http://localhost:8787/path":       false,
		"file://localhost:8787":            false,
		"https://atelier.example.com:8443": false,
	} {
		r := httptest.NewRequest("GET", "/api", nil)
		r.Host = strings.TrimPrefix(strings.TrimPrefix(origin, "http://"), "https://")
		if origin != "" {
			r.Header.Set("Origin", origin)
		}
		if got := h.CheckOrigin(r); got != want {
			t.Errorf("CheckOrigin(Origin %q, Host %q) = %v, want %v", origin, r.Host, got, want)
		}
	}
}

// TestHostsWrap: a refused host gets 421 with a plain-text line naming the flag, and the
// handler behind does not run.
func TestHostsWrap(t *testing.T) {
	h, err := gateway.NewHosts(gateway.HostsConfig{Listen: "127.0.0.1:8787"})
	if err != nil {
		t.Fatal(err)
	}
	ran := false
	srv := h.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ran = true }))
	for host, want := range map[string]int{"localhost:8787": http.StatusOK, "evil.example:8787": http.StatusMisdirectedRequest} {
		ran = false
		r := httptest.NewRequest("GET", "/", nil)
		r.Host = host
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, r)
		if w.Code != want || ran != (want == http.StatusOK) {
			t.Errorf("Host %s: status %d, handler ran %v; want %d", host, w.Code, ran, want)
		}
		if body := w.Body.String(); want != http.StatusOK && (!strings.Contains(body, "--allowed-host") || strings.Count(body, "\n") != 1 ||
			!strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain")) {
			t.Errorf("Host %s: body %q (%s), want one plain-text line naming --allowed-host", host, body, w.Header().Get("Content-Type"))
		}
	}
}
