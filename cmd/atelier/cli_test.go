package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/sdk/guesttest"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // else every Wasmtime error captures a slow Rust backtrace
	if os.Getenv(asCLI) != "" {
		main() // the test binary stands in for the atelier binary (TestCompletionInBash)
	}
	os.Exit(m.Run())
}

// lockedBuffer is a bytes.Buffer that a command running in another goroutine may write to.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// result is the outcome of one in-process run of the binary.
type result struct {
	code        int
	stdout, err string
}

// atelier runs the command line args in-process with stdin as standard input.
func atelier(ctx context.Context, stdin string, args ...string) result {
	var out, errOut lockedBuffer
	code := run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return result{code, out.String(), errOut.String()}
}

// ok runs args and fails the test unless the command succeeds.
func ok(t *testing.T, args ...string) string {
	t.Helper()
	r := atelier(context.Background(), "", args...)
	if r.code != 0 {
		t.Fatalf("atelier %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, r.stdout, r.err)
	}
	return r.stdout
}

// fails runs args and fails the test unless the command exits with code and its stderr holds
// every one of want.
func fails(t *testing.T, code int, args []string, want ...string) {
	t.Helper()
	r := atelier(context.Background(), "", args...)
	if r.code != code {
		t.Fatalf("atelier %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.code, code, r.stdout, r.err)
	}
	for _, w := range want {
		if !strings.Contains(r.err, w) {
			t.Fatalf("atelier %s: stderr %q does not mention %q", strings.Join(args, " "), r.err, w)
		}
	}
}

// isolate points the credentials file and the server defaults at a fresh temporary config.
func isolate(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	for _, v := range []string{"ATELIER_SERVER", "ATELIER_WORKSPACE", "ATELIER_USERNAME", "ATELIER_PASSWORD"} {
		t.Setenv(v, "")
	}
}

func TestServerURL(t *testing.T) {
	for in, want := range map[string]string{
		"ws://127.0.0.1:8787/api":    "ws://127.0.0.1:8787/api",
		"127.0.0.1:8787":             "ws://127.0.0.1:8787/api",
		"http://example.com:8787":    "ws://example.com:8787/api",
		"https://example.com/":       "wss://example.com/api",
		"wss://example.com/prefix/":  "wss://example.com/prefix",
		"http://localhost:1/api/":    "ws://localhost:1/api",
		"ws://[::1]:8787/custom/api": "ws://[::1]:8787/custom/api",
	} {
		if got, err := serverURL(in); err != nil || got != want {
			t.Errorf("serverURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"ftp://example.com", "http://", "ws://exa mple.com"} {
		if got, err := serverURL(bad); err == nil {
			t.Errorf("serverURL(%q) = %q, want an error", bad, got)
		}
	}
}

func TestParseJSONArgs(t *testing.T) {
	got, err := parseJSONArgs([]string{"5", `"buy milk"`, `{"id":1,"tags":["a"]}`, "null", "-1.5"})
	want := []any{5.0, "buy milk", map[string]any{"id": 1.0, "tags": []any{"a"}}, nil, -1.5}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("parseJSONArgs = %#v, %v; want %#v", got, err, want)
	}
	for _, bad := range []string{"buy milk", `"a" "b"`, "{", ""} {
		if _, err := parseJSONArgs([]string{bad}); err == nil || !strings.Contains(err.Error(), "quote strings") {
			t.Errorf("parseJSONArgs(%q) = %v, want an error that says how to quote", bad, err)
		}
	}
}

func TestCamelCase(t *testing.T) {
	for in, want := range map[string]string{"make-counter": "makeCounter", "list": "list", "a-b-c": "aBC", "makeCounter": "makeCounter"} {
		if got := camelCase(in); got != want {
			t.Errorf("camelCase(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCredentialsFile(t *testing.T) {
	isolate(t)
	c, err := loadCredentials()
	if err != nil || len(c.Servers) != 0 {
		t.Fatalf("load without a file = %+v, %v; want empty", c, err)
	}
	c.Servers["ws://a/api"] = serverCredentials{Username: "ada", Token: "atl_x", Workspace: "w1"}
	if err := c.save(); err != nil {
		t.Fatal(err)
	}
	path, _ := credentialsPath()
	if want := filepath.Join(os.Getenv("XDG_CONFIG_HOME"), "atelier", "credentials.json"); path != want {
		t.Fatalf("credentials path %s, want %s", path, want)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file mode %v (%v), want 0600", st.Mode(), err)
	}
	again, err := loadCredentials()
	if err != nil || !reflect.DeepEqual(again, c) {
		t.Fatalf("reloaded %+v, %v; want %+v", again, err, c)
	}
	if err := os.WriteFile(path, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := loadCredentials(); err == nil || !strings.Contains(err.Error(), "atelier login") {
		t.Fatalf("corrupt credentials: %v, want an error that says to log in again", err)
	}
}

func TestCommandLineErrors(t *testing.T) {
	isolate(t)
	fails(t, 2, []string{"frobnicate"}, `unknown command "frobnicate"`, "atelier help")
	fails(t, 2, []string{"gadgt", "list"}, `unknown command "gadgt" (did you mean gadget?)`)
	fails(t, 2, []string{"gadget", "frobnicate"}, `unknown subcommand "frobnicate"`, "deploy")
	fails(t, 2, []string{"gadget", "deplyo"}, `atelier gadget: unknown subcommand "deplyo" (did you mean deploy?)`)
	fails(t, 2, []string{"completion", "tcsh"}, `unknown subcommand "tcsh"`, "fish")
	fails(t, 2, []string{"help", "gadget", "frobnicate"}, `atelier help: unknown subcommand "frobnicate"`)
	fails(t, 2, []string{"gadget", "deploy", "todo", "todo.wasm", "--frob"}, "atelier gadget deploy: unknown flag: --frob", "Usage: atelier gadget deploy")
	fails(t, 2, []string{"gadget", "list", "-json"}, "two dashes: --json")
	fails(t, 2, []string{"gadget", "deploy", "todo", "todo.wasm", "--grant"}, "flag needs an argument: --grant")
	fails(t, 2, []string{"gadget", "call", "calc", "add", "-1"}, "put -- before arguments that start with -")
	fails(t, 2, []string{"serve", "--sync", "never"}, `invalid argument "never" for "--sync" flag: want "always" or "interval"`)
	fails(t, 2, []string{"gadget", "deploy", "todo"}, "want a gadget name and a component file", "Usage: atelier gadget deploy")
	fails(t, 2, []string{"gadget", "call", "todo", "add", "buy milk"}, "quote strings")
	fails(t, 2, []string{"gadget", "rollback", "todo", "latest"}, "not a version number", "atelier gadget versions todo")
	fails(t, 2, []string{"gadget", "list", "--server", "ftp://x"}, "scheme must be ws, wss, http or https")
	fails(t, 1, []string{"gadget", "list"}, "not logged in to ws://127.0.0.1:8787/api", "run `atelier login` first")
	fails(t, 1, []string{"gadget", "list", "--server", "example.com:1"}, "run `atelier login --server ws://example.com:1/api` first")
	fails(t, 1, []string{"workspace", "list"}, "atelier login")
	fails(t, 1, []string{"logout"}, "not logged in")
	t.Setenv("ATELIER_SERVER", "http://127.0.0.1:9")
	fails(t, 1, []string{"gadget", "list"}, "not logged in to ws://127.0.0.1:9/api", "run `atelier login` first")
	t.Setenv("ATELIER_PASSWORD", "irrelevant")
	fails(t, 1, []string{"login", "--username", "ada"}, "cannot reach ws://127.0.0.1:9/api", "atelier serve")
}

func TestHelp(t *testing.T) {
	out := ok(t, "help")
	for _, want := range []string{"Usage: atelier <command> [flags] [arguments]", "Getting started:\n  atelier serve --data ./atelier.db",
		"$ATELIER_TOKEN", "  completion ", "  help "} {
		if !strings.Contains(out, want) {
			t.Errorf("atelier help lacks %q:\n%s", want, out)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		if got := ok(t, args...); got != out {
			t.Errorf("atelier %s = %q, want what atelier help prints", args[0], got)
		}
	}
	for _, c := range commands() {
		if !strings.Contains(out, "  "+c.name+" ") {
			t.Errorf("atelier help does not list %s", c.name)
		}
		paths := [][]string{{c.name}}
		for _, s := range c.subcommands {
			paths = append(paths, []string{c.name, s.name})
		}
		for _, p := range paths {
			h := ok(t, append([]string{"help"}, p...)...)
			if !strings.HasPrefix(h, "Usage: atelier "+strings.Join(p, " ")) {
				t.Errorf("atelier help %s = %q, want a usage line first", strings.Join(p, " "), h)
			}
		}
	}
}

// serverURLLine finds the API URL in what `atelier serve` prints when it listens.
var serverURLLine = regexp.MustCompile(`(ws://[^\s,()]+/api)\b`)

// startServer runs `atelier serve` in-process on a free loopback port with a fresh data file
// (args: more flags of serve) and returns its API URL; the server stops when the test ends.
func startServer(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := serveOut(t, args...)
	return url
}

// serveOut is startServer that also returns what the server printed (its first-run admin token).
func serveOut(t *testing.T, args ...string) (string, *lockedBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	dir := t.TempDir()
	go func() {
		done <- run(ctx, append([]string{"serve", "--addr", "127.0.0.1:0", "--data", filepath.Join(dir, "atelier.db"),
			"--cache", filepath.Join(dir, "cache")}, args...), strings.NewReader(""), &out, &errOut)
	}()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != 0 {
			t.Errorf("atelier serve exited %d: %s", code, errOut.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := serverURLLine.FindStringSubmatch(out.String()); m != nil {
			return m[1], &out
		}
		select {
		case code := <-done:
			t.Fatalf("atelier serve exited %d before listening: %s%s", code, out.String(), errOut.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("atelier serve printed no ws://HOST:PORT/api line within 30s: %s%s", out.String(), errOut.String())
		}
	}
}

// TestClientCommands drives every client command against a real server: sign up, create a
// workspace, deploy the counter, call it, deploy the JavaScript counter over it (the state
// stays), list versions, roll back, follow the logs, and log out.
func TestClientCommands(t *testing.T) {
	counterGo := guesttest.Path(t, "gadgets/counter-go")
	counterJS := guesttest.Path(t, "gadgets/counter-js")
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))

	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	if out := ok(t, "login", "--signup", "--username", "ada"); !strings.Contains(out, "as ada") || !strings.Contains(out, "atelier workspace create") {
		t.Fatalf("login --signup said %q", out)
	}
	path, _ := credentialsPath()
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file after login: %v, %v; want mode 0600", st, err)
	}
	fails(t, 1, []string{"login", "--signup", "--username", "ada"}, `the username "ada" is taken`)
	t.Setenv("ATELIER_PASSWORD", "wrong password!")
	fails(t, 1, []string{"login", "--username", "ada"}, "wrong username or password", "--signup")
	t.Setenv("ATELIER_PASSWORD", "")

	fails(t, 1, []string{"gadget", "list"}, "no workspace selected", "atelier workspace use")
	if out := ok(t, "gatekeeper", "list"); !strings.Contains(out, "mcp") || !strings.Contains(out, "builtin:mcp") {
		t.Fatalf("gatekeeper list on a new server = %q", out)
	}
	fails(t, 1, []string{"gatekeeper", "install", counterGo}, "FORBIDDEN")
	if out := ok(t, "workspace", "create", "home"); !strings.Contains(out, "Created workspace home") {
		t.Fatalf("workspace create said %q", out)
	}
	ok(t, "workspace", "create", "lab")
	if out := ok(t, "workspace", "use", "home"); !strings.Contains(out, "Current workspace: home") {
		t.Fatalf("workspace use said %q", out)
	}
	if out := ok(t, "workspace", "list"); !strings.Contains(out, "home") || !strings.Contains(out, "lab") || strings.Count(out, "*") != 1 {
		t.Fatalf("workspace list = %q, want home (current) and lab", out)
	}
	if out := ok(t, "gadget", "list"); !strings.Contains(out, "No gadgets yet") {
		t.Fatalf("gadget list of an empty workspace = %q", out)
	}

	fails(t, 1, []string{"gadget", "deploy", "counter", counterGo, "--grant", "atelier:host/log"},
		"atelier:host/kv", "INVALID_ARGUMENT")
	if out := ok(t, "gadget", "deploy", "counter", counterGo, "--grant", "atelier:host/kv,atelier:host/log"); !strings.Contains(out, "Created gadget counter version 1") {
		t.Fatalf("first deploy said %q", out)
	}
	if out := ok(t, "gadget", "call", "counter", "increment", "5"); strings.TrimSpace(out) != "5" {
		t.Fatalf("call increment 5 = %q", out)
	}
	if out := ok(t, "gadget", "call", "counter", "echo", `"a \"quoted\" ü"`); strings.TrimSpace(out) != `"a \"quoted\" ü"` {
		t.Fatalf("call echo = %q", out)
	}
	fails(t, 1, []string{"gadget", "call", "nothing", "get"}, "NOT_FOUND")

	if out := ok(t, "gadget", "deploy", "counter", counterJS); !strings.Contains(out, "Deployed counter version 2") || !strings.Contains(out, "atelier:host/kv") {
		t.Fatalf("second deploy said %q, want version 2 with the grants kept", out)
	}
	if out := ok(t, "gadget", "call", "counter", "increment", "1"); strings.TrimSpace(out) != "6" {
		t.Fatalf("the JS counter over the Go counter's state: increment 1 = %q, want 6", out)
	}
	if out := ok(t, "gadget", "versions", "counter"); strings.Count(out, "\n") != 3 || !strings.Contains(out, "*  2") {
		t.Fatalf("versions = %q, want a header and versions 1 and 2, 2 current", out)
	}
	if r := atelier(context.Background(), "", "gadget", "rollback", "counter", "99"); r.code != 1 ||
		!strings.Contains(r.err, "gadget counter has no version 99: run `atelier gadget versions counter`") || strings.Contains(r.err, "versions()") {
		t.Fatalf("rollback to a version that does not exist: exit %d, %q; want it to say to run `atelier gadget versions counter`", r.code, r.err)
	}
	if out := ok(t, "gadget", "rollback", "counter", "1"); !strings.Contains(out, "counter is now at version 1") {
		t.Fatalf("rollback said %q", out)
	}
	if out := ok(t, "gadget", "list"); !strings.Contains(out, "counter") || !strings.Contains(out, "atelier:host/kv,atelier:host/log") {
		t.Fatalf("gadget list = %q", out)
	}

	// Follow the logs while another command calls the gadget.
	ctx, stopLogs := context.WithCancel(context.Background())
	var logOut, logErr lockedBuffer
	logsDone := make(chan int, 1)
	go func() {
		logsDone <- run(ctx, []string{"gadget", "logs", "counter"}, strings.NewReader(""), &logOut, &logErr)
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(logErr.String(), "Following the console of counter") {
		if time.Now().After(deadline) {
			t.Fatalf("gadget logs did not start: %q", logErr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	ok(t, "gadget", "call", "counter", "increment", "2")
	for !strings.Contains(logOut.String(), "increment by 2 -> 8") {
		if time.Now().After(deadline) {
			t.Fatalf("gadget logs printed %q, want the line `increment by 2 -> 8`", logOut.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopLogs()
	if code := <-logsDone; code != 0 {
		t.Fatalf("gadget logs exited %d after Ctrl-C: %s", code, logErr.String())
	}

	// $ATELIER_TOKEN stands in for a saved login (how agents and the admin token are used).
	url, err := serverURL(os.Getenv("ATELIER_SERVER"))
	if err != nil {
		t.Fatal(err)
	}
	creds, err := loadCredentials()
	if err != nil {
		t.Fatal(err)
	}
	token := creds.Servers[url].Token
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no saved credentials from here on
	t.Setenv("ATELIER_TOKEN", token)
	if out := ok(t, "workspace", "list"); !strings.Contains(out, "home") {
		t.Fatalf("workspace list with ATELIER_TOKEN = %q", out)
	}
	t.Setenv("ATELIER_TOKEN", "atl_forged")
	fails(t, 1, []string{"workspace", "list"}, "malformed token", "The token in ATELIER_TOKEN was refused")
	t.Setenv("ATELIER_TOKEN", "")
	fails(t, 1, []string{"gadget", "list"}, "not logged in", "atelier login", "ATELIER_TOKEN")
}

// TestLoginLockedOut: once wrong passwords hold an address back, `atelier login` says so and
// how long to wait, for the right password too (the server does not check it then), instead of
// "wrong username or password".
func TestLoginLockedOut(t *testing.T) {
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	login := func(password string) result {
		t.Setenv("ATELIER_PASSWORD", password)
		return atelier(context.Background(), "", "login", "--username", "ada")
	}
	// The wait is short (1 s): if it ends before the right password arrives, that login
	// succeeds and clears the address's failures, so start over.
	for range 5 {
		for i := 0; ; i++ {
			if i == 20 {
				t.Fatal("20 wrong passwords in a row, and login never said to wait")
			}
			r := login("wrong password!")
			if r.code == 0 {
				t.Fatalf("login with a wrong password succeeded: %s", r.stdout)
			}
			if strings.Contains(r.err, "too many failed attempts; try again in ") {
				break
			}
			if i > 5 || !strings.Contains(r.err, "wrong username or password") {
				t.Fatalf("login with a wrong password said %q", r.err)
			}
		}
		r := login("correct horse battery staple")
		if r.code == 0 {
			continue
		}
		if !regexp.MustCompile(`too many failed attempts; try again in \d+s\n.*from this address.*wait, then run the command again`).MatchString(r.err) {
			t.Fatalf("login with the right password during a lockout said %q", r.err)
		}
		return
	}
	t.Fatal("the right password never arrived during a lockout")
}
