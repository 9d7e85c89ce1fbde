package provider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestEgress checks that a loopback model server is refused by the default client and by one
// that allows another address, and reached when its exact address is allowed.
func TestEgress(t *testing.T) {
	body := []byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	cfg := serveBytes(t, KindAnthropic, body, len(body))
	addr := strings.TrimPrefix(cfg.BaseURL, "http://")
	other, err := NewHTTPClient(EgressOptions{AllowAddrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, h := range map[string]*http.Client{"default": nil, "other_address": other} {
		t.Run("refused/"+name, func(t *testing.T) {
			c := cfg
			c.HTTP = h
			cl, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.Stream(context.Background(), Request{}, func(Event) error { return nil })
			if !errors.Is(err, ErrEgress) || !strings.Contains(err.Error(), "--model-allow-addr "+addr) {
				t.Errorf("error %v, want ErrEgress naming --model-allow-addr %s", err, addr)
			}
		})
	}
	t.Run("allowed", func(t *testing.T) {
		cl, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r, err := cl.Stream(context.Background(), Request{}, func(Event) error { return nil }); err != nil || r.Stop != StopEnd {
			t.Errorf("reply %+v, error %v", r, err)
		}
	})
}

// TestCheckAddr checks the address rule on the kinds of non-public address, IPv4-mapped ones
// included, and that an allowed entry allows only its own port.
func TestCheckAddr(t *testing.T) {
	allowed := []string{"127.0.0.1:11434", "[::1]:8080", "10.1.2.3:443", "93.184.216.34:443", "[::ffff:127.0.0.1]:11434", "[2606:4700::1111]:443"}
	refused := []string{"127.0.0.1:11435", "[::1]:8081", "10.1.2.3:80", "192.168.1.1:443", "169.254.169.254:80", "[fe80::1]:443", "[::ffff:10.0.0.1]:443", "0.0.0.0:80", "100.64.0.1:443", "[fd00::1]:443", "not-an-address"}
	rules, err := allowMap([]string{"127.0.0.1:11434", "[::1]:8080", "10.1.2.3:443"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range allowed {
		if err := checkAddr(a, rules, "the model endpoint", "--model-allow-addr"); err != nil {
			t.Errorf("%s refused: %v", a, err)
		}
	}
	for _, a := range refused {
		if err := checkAddr(a, rules, "the model endpoint", "--model-allow-addr"); !errors.Is(err, ErrEgress) {
			t.Errorf("%s: %v, want refused", a, err)
		}
	}
	if _, err := NewHTTPClient(EgressOptions{AllowAddrs: []string{"localhost:11434"}}); err == nil || !strings.Contains(err.Error(), "not an ip:port") {
		t.Errorf("a host name entry gave %v, want refused", err)
	}
}

// TestNoRedirect checks that a redirect is returned as a status error naming the target, not
// followed (it could lead to an address the egress check never saw as the endpoint).
func TestNoRedirect(t *testing.T) {
	followed := false
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { followed = true }))
	defer target.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/v1/chat/completions", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	h, err := NewHTTPClient(EgressOptions{AllowAddrs: []string{strings.TrimPrefix(srv.URL, "http://"), strings.TrimPrefix(target.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Kind: KindOpenAI, BaseURL: srv.URL + "/v1", Model: "m", HTTP: h})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Stream(context.Background(), Request{}, func(Event) error { return nil })
	var pe *Error
	if !errors.As(err, &pe) || pe.Status != http.StatusTemporaryRedirect || !strings.Contains(err.Error(), "redirects are not followed") || followed {
		t.Errorf("error %v (followed: %v), want a 307 status error", err, followed)
	}
}
