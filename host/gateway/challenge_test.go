package gateway_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestUnauthorizedChallenges: every 401 carries WWW-Authenticate: Bearer, /mcp included.
func TestUnauthorizedChallenges(t *testing.T) {
	url, _ := serve(t, false)
	for _, tc := range []struct{ method, path, token string }{
		{http.MethodGet, "/metrics", ""},
		{http.MethodGet, "/metrics", "Bearer atl_wrong"},
		{http.MethodPost, "/mcp", ""},
		{http.MethodPost, "/mcp", "Bearer atl_wrong"},
		{http.MethodGet, "/mcp", ""},
	} {
		req, err := http.NewRequest(tc.method, url+tc.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.token != "" {
			req.Header.Set("Authorization", tc.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s %s (Authorization %q): %s, WWW-Authenticate %q; want 401 with a Bearer challenge",
				tc.method, tc.path, tc.token, resp.Status, resp.Header.Get("WWW-Authenticate"))
		}
	}
}

// TestHeadLikeGet: HEAD answers wherever GET does, with the status of GET (the shell's asset
// answers 404 to both when scripts/setup.sh has not built it).
func TestHeadLikeGet(t *testing.T) {
	url, admin := serve(t, false)
	for _, path := range []string{"/", "/healthz", "/metrics", "/assets/shell.js", "/api"} {
		status := func(method string) int {
			req, err := http.NewRequest(method, url+path, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+admin)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			return resp.StatusCode
		}
		if get, head := status(http.MethodGet), status(http.MethodHead); get != head || head == http.StatusMethodNotAllowed {
			t.Errorf("%s: GET %d, HEAD %d; want HEAD to answer like GET", path, get, head)
		}
	}
}
