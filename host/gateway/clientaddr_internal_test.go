package gateway

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestTrustedProxyHeader(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	for _, c := range []struct {
		name, header, peer, value, want string
		proxies                         []netip.Prefix
	}{
		{"not configured", "", "10.0.0.1:5000", "203.0.113.9", "10.0.0.1:5000", proxies},
		{"from a trusted proxy", "X-Forwarded-For", "10.0.0.1:5000", "203.0.113.9", "203.0.113.9:0", proxies},
		{"from anyone else", "X-Forwarded-For", "198.51.100.1:5000", "203.0.113.9", "198.51.100.1:5000", proxies},
		{"a forged entry left of the client", "X-Forwarded-For", "10.0.0.1:5000", "192.0.2.1, 203.0.113.9, 10.0.0.2", "203.0.113.9:0", proxies},
		{"only proxies", "X-Forwarded-For", "10.0.0.1:5000", "10.0.0.3, 10.0.0.2", "10.0.0.3:0", proxies},
		{"no header", "X-Forwarded-For", "10.0.0.1:5000", "", "10.0.0.1:5000", proxies},
		{"junk", "X-Forwarded-For", "10.0.0.1:5000", "unknown", "10.0.0.1:5000", proxies},
		{"junk left of the client", "X-Forwarded-For", "10.0.0.1:5000", "junk, 203.0.113.9", "203.0.113.9:0", proxies},
		{"another header", "X-Real-IP", "10.0.0.1:5000", "[2001:db8::1]:443", "[2001:db8::1]:0", proxies},
		{"loopback by default", "X-Forwarded-For", "127.0.0.1:5000", "203.0.113.9", "203.0.113.9:0", nil},
		{"only loopback by default", "X-Forwarded-For", "10.0.0.1:5000", "203.0.113.9", "10.0.0.1:5000", nil},
	} {
		var got string
		h := TrustedProxy{Header: c.header, Proxies: c.proxies}.wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r.RemoteAddr }))
		r := httptest.NewRequest(http.MethodGet, "/healthz", nil)
		r.RemoteAddr = c.peer
		if c.value != "" {
			r.Header.Set(cmp.Or(c.header, "X-Forwarded-For"), c.value)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
		if got != c.want {
			t.Errorf("%s: the handler saw %q, want %q", c.name, got, c.want)
		}
	}
}

// TestTrustedProxyHeaderLines: a header sent as several lines reads as one list, right to left.
func TestTrustedProxyHeaderLines(t *testing.T) {
	tp := TrustedProxy{Header: "X-Forwarded-For", Proxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	for _, c := range []struct {
		lines []string
		want  string
	}{
		{[]string{"192.0.2.1, 203.0.113.9", "10.0.0.2"}, "203.0.113.9"},
		{[]string{"203.0.113.9", ""}, ""},
		{[]string{"10.0.0.3", "10.0.0.2, 10.0.0.4"}, "10.0.0.3"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.RemoteAddr = "10.0.0.1:5000"
		r.Header["X-Forwarded-For"] = c.lines
		got := ""
		if a, ok := tp.clientAddr(r); ok {
			got = a.String()
		}
		if got != c.want {
			t.Errorf("%q: client %q, want %q", c.lines, got, c.want)
		}
	}
}
