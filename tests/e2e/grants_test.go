package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"atelier/sdk/guesttest"
	"atelier/tests/serveproc"
)

// TestCLIRefusesGrantsTheHostCannotProvide: `atelier gadget deploy --grant` against a real
// server exits 1 for a socket, HTTP or filesystem grant and an unknown interface, naming the
// grant and why, and deploys with grants the host provides (one of them versioned).
func TestCLIRefusesGrantsTheHostCannotProvide(t *testing.T) {
	bin := serveproc.Binary(t, tmpDir)
	srv := serveproc.Start(t, bin, filepath.Join(t.TempDir(), "atelier.db"), filepath.Join(tmpDir, "cache"))
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "ATELIER_SERVER="+srv.URL,
		"ATELIER_PASSWORD=correct horse battery staple", "ATELIER_TOKEN=")
	atelier := func(args ...string) (string, error) {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	for _, args := range [][]string{{"login", "--signup", "--username", "ada"}, {"workspace", "create", "home"}} {
		if out, err := atelier(args...); err != nil {
			t.Fatalf("atelier %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	code := guesttest.Path(t, "gadgets/counter-go")
	for grant, want := range map[string]string{
		"wasi:sockets/tcp":      "grant wasi:sockets/tcp: sockets are never granted to gadgets; gadgets reach the network only through a gatekeeper binding",
		"atelier:host/nonsense": "grant atelier:host/nonsense: no such interface; the host provides atelier:host/bindings, atelier:host/clock",
		"wasi:http/types@0.2.0": "grant wasi:http/types@0.2.0: HTTP is never granted to gadgets",
		"wasi:filesystem/types": "grant wasi:filesystem/types: the filesystem is never granted to gadgets",
	} {
		out, err := atelier("gadget", "deploy", "counter", code, "--grant", "atelier:host/kv,atelier:host/log,"+grant)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 || !strings.Contains(out, want) || !strings.Contains(out, "INVALID_ARGUMENT") {
			t.Errorf("deploy with --grant %s: %v\n%s\nwant exit status 1 and %q", grant, err, out, want)
		}
	}
	if out, err := atelier("gadget", "deploy", "counter", code, "--grant", "atelier:host/kv@0.1.0,atelier:host/log"); err != nil {
		t.Fatalf("deploy with grants the host provides: %v\n%s", err, out)
	}
	if out, err := atelier("gadget", "call", "counter", "increment", "2"); err != nil || strings.TrimSpace(out) != "2" {
		t.Fatalf("atelier gadget call counter increment 2 = %q, %v; want 2", out, err)
	}
}
