package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/store"
)

// TestTrustedProxyHeaderSeparatesClients sends bad tokens to /metrics as one client behind a
// proxy on loopback: with the proxy's header trusted, another client behind it is not held
// back; without, all share the proxy's address.
func TestTrustedProxyHeaderSeparatesClients(t *testing.T) {
	for _, trusted := range []bool{true, false} {
		db, err := store.Open(filepath.Join(t.TempDir(), "a.db"))
		if err != nil {
			t.Fatal(err)
		}
		k := kernel.New(kernel.Config{Store: db})
		cfg := gateway.Config{Kernel: k}
		if trusted {
			cfg.TrustedProxy = gateway.TrustedProxy{Header: "X-Forwarded-For"}
		}
		srv := httptest.NewServer(gateway.New(cfg))
		from := func(client string) string {
			req, err := http.NewRequest(http.MethodGet, srv.URL+"/metrics", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer atl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA")
			req.Header.Set("X-Forwarded-For", client)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return string(body)
		}
		for range 21 {
			from("203.0.113.1")
		}
		if body := from("203.0.113.1"); !strings.Contains(body, "too many failed attempts") {
			t.Fatalf("trusted %v: the guessing client is not held back: %q", trusted, body)
		}
		body := from("203.0.113.2")
		if held := strings.Contains(body, "too many failed attempts"); held == trusted {
			t.Fatalf("trusted %v: another client behind the proxy got %q", trusted, body)
		}
		srv.Close()
		k.Close()
		db.Close()
	}
}
