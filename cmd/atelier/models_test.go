package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestModelsCommands: a user adds models with the key from an environment variable, a file
// and standard input, lists them (table and JSON) without any key showing, and removes one;
// the key is never taken from the command line; bad input is refused clearly; the admin adds
// instance-wide models and sets the agent instructions, which users read.
func TestModelsCommands(t *testing.T) {
	isolate(t)
	url, out := serveOut(t)
	t.Setenv("ATELIER_SERVER", url)
	m := adminTokenLine.FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("atelier serve printed no admin token: %s", out.String())
	}
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	if got := ok(t, "models", "list"); !strings.Contains(got, "No models yet") {
		t.Fatalf("models list before any: %q", got)
	}

	const envKey, fileKey, stdinKey = "sk-env-5b7e21", "sk-file-9c4d03", "sk-stdin-1a8f62"
	t.Setenv("TEST_MODEL_KEY", envKey)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte(fileKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	added := ok(t, "models", "add", "--name", "gpt", "--provider", "openai", "--model", "gpt-4o", "--key-env", "TEST_MODEL_KEY")
	if !strings.Contains(added, "Added user gpt (openai gpt-4o at https://api.openai.com/v1, key sealed) as mdl_") {
		t.Fatalf("models add said %q", added)
	}
	ok(t, "models", "add", "--name", "claude", "--provider", "anthropic", "--model", "claude-sonnet-4-5", "--key-file", keyFile)
	r := atelier(context.Background(), stdinKey+"\n", "models", "add", "--name", "router", "--provider", "openai",
		"--url", "https://openrouter.ai/api/v1", "--model", "qwen/qwen3-coder", "--key-file", "-", "--context-window", "65536", "--json")
	if r.code != 0 {
		t.Fatalf("models add --key-file -: exit %d: %s", r.code, r.err)
	}
	local := ok(t, "models", "add", "--name", "local", "--provider", "openai", "--url", "http://127.0.0.1:11434/v1", "--model", "qwen3:4b")
	if !strings.Contains(local, "without a key") || !strings.Contains(local, "Note: the server refuses the agent's requests to 127.0.0.1:11434") {
		t.Fatalf("models add without a key said %q", local)
	}

	table := ok(t, "models", "list")
	for _, want := range []string{"NAME", "gpt", "claude", "https://api.anthropic.com", "65536", "sealed", "none", "local"} {
		if !strings.Contains(table, want) {
			t.Fatalf("models list does not show %q:\n%s", want, table)
		}
	}
	var listed []struct {
		ID, Name, Scope string
		HasKey          bool
	}
	js := ok(t, "models", "list", "--json")
	if err := json.Unmarshal([]byte(js), &listed); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, l := range listed {
		names[l.Name] = l.HasKey
	}
	if want := map[string]bool{"gpt": true, "claude": true, "router": true, "local": false}; !reflect.DeepEqual(names, want) {
		t.Fatalf("models list --json: %v, want %v", names, want)
	}
	for _, text := range []string{added, local, r.stdout, table, js} {
		for _, key := range []string{envKey, fileKey, stdinKey} {
			if strings.Contains(text, key) {
				t.Fatalf("a key shows in the output: %q", text)
			}
		}
	}

	bad := atelier(context.Background(), "", "models", "add", "--name", "x", "--provider", "openai", "--model", "m", "--key", "sk-plain-flag")
	if bad.code != 2 || strings.Contains(bad.err, "sk-plain-flag") {
		t.Fatalf("--key VALUE: exit %d, stderr %q; want a command-line error that does not repeat the key", bad.code, bad.err)
	}
	fails(t, 2, []string{"models", "add", "--name", "x", "--provider", "openai", "--model", "m", "--key-env", "TEST_MODEL_KEY", "--key-file", keyFile}, "not both")
	fails(t, 2, []string{"models", "add", "--provider", "openai", "--model", "m"}, "--name, --provider and --model are required")
	fails(t, 1, []string{"models", "add", "--name", "x", "--provider", "openai", "--model", "m", "--key-env", "TEST_UNSET_VARIABLE"}, "not set or empty")
	fails(t, 1, []string{"models", "add", "--name", "x", "--provider", "openai", "--model", "m", "--url", "ftp://example.com"}, "INVALID_ARGUMENT", "not an http or https URL")
	fails(t, 1, []string{"models", "add", "--name", "x", "--provider", "openai", "--model", "m", "--instance"}, "FORBIDDEN", "only the server's admin")
	fails(t, 1, []string{"admin", "instructions", "set", "-"}, "FORBIDDEN")

	id := listed[0].ID
	if got := ok(t, "models", "remove", id); !strings.Contains(got, "Removed "+id) {
		t.Fatalf("models remove said %q", got)
	}
	fails(t, 1, []string{"models", "remove", id}, "NOT_FOUND", "you have no model")

	t.Setenv("ATELIER_TOKEN", m[1])
	if got := ok(t, "models", "add", "--name", "team", "--provider", "openai", "--model", "gpt-4o", "--instance"); !strings.Contains(got, "Added instance team") {
		t.Fatalf("admin's models add --instance said %q", got)
	}
	if r := atelier(context.Background(), "Answer in French.\n", "admin", "instructions", "set", "-"); r.code != 0 || !strings.Contains(r.stdout, "agent instructions set") {
		t.Fatalf("admin instructions set -: exit %d, %q %q", r.code, r.stdout, r.err)
	}
	t.Setenv("ATELIER_TOKEN", "")
	if got := ok(t, "admin", "instructions"); got != "Answer in French.\n" {
		t.Fatalf("ada reads the instructions as %q", got)
	}
	if got := ok(t, "models", "list"); !strings.Contains(got, "team") || !strings.Contains(got, "instance") {
		t.Fatalf("ada does not see the instance model:\n%s", got)
	}
}

func TestModelAllowAddrFlag(t *testing.T) {
	var o serveOptions
	if err := o.modelAllowFlag("127.0.0.1:11434, [::1]:8080"); err != nil {
		t.Fatal(err)
	}
	if err := o.modelAllowFlag("10.0.0.5:8000"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"127.0.0.1:11434", "[::1]:8080", "10.0.0.5:8000"}; !reflect.DeepEqual(o.modelAllowAddrs, want) {
		t.Fatalf("--model-allow-addr gave %q, want %q", o.modelAllowAddrs, want)
	}
	for _, bad := range []string{"localhost:11434", "127.0.0.1", "127.0.0.1:0", "http://127.0.0.1:11434"} {
		if err := o.modelAllowFlag(bad); err == nil || !strings.Contains(err.Error(), "IP:PORT") {
			t.Errorf("--model-allow-addr %q: %v, want an error asking for IP:PORT", bad, err)
		}
	}
}
