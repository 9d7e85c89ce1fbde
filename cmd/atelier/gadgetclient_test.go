package main

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atelier/sdk/guesttest"
)

// TestGadgetClientCommands: deploy --client puts the UI in the same version as a JS gadget's
// code (a component's too), `gadget client` prints, sets and removes it,
// and `gadget versions` shows which version has which UI.
func TestGadgetClientCommands(t *testing.T) {
	counterGo := guesttest.Path(t, "gadgets/counter-go")
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	ok(t, "workspace", "create", "home")
	ok(t, "workspace", "use", "home")

	dir := t.TempDir()
	ui1, ui2 := filepath.Join(dir, "ui1.js"), filepath.Join(dir, "ui2.js")
	if err := os.WriteFile(ui1, []byte("// UI one\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(ui2, []byte("// UI two\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	jsGrants := "atelier:host/kv,atelier:host/log,atelier:host/events,atelier:host/bindings"
	if out := ok(t, "gadget", "deploy", "notes", filepath.Join("..", "..", "gadgets", "notes-js"), "--grant", jsGrants, "--client", ui1); !strings.Contains(out, "Created gadget notes version 1") {
		t.Fatalf("deploy --client said %q", out)
	}
	if out := ok(t, "gadget", "client", "notes"); out != "// UI one\n" {
		t.Fatalf("gadget client = %q, want the --client file", out)
	}
	if out := ok(t, "gadget", "client", "notes", ui2); !strings.Contains(out, "from version 2") {
		t.Fatalf("gadget client FILE said %q", out)
	}
	if out := ok(t, "gadget", "client", "notes"); out != "// UI two\n" {
		t.Fatalf("gadget client after setting = %q", out)
	}
	if out := ok(t, "gadget", "client", "--remove", "notes"); !strings.Contains(out, "notes has no UI now (version 3)") {
		t.Fatalf("gadget client --remove said %q", out)
	}
	if r := atelier(t.Context(), "", "gadget", "client", "notes"); r.code != 0 || r.stdout != "" || !strings.Contains(r.err, "notes has no UI script") {
		t.Fatalf("gadget client without a UI: %+v", r)
	}
	out := ok(t, "gadget", "versions", "notes")
	h1, h2 := sha256.Sum256([]byte("// UI one\n")), sha256.Sum256([]byte("// UI two\n"))
	short1, short2 := hex.EncodeToString(h1[:])[:12], hex.EncodeToString(h2[:])[:12]
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], "UI") || !strings.Contains(lines[1], short1) || !strings.Contains(lines[2], short2) ||
		strings.Contains(lines[3], short1) || strings.Contains(lines[3], short2) {
		t.Fatalf("versions = %q, want UI %s, then %s, then none", out, short1, short2)
	}
	fails(t, 2, []string{"gadget", "client", "--remove", "notes", ui1}, "want a gadget name")

	// A component's UI comes in the same version as its code: rollbacks keep the pairs.
	if out := ok(t, "gadget", "deploy", "counter", counterGo, "--grant", "atelier:host/kv,atelier:host/log", "--client", ui1); !strings.Contains(out, "counter version 1") {
		t.Fatalf("deploy of a component with --client said %q", out)
	}
	if out := ok(t, "gadget", "client", "counter"); out != "// UI one\n" {
		t.Fatalf("the component's UI = %q", out)
	}
	if out := ok(t, "gadget", "deploy", "counter", counterGo, "--client", ui2); !strings.Contains(out, "counter version 2") {
		t.Fatalf("second deploy with --client said %q", out)
	}
	ok(t, "gadget", "rollback", "counter", "1")
	if out := ok(t, "gadget", "client", "counter"); out != "// UI one\n" {
		t.Fatalf("after rolling back to version 1 the UI is %q, want version 1's", out)
	}
}
