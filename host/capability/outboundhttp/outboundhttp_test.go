package outboundhttp

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
)

func TestPublic(t *testing.T) {
	for _, a := range []string{"127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"0.0.0.0", "::", "100.64.0.1", "fc00::1", "fe80::1", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1",
		"64:ff9b::7f00:1", "198.18.0.1", "255.255.255.255"} {
		if Public(netip.MustParseAddr(a)) {
			t.Errorf("%s counted as public", a)
		}
	}
	for _, a := range []string{"93.184.215.14", "2606:4700::6810:84e5", "1.1.1.1"} {
		if !Public(netip.MustParseAddr(a)) {
			t.Errorf("%s counted as private", a)
		}
	}
}

func TestCheckDial(t *testing.T) {
	allowed := map[netip.AddrPort]bool{netip.MustParseAddrPort("127.0.0.1:8080"): true}
	if err := checkDial("127.0.0.1:8080", allowed); err != nil {
		t.Fatal(err)
	}
	if err := checkDial("[::ffff:127.0.0.1]:8080", allowed); err != nil {
		t.Fatalf("an IPv4-mapped form of an allowed address: %v", err)
	}
	for _, a := range []string{"127.0.0.1:8081", "[::1]:8080", "10.0.0.1:8080", "localhost:8080"} {
		if checkDial(a, allowed) == nil {
			t.Errorf("dial %s allowed", a)
		}
	}
}

func TestPolicyCheck(t *testing.T) {
	p := &Policy{
		Schemes:  []string{"https"},
		Hosts:    []string{"api.example.com", "files.example.com:8443"},
		Prefixes: []string{"https://api.example.com/v1/notebooks/work", "https://files.example.com:8443/work/"},
	}
	for _, ok := range []string{
		"https://api.example.com/v1/notebooks/work",
		"https://API.example.com:443/v1/notebooks/work/notes?limit=3#frag",
		"https://files.example.com:8443/work/a.txt",
	} {
		if _, err := p.Check(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for bad, want := range map[string]string{
		"https://api.example.com/v1/notebooks/workshop":               "outside",
		"https://api.example.com/v1/notebooks/work/../home":           `".."`,
		"https://api.example.com/v1/notebooks/work/%2E%2E/home":       "%2e",
		"https://api.example.com/v1/notebooks/work//x":                `"//"`,
		"https://api.example.com/v1/notebooks/work\\..\\home":         "%5c",
		"http://api.example.com/v1/notebooks/work":                    "scheme",
		"https://evil.example.com/v1/notebooks/work":                  "host",
		"https://api.example.com.evil.com/v1/notebooks/work":          "host",
		"https://files.example.com/work/a.txt":                        "host",
		"https://u:p@api.example.com/v1/notebooks/work":               "user information",
		"/v1/notebooks/work":                                          "not absolute",
		"https:api.example.com/v1":                                    "not absolute",
		"https://api.example.com/v1/notebooks/home?x=/notebooks/work": "outside",
	} {
		_, err := p.Check(bad)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want an error about %q", bad, err, want)
		}
	}
}

// TestClientDo sends through Client.Do to a loopback server: the allowed address is reached
// with the policy's header added, and refusals come back as *Error with their kind before
// anything is sent.
func TestClientDo(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		w.Write([]byte("hello"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("the address that is not allowed was reached: %s", r.URL)
	}))
	defer other.Close()
	otherAddr := strings.TrimPrefix(other.URL, "http://")
	c, err := NewClient(Options{AllowAddrs: []string{addr}, MaxRequestBody: 8})
	if err != nil {
		t.Fatal(err)
	}
	p := &Policy{
		Schemes: []string{"http"}, Hosts: []string{addr, otherAddr},
		Prefixes: []string{srv.URL + "/api/work", other.URL + "/api/work"},
		Headers:  []Header{{Name: "Authorization", Value: "Bearer secret"}},
	}
	ctx := context.Background()
	resp, err := c.Do(ctx, p, Request{Method: "GET", URL: srv.URL + "/api/work/notes", Headers: []Header{{Name: "Accept", Value: "text/plain"}}})
	if err != nil || resp.Status != 200 || string(resp.Body) != "hello" {
		t.Fatalf("allowed request: %+v %v", resp, err)
	}
	for _, c2 := range []struct {
		r    Request
		kind string
	}{
		{Request{Method: "GET", URL: srv.URL + "/api/home"}, Denied},
		{Request{Method: "GET", URL: other.URL + "/api/work"}, Denied},
		{Request{Method: "GET", URL: srv.URL + "/api/work", Headers: []Header{{Name: "authorization", Value: "x"}}}, Denied},
		{Request{Method: "TRACE", URL: srv.URL + "/api/work"}, Invalid},
		{Request{Method: "POST", URL: srv.URL + "/api/work", Body: []byte("123456789")}, TooLarge},
	} {
		_, err := c.Do(ctx, p, c2.r)
		var e *Error
		if !errors.As(err, &e) || e.Kind != c2.kind || strings.Contains(e.Message, "secret") {
			t.Errorf("%s %s: got %v, want a %s error", c2.r.Method, c2.r.URL, err, c2.kind)
		}
	}
	if len(got) != 1 || got[0] != "GET /api/work/notes Bearer secret" {
		t.Fatalf("the server saw %q", got)
	}
}
