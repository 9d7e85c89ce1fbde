package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestMCPStdioServer: `atelier serve --mcp-stdio NAME=COMMAND` installs an MCP server users
// connect as stdio:NAME with `account connect mcp` (no token asked when standard input is not
// a terminal) and call from `atelier exec`; a name the admin did not install is refused.
func TestMCPStdioServer(t *testing.T) {
	server, err := filepath.Abs("../../tests/mcpservers/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(server); err != nil {
		t.Fatalf("server-filesystem is not installed (%v): run scripts/setup.sh --deps", err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hello.txt"), []byte("hello over stdio"), 0o644); err != nil {
		t.Fatal(err)
	}
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t, "--mcp-stdio", "files=node "+server+" "+dir))
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	want(t, ok(t, "gatekeeper", "list"), "mcp", "builtin:mcp")
	fails(t, 1, []string{"account", "connect", "mcp", "stdio:shell"}, `no MCP server "shell" is installed on this host (installed: [files])`)
	var acct struct{ ID, Kind string }
	if err := json.Unmarshal([]byte(ok(t, "account", "connect", "mcp", "stdio:files", "--json")), &acct); err != nil || acct.Kind != "stdio" {
		t.Fatalf("account connect: %+v %v", acct, err)
	}
	ok(t, "workspace", "create", "home")
	snippet := `export default async (env) => (await env.files.read_text_file({ path: ` + jsonString(filepath.Join(dir, "hello.txt")) + ` })).content[0].text`
	want(t, okIn(t, snippet, "exec", "--gatekeeper", "files="+acct.ID, "-"), "hello over stdio")
}

// jsonString quotes s as a JSON (and JavaScript) string.
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
