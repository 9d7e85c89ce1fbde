package docs_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/serveproc"
)

// tmpDir holds this run's atelier binary and the server's compiled-component cache.
var tmpDir string

func TestMain(m *testing.M) { serveproc.Main(m, "docs", &tmpDir) }

// The reader's account: what they type at the prompts of `atelier login --signup` (given to
// it as $ATELIER_USERNAME and $ATELIER_PASSWORD) and in the JavaScript examples.
const (
	username = "ada"
	password = "correct horse battery staple"
)

// loggedIn is what a document that starts from a logged-in reader assumes: README.md's
// "Try it" up to its workspace.
const loggedIn = "atelier login --signup\natelier workspace create home\n"

// notesInstalled is the notes gatekeeper built, packed and installed as docs/gatekeepers.md
// shows.
const notesInstalled = `sdk/build-gadget.sh gatekeepers/notes-go gatekeeper.wasm
jq --arg h "$(sha256sum gatekeeper.wasm | cut -c1-64)" '.component.sha256 = $h' gatekeepers/notes-go/manifest.json > manifest.json
tar -cf notes.gkp manifest.json gatekeeper.wasm
ATELIER_TOKEN=<admin token> atelier gatekeeper install notes.gkp
`

// docSetup is what a document assumes the reader did before its first block.
type docSetup struct {
	given    string    // shell commands run first
	jsGiven  string    // JavaScript run before each of its Node blocks, after the preludes
	variants []variant // the ways a reader may follow it (one, unnamed, by default)
}

// variant is one way through a document: its name selects the blocks marked `NAME: ...`, and
// subst holds the edits the document tells that reader to make.
type variant struct {
	name  string
	subst [][2]string
}

var setups = map[string]docSetup{
	"docs/tutorial-gadget.md": {variants: []variant{
		{name: "go"},
		// The JavaScript reader takes the "or --lang js" of step 1; every edit after it is written
		// for both languages (or marked js:), so the blocks are applied as they are.
		{name: "js", subst: [][2]string{{"--lang go", "--lang js"}}},
	}},
	"docs/api.md":                 {given: "sdk/build-gadget.sh gadgets/todo-go todo.wasm\n"},
	"docs/values.md":              {given: loggedIn + "sdk/build-gadget.sh gadgets/todo-go todo.wasm\natelier gadget deploy todo todo.wasm --grant atelier:host/kv,atelier:host/log,atelier:host/events\n"},
	"docs/agent.md":               {given: loggedIn},
	"docs/security.md":            {given: loggedIn},
	"gadgets/README.md":           {given: loggedIn},
	"gadgets/slides-go/README.md": {given: loggedIn + notesInstalled, jsGiven: bindNotes},
}

// bindNotes connects an account on the notes gatekeeper and binds it to the slides gadget as
// `notes` (docs/api.md "Gatekeepers"), as gadgets/README.md tells the reader to.
const bindNotes = `const [notesGk] = (await api.listGatekeepers()).filter((g) => g.name === "notes");
const notesAccount = await api.connectAccount(notesGk.id, "https://notes.example.com/notebooks/team", { token: "a notes token" });
await api.openWorkspace(wsId).bindGatekeeper("slides", "notes", notesAccount.id);
`

// jsPreludes declare what a Node block uses without declaring it, in this order: the names
// each declares, and the code.
var jsPreludes = []struct {
	names []string
	code  string
}{
	{[]string{"root", "api"}, "const root = newWebSocketRpcSession(URL);\nconst api = root.authenticate(await root.login(USERNAME, PASSWORD));"},
	{[]string{"wsId"}, "const [{ id: wsId }] = await api.listWorkspaces();"},
	{[]string{"wasmBytes"}, `const wasmBytes = new Uint8Array(readFileSync("todo.wasm"));   // built by sdk/build-gadget.sh`},
	// docs/api.md "Resources": a gadget exporting the resource counter (the kernel's test component).
	{[]string{"app", "other"}, `const app = api.openWorkspace(wsId).createGadget("counters", readFileSync(ROOT + "/host/kernel/testdata/resources.wat"), []).connect();
const other = await app.counter.new(1);`},
}

// lineRewrites make a line that runs until Ctrl-C stop after a few seconds, as Ctrl-C does.
var lineRewrites = []struct {
	re   *regexp.Regexp
	repl string
}{
	{regexp.MustCompile(`^(\S*atelier gadget logs .*)$`), "timeout --foreground --preserve-status -s INT 3 $1"},
}

