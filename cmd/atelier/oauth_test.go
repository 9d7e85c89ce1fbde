package main

import (
	"context"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
	"atelier/tests/oauthop"
)

// TestAccountConnectOAuth: the admin configures a gatekeeper's OAuth client from a secret
// file; `account connect` on it prints the provider's URL and waits until the user signed in
// there (against a real OpenID provider) and the account exists; `account list` shows it.
func TestAccountConnectOAuth(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: builds the probe gatekeeper and starts an OpenID provider")
	}
	p, err := oauthop.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rs := oauthop.StartResourceServer(p)
	defer rs.Close()
	dir := t.TempDir()
	archive, err := gatekeeper.Pack(oauthop.Manifest("calendar", p, rs), guesttest.Bytes(t, "tests/gatekeeper/guests/probe"))
	if err != nil {
		t.Fatal(err)
	}
	pkg, secretFile, creds := filepath.Join(dir, "calendar.gkp"), filepath.Join(dir, "secret.txt"), filepath.Join(dir, "creds.json")
	const clientID, secret = "atelier-cli", "cli-client-secret-5e2f9a"
	for path, data := range map[string]string{pkg: string(archive), secretFile: secret + "\n", creds: `{"token": "x"}`} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	isolate(t)
	server, out := serveOut(t, "--gatekeeper-allow-addr", rs.Addr+","+p.Addr)
	t.Setenv("ATELIER_SERVER", server)
	u, _ := url.Parse(server)
	p.Register(clientID, secret, "http://"+u.Host+"/oauth/callback")
	m := adminTokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("atelier serve printed no admin token: %s", out.String())
	}
	t.Setenv("ATELIER_TOKEN", m[1])
	ok(t, "gatekeeper", "install", pkg)
	fails(t, 2, []string{"gatekeeper", "oauth-client", "calendar"}, "--client-id")
	want(t, ok(t, "gatekeeper", "oauth-client", "calendar", "--client-id", clientID, "--client-secret-file", secretFile),
		"Set the OAuth client of calendar to "+clientID)
	t.Setenv("ATELIER_TOKEN", "")
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	fails(t, 1, []string{"gatekeeper", "oauth-client", "calendar", "--client-id", "x"}, "admin")

	resource := rs.URL + "/notebooks/work"
	fails(t, 1, []string{"account", "connect", "calendar", resource, "--credentials-file", creds}, "connects by OAuth")
	var stdout, stderr lockedBuffer
	done := make(chan int, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	go func() {
		done <- run(ctx, []string{"account", "connect", "calendar", resource}, strings.NewReader(""), &stdout, &stderr)
	}()
	urlLine := regexp.MustCompile(`(?m)^  (http://\S+/auth\?\S+)$`)
	var authURL string
	for authURL == "" {
		if m := urlLine.FindStringSubmatch(stderr.String()); m != nil {
			authURL = m[1]
			break
		}
		select {
		case code := <-done:
			t.Fatalf("account connect exited %d before printing the URL: %s%s", code, stdout.String(), stderr.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	callback, err := p.Authorize(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(callback)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("callback: HTTP %d", resp.StatusCode)
	}
	if code := <-done; code != 0 || !strings.Contains(stdout.String(), "Connected calendar "+resource) {
		t.Fatalf("account connect: exit %d\nstdout: %s\nstderr: %s", code, stdout.String(), stderr.String())
	}
	want(t, ok(t, "account", "list"), resource, "ok")
	if strings.Contains(stdout.String()+stderr.String(), secret) {
		t.Fatal("the client secret is in the CLI's output")
	}
}
