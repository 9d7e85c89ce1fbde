package capnweb_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"atelier/capnweb"
)

// startNodeServer starts the official capnweb server (tests/capnweb/node/server.mjs) and returns
// its base URL, or skips the test if node or its npm packages are missing.
func startNodeServer(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs("../tests/capnweb/node")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "server.mjs")); err != nil {
		t.Skip("tests/capnweb/node/server.mjs is missing")
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "capnweb", "package.json")); err != nil {
		t.Skip("npm packages not installed: run `npm ci` in tests/capnweb/node")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	cmd := exec.Command("node", "server.mjs", "--port", "0")
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "listening on http://") {
		t.Fatalf("node server did not start: %q %v", line, err)
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
}

// TestGoClientAgainstNodeServer runs the part-A scenarios with the Go client against the
// official JavaScript server, over WebSocket and HTTP batch.
func TestGoClientAgainstNodeServer(t *testing.T) {
	base := startNodeServer(t)
	wsURL := "ws" + strings.TrimPrefix(base, "http") + "/ws"
	for _, sc := range wsScenarios {
		t.Run(sc.name, func(t *testing.T) {
			checkScenario(t, sc, true, func() *capnweb.Session {
				s, err := capnweb.DialWebSocket(context.Background(), wsURL, capnweb.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}, nil)
		})
	}
	for _, sc := range batchScenarios {
		t.Run(sc.name, func(t *testing.T) {
			checkScenario(t, sc, true, func() *capnweb.Session {
				return capnweb.NewHTTPBatchSession(context.Background(), base+"/batch", capnweb.Options{}, nil)
			}, nil)
		})
	}
}