// TestDocsRun follows every document as a reader would: its shell blocks, the files it has the
// reader write and its Cap'n Web client blocks run in order in a scratch checkout, against an
// `atelier serve` of its own.
func TestDocsRun(t *testing.T) {
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := serveproc.Binary(t, tmpDir)
	for _, file := range docFiles(t, root) {
		bs := blocks(t, root, file)
		if !runnable(bs) {
			continue
		}
		setup := setups[file]
		variants := setup.variants
		if len(variants) == 0 {
			variants = []variant{{}}
		}
		for _, v := range variants {
			name := file
			if v.name != "" {
				name += "/" + v.name
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s := newSession(t, root, bin, file, setup, v)
				if setup.given != "" {
					s.shell(block{file: file + " (given in tests/docs/run_test.go)", src: setup.given})
				}
				for _, b := range bs {
					for _, p := range plans(b) {
						if p.variant == "" || p.variant == v.name {
							s.do(b, p)
						}
					}
				}
			})
		}
	}
}

// runnable reports whether a document has a block that runs in a session.
func runnable(bs []block) bool {
	for _, b := range bs {
		for _, p := range plans(b) {
			if p.kind == runShell || p.kind == runNode || p.kind == matchCSP {
				return true
			}
		}
	}
	return false
}

// session is one reader following one document.
type session struct {
	t       *testing.T
	root    string // the checkout
	scratch string // the reader's copy of it, where the blocks run
	state   string // the shell state between blocks: exported variables and working folder
	env     []string
	srv     *serveproc.Process
	admin   string
	setup   docSetup
	variant variant
	out     strings.Builder // everything the commands printed so far
}

