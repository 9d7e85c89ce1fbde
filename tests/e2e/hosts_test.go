package e2e

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gorilla/websocket"

	"atelier/tests/serveproc"
)

// TestServeAnswersOnlyItsHosts: a real `atelier serve` on loopback refuses a WebSocket to /api
// and a fetch of / whose Host is another name (what a DNS-rebinding page sends) with 421 and a
// line naming --allowed-host, refuses a page of another origin on its own host, and serves
// both under its loopback names, and under a name given with --allowed-host.
func TestServeAnswersOnlyItsHosts(t *testing.T) {
	bin := serveproc.Binary(t, tmpDir)
	srv := serveproc.Launch(t, bin, filepath.Join(t.TempDir(), "atelier.db"), filepath.Join(tmpDir, "cache"),
		"--allowed-host", "atelier.test").Wait(t)
	addr := strings.TrimSuffix(strings.TrimPrefix(srv.URL, "ws://"), "/api")
	port := addr[strings.LastIndexByte(addr, ':'):]

	get := func(host string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", "http://"+addr+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	dial := func(host, origin string) int {
		t.Helper()
		h := http.Header{"Host": {host}}
		if origin != "" {
			h.Set("Origin", origin)
		}
		c, resp, err := websocket.DefaultDialer.Dial(srv.URL, h)
		if err == nil {
			c.Close()
			return http.StatusSwitchingProtocols
		}
		if resp == nil {
			t.Fatalf("WebSocket with Host %s: %v", host, err)
		}
		return resp.StatusCode
	}

	evil := "evil.example" + port
	if code, body := get(evil); code != http.StatusMisdirectedRequest || !strings.Contains(body, "--allowed-host") {
		t.Errorf("GET / with Host %s = %d %q, want 421 naming --allowed-host", evil, code, body)
	}
	if code := dial(evil, "http://"+evil); code != http.StatusMisdirectedRequest {
		t.Errorf("WebSocket to /api with Host %s = %d, want 421", evil, code)
	}
	if code := dial("localhost"+port, "http://"+evil); code != http.StatusForbidden {
		t.Errorf("WebSocket to /api from origin http://%s = %d, want 403", evil, code)
	}
	for _, host := range []string{addr, "localhost" + port, "[::1]" + port, "atelier.test" + port} {
		if code, body := get(host); code != http.StatusOK || !strings.Contains(body, "<html") {
			t.Errorf("GET / with Host %s = %d, want the shell", host, code)
		}
		if code := dial(host, "http://"+host); code != http.StatusSwitchingProtocols {
			t.Errorf("WebSocket to /api with Host %s = %d, want 101", host, code)
		}
	}
}
