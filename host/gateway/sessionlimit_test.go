package gateway_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"atelier/host/gateway"
)

// TestSessionLimits: the open WebSocket sessions are bounded per client address (an IPv6
// address by its /64) and in all; a refusal comes before the upgrade, says which bound and
// what to do, and a closed session frees its place.
func TestSessionLimits(t *testing.T) {
	url, _ := serveConfig(t, func(c *gateway.Config) {
		c.MaxSessionsPerAddress, c.MaxSessions = 2, 4
		c.TrustedProxy = gateway.TrustedProxy{Header: "X-Forwarded-For"} // clients behind the test's loopback "proxy"
	})
	ws := "ws" + strings.TrimPrefix(url, "http") + "/api"
	dial := func(client string) (*websocket.Conn, int, string) {
		c, resp, err := websocket.DefaultDialer.Dial(ws, http.Header{"X-Forwarded-For": {client}})
		if err == nil {
			t.Cleanup(func() { c.Close() })
			return c, http.StatusSwitchingProtocols, ""
		}
		if resp == nil {
			t.Fatalf("dial as %s: %v", client, err)
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.Header.Get("Retry-After") == "" {
			t.Errorf("refusal of %s without Retry-After", client)
		}
		return nil, resp.StatusCode, string(body)
	}
	mustOpen := func(client string) *websocket.Conn {
		c, status, body := dial(client)
		if c == nil {
			t.Fatalf("session of %s refused: %d %s", client, status, body)
		}
		return c
	}
	refused := func(client string, wantStatus int, want string) {
		t.Helper()
		if c, status, body := dial(client); c != nil || status != wantStatus || !strings.Contains(body, want) {
			t.Fatalf("session of %s: %d %q, want %d saying %q", client, status, body, wantStatus, want)
		}
	}
	first := mustOpen("198.51.100.1")
	mustOpen("198.51.100.1")
	refused("198.51.100.1", http.StatusTooManyRequests, "--max-sessions-per-address")
	mustOpen("2001:db8::1")
	mustOpen("2001:db8::2")                                                          // the same /64: its second
	refused("2001:db8::3", http.StatusTooManyRequests, "from your address (2 open)") // and its third
	refused("198.51.100.2", http.StatusServiceUnavailable, "--max-sessions")         // the server's fifth
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if c, _, _ := dial("198.51.100.2"); c != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed session did not free its place")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