// newSession makes a scratch checkout (links to the repository, copies of the folders the
// documents write into), starts a server and prepares the reader's environment.
func newSession(t *testing.T, root, bin, file string, setup docSetup, v variant) *session {
	scratch := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		src := filepath.Join(root, name)
		switch {
		case strings.HasPrefix(name, ".") || name == "bin" || strings.HasSuffix(name, ".db") || strings.HasSuffix(name, ".test"):
		case name == "gadgets" || name == "gatekeepers": // bindgen --out and builds write here
			cmd := exec.Command("cp", "-r", src, filepath.Join(scratch, name))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("copy %s: %v\n%s", name, err, out)
			}
		default:
			if err := os.Symlink(src, filepath.Join(scratch, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	home := filepath.Join(scratch, "home")
	for _, d := range []string{filepath.Join(scratch, "bin"), home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bin, filepath.Join(scratch, "bin", "atelier")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(capnwebtests.NodeDir(root), "node_modules"), filepath.Join(scratch, "node_modules")); err != nil {
		t.Fatal(err)
	}

	srv := serveproc.Start(t, bin, filepath.Join(t.TempDir(), "atelier.db"), filepath.Join(tmpDir, "artifacts"))
	s := &session{t: t, root: root, scratch: scratch, state: filepath.Join(t.TempDir(), "state.sh"),
		env: readerEnv(t, scratch, home, srv.URL), srv: srv, admin: srv.AdminToken(t), setup: setup, variant: v}
	if err := os.WriteFile(s.state, []byte("cd "+shellQuote(scratch)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return s
}

// readerEnv is the reader's environment: a fresh home and config, the server in
// $ATELIER_SERVER, bin/ on PATH, and the machine's Go, npm and atelier tool caches (so builds
// are warm, as on a set-up machine).
func readerEnv(t *testing.T, scratch, home, url string) []string {
	g, err := goCaches()
	if err != nil {
		t.Fatalf("go env: %v", err)
	}
	userCache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	userHome, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if name == "HOME" || name == "PATH" || strings.HasPrefix(name, "XDG_") || strings.HasPrefix(name, "ATELIER_") || strings.HasPrefix(name, "GO") {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		"HOME="+home, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_CACHE_HOME="+filepath.Join(home, ".cache"),
		"XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
		"GOCACHE="+g[0], "GOMODCACHE="+g[1], "GOPATH="+g[2], "GOFLAGS=", "GOWORK=off",
		"npm_config_cache="+filepath.Join(userHome, ".npm"), "ATELIER_CACHE="+filepath.Join(userCache, "atelier"),
		"ATELIER_SERVER="+url, "ATELIER_USERNAME="+username, "ATELIER_PASSWORD="+password,
		"PATH="+filepath.Join(scratch, "bin")+":"+os.Getenv("PATH"))
}

// goCaches are the machine's GOCACHE, GOMODCACHE and GOPATH, which every reader shares.
var goCaches = sync.OnceValues(func() ([]string, error) {
	out, err := exec.Command("go", "env", "GOCACHE", "GOMODCACHE", "GOPATH").Output()
	return strings.Fields(string(out)), err
})

// placeholders are what the reader puts in place of the documents' placeholders; s is nil for
// the checks that run without a server.
func placeholders(s *session) [][2]string {
	p := [][2]string{
		{"<hex sha256 of gatekeeper.wasm>", strings.Repeat("0", 64)},
		{`"your password"`, strconv.Quote(password)},
	}
	if s != nil {
		p = append(p,
			[2]string{"<the admin token>", s.admin}, [2]string{"<admin token>", s.admin},
			[2]string{"ws://127.0.0.1:8787/api", s.srv.URL})
		p = append(p, s.variant.subst...)
	}
	return p
}

// substitute replaces each pair's first by its second.
func substitute(src string, pairs [][2]string) string {
	for _, p := range pairs {
		src = strings.ReplaceAll(src, p[0], p[1])
	}
	return src
}

// do carries out one plan of b in the session; a failure ends the document.
func (s *session) do(b block, p plan) {
	s.t.Helper()
	switch p.kind {
	case runShell:
		s.shell(b)
	case runNode:
		s.node(b)
	case writeFile:
		s.write(b, p)
	case matchOutput:
		s.match(b)
	case matchCSP:
		s.csp(b)
	}
}

// exitsComment is a line's note of its expected exit status (`# exits 1: ...`).
var exitsComment = regexp.MustCompile(`#\s*exits (\d+)`)

// failedLine is what a shell block's script prints when a line exits with another status.
var failedLine = regexp.MustCompile(`docs-test-line (\d+): `)

// shell runs a shell block in the session: each command line in turn, with the exported
// variables and working folder the previous blocks left, stopping at the first line whose exit
// status is not the expected one (0, or the line's `# exits N`).
func (s *session) shell(b block) {
	s.t.Helper()
	var script strings.Builder
	fmt.Fprintf(&script, "source %s\n__docs_save() { { export -p; printf 'cd %%q\\n' \"$PWD\"; } > %s; pwd > %s.cwd; }\ntrap __docs_save EXIT\n",
		shellQuote(s.state), shellQuote(s.state), shellQuote(s.state))
	lines := strings.Split(strings.TrimRight(substitute(b.src, placeholders(s)), "\n"), "\n")
	for i := 0; i < len(lines); i++ {
		first, cmd := i, lines[i]
		for strings.HasSuffix(cmd, "\\") && i+1 < len(lines) {
			i++
			cmd += "\n" + lines[i]
		}
		if t := strings.TrimSpace(cmd); t == "" || strings.HasPrefix(t, "#") {
			continue
		}
		for _, r := range lineRewrites {
			cmd = r.re.ReplaceAllString(cmd, r.repl)
		}
		want := "0"
		if m := exitsComment.FindStringSubmatch(cmd); m != nil {
			want = m[1]
		}
		fmt.Fprintf(&script, "printf '$ %%s\\n' %s\n%s\n__rc=$?\nif [ $__rc -ne %s ]; then printf '\\ndocs-test-line %d: exit status %%d, want %s\\n' $__rc; exit 97; fi\n",
			shellQuote(cmd), cmd, want, b.line+1+first, want)
	}
	out, err := s.run(10*time.Minute, "bash", "-c", script.String())
	line := b.line
	if m := failedLine.FindStringSubmatch(out); m != nil {
		line, _ = strconv.Atoi(m[1])
	}
	if err != nil {
		s.t.Fatalf("%s:%d: %v; output:\n%s", b.file, line, err, out)
	}
	s.t.Logf("%s: ran; output:\n%s", b, out)
}

// cwd is the session's working folder, where the last shell block left it.
func (s *session) cwd() string {
	b, err := os.ReadFile(s.state + ".cwd")
	if err != nil {
		return s.scratch
	}
	return strings.TrimSpace(string(b))
}

// run runs name with args in the session (its environment and working folder, standard input
// empty) and returns its output; leftover background processes are killed.
func (s *session) run(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out strings.Builder
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env, cmd.Dir, cmd.Stdout, cmd.Stderr = s.env, s.cwd(), &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	// A process the block leaves in the background holds the output pipe open: Wait returns
	// this long after the shell exits instead of waiting for it, and the kill below ends it.
	cmd.WaitDelay = 2 * time.Second
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		err = fmt.Errorf("still running after %v", timeout)
	case errors.Is(err, exec.ErrWaitDelay): // the shell exited 0; its background is killed below
		err = nil
	}
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what the block left in the background
	}
	s.out.WriteString(out.String())
	return out.String(), err
}

// declaration is a JavaScript declaration with const, let or var: what it declares.
var declaration = regexp.MustCompile(`(?m)^\s*(?:const|let|var)\s+([^=]*)=`)

// declared reports whether src declares name with const, let or var.
func declared(src, name string) bool {
	word := regexp.MustCompile(`\b` + regexp.QuoteMeta(name) + `\b`)
	for _, m := range declaration.FindAllStringSubmatch(src, -1) {
		if word.MatchString(m[1]) {
			return true
		}
	}
	return false
}

// node runs a Cap'n Web client block with node in the session's working folder: the block's
// imports, then the preludes of what it uses without declaring, the document's given code and
// the block; it must finish without an error and exit by itself, which it does once its
// sessions are closed (an open WebSocket keeps node running).
func (s *session) node(b block) {
	s.t.Helper()
	src := substitute(b.src, placeholders(s))
	var imports, body []string
	for _, l := range strings.Split(src, "\n") {
		if strings.HasPrefix(l, "import ") {
			imports = append(imports, l)
		} else {
			body = append(body, l)
		}
	}
	code := strings.Join(body, "\n")
	need := code + s.setup.jsGiven
	var preludes []string
	for changed := true; changed; {
		changed = false
		for _, p := range jsPreludes {
			if slices.Contains(preludes, p.code) || declared(code, p.names[0]) {
				continue
			}
			for _, n := range p.names {
				if regexp.MustCompile(`\b` + n + `\b`).MatchString(need) {
					preludes = append(preludes, p.code)
					need += p.code
					changed = true
					break
				}
			}
		}
	}
	var ordered []string // the preludes in table order
	for _, p := range jsPreludes {
		if slices.Contains(preludes, p.code) {
			ordered = append(ordered, p.code)
		}
	}
	if !strings.Contains(src, `from "capnweb"`) {
		imports = append(imports, `import { newWebSocketRpcSession } from "capnweb";`)
	}
	// The session a prelude opened is the test's: it closes it after the block. A block that
	// opens its own closes it itself (checkDisposes), and node must then exit by itself.
	end := ""
	if slices.Contains(ordered, jsPreludes[0].code) {
		end = "root[Symbol.dispose]();   // the prelude's session\n"
	}
	consts := fmt.Sprintf("const URL = %q, USERNAME = %q, PASSWORD = %q, ROOT = %q;", s.srv.URL, username, password, s.root)
	program := strings.Join(imports, "\n") + "\nimport { readFileSync } from \"node:fs\";\n" + consts + "\n" +
		strings.Join(ordered, "\n") + "\n" + s.setup.jsGiven + "\n// " + b.String() + "\n" + code + "\n" + end
	path := filepath.Join(s.scratch, fmt.Sprintf("docs-block-%d.mjs", b.line))
	if err := os.WriteFile(path, []byte(program), 0o644); err != nil {
		s.t.Fatal(err)
	}
	out, err := s.run(nodeLimit, "node", append(nodeFlags(), path)...)
	if err != nil {
		s.t.Fatalf("%s:%d: node: %v (a block must close the sessions it opens, so that node exits by itself); output:\n%s\nthe program:\n%s", b.file, b.line, err, out, program)
	}
	s.t.Logf("%s: ran with node; output:\n%s", b, out)
}

// nodeLimit bounds a client block's run: node must exit by itself (its sessions closed) before.
const nodeLimit = 2 * time.Minute

// nodeFlags are the flags node needs to give the capnweb client a global WebSocket: Node 20
// has one only with --experimental-websocket (docs/api.md says so).
var nodeFlags = sync.OnceValue(func() []string {
	out, _ := exec.Command("node", "-e", "process.stdout.write(typeof WebSocket)").Output()
	if string(out) == "undefined" {
		return []string{"--experimental-websocket"}
	}
	return nil
})

// write writes a file block where the reader writes it, relative to the session's working
// folder: the whole file, or, with `from "TEXT"`, the file from the line holding TEXT on (the
// edits the prose before the block describes; see proseEdit).
func (s *session) write(b block, p plan) {
	s.t.Helper()
	if err := p.edit(s.cwd(), substitute(b.src, placeholders(s))); err != nil {
		s.t.Fatalf("%s:%d: %v", b.file, b.line, err)
	}
	s.t.Logf("%s: written to %s", b, p.arg)
}

// edit makes the edit of a writeFile plan in dir with the block's text src: writes the file
// p.arg, or replaces it from the start of the line holding p.from on.
func (p plan) edit(dir, src string) error {
	path := filepath.Join(dir, p.arg)
	if p.from != "" {
		old, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("the reader edits %s: %w", p.arg, err)
		}
		i := strings.Index(string(old), p.from)
		if i < 0 {
			return fmt.Errorf("%s has no line %q to replace from:\n%s", p.arg, p.from, old)
		}
		src = string(old[:strings.LastIndex(string(old[:i]), "\n")+1]) + src // from the start of that line
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		return fmt.Errorf("write %s: %w", p.arg, err)
	}
	return nil
}

// match requires each line of an output block to be a line the session's commands printed;
// "..." in a line stands for any text.
func (s *session) match(b block) {
	s.t.Helper()
	printed := strings.Split(s.out.String(), "\n")
	var errs []error
	for i, want := range strings.Split(strings.TrimRight(b.src, "\n"), "\n") {
		if strings.TrimSpace(want) == "" {
			continue
		}
		if !matchesAny(printed, want) {
			errs = append(errs, fmt.Errorf("%s:%d: no command printed %q", b.file, b.line+1+i, want))
		}
	}
	if err := errors.Join(errs...); err != nil {
		s.t.Fatalf("%v\nwhat the document's commands printed:\n%s", err, s.out.String())
	}
	s.t.Logf("%s: each line was printed", b)
}

// matchesAny reports whether a line of printed is want: the same text, or, when want has
// "...", the text between them in order.
func matchesAny(printed []string, want string) bool {
	want = strings.TrimSpace(want)
	parts := strings.Split(want, "...")
	for _, line := range printed {
		line = strings.TrimSpace(line)
		if len(parts) == 1 {
			if line == want {
				return true
			}
			continue
		}
		rest, ok := line, true
		for _, p := range parts {
			j := strings.Index(rest, strings.TrimSpace(p))
			if j < 0 {
				ok = false
				break
			}
			rest = rest[j+len(strings.TrimSpace(p)):]
		}
		if ok {
			return true
		}
	}
	return false
}

// framePath is where the server serves the gadget frame's document (host/shell).
const framePath = "/assets/gadget-frame.html"

// hashSource is a CSP hash source, which a document may abbreviate ('sha256-...').
var hashSource = regexp.MustCompile(`'sha256-[^']*'`)

// csp requires the policy of a CSP block to be one that the server sends with the gadget frame
// (hash sources compared as 'sha256-...', whitespace as one space).
func (s *session) csp(b block) {
	s.t.Helper()
	url := strings.TrimSuffix(strings.Replace(s.srv.URL, "ws://", "http://", 1), "/api") + framePath
	resp, err := http.Get(url)
	if err != nil {
		s.t.Fatalf("%s:%d: GET %s: %v", b.file, b.line, url, err)
	}
	resp.Body.Close()
	norm := func(p string) string {
		return hashSource.ReplaceAllString(strings.Join(strings.Fields(p), " "), "'sha256-...'")
	}
	got := norm(b.src)
	sent := resp.Header.Values("Content-Security-Policy")
	for _, p := range sent {
		if norm(p) == got {
			s.t.Logf("%s: the policy the server sends with %s", b, framePath)
			return
		}
	}
	s.t.Fatalf("%s:%d: the block is not a policy the server sends with %s; it sends:\n%s", b.file, b.line, framePath, strings.Join(sent, "\n"))
}

// shellQuote quotes s for bash.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
