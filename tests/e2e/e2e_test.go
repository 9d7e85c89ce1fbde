package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
)

const (
	// startTimeout bounds how long `atelier serve` may take to print its listening line.
	startTimeout = 60 * time.Second
	// stopTimeout bounds a graceful shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
	// scriptTimeout bounds one phase of todo.mjs.
	scriptTimeout = 2 * time.Minute
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
	tmpDir  string // this run's binary and compiled-component cache
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // else every Wasmtime error captures a slow Rust backtrace
	dir, err := os.MkdirTemp("", "atelier-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// atelierBinary builds ./cmd/atelier once per test process and returns its path.
func atelierBinary(t *testing.T, root string) string {
	t.Helper()
	binOnce.Do(func() {
		binPath = filepath.Join(tmpDir, "atelier")
		start := time.Now()
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/atelier")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/atelier: %w\n%s", err, out)
			return
		}
		t.Logf("built bin/atelier in %v", time.Since(start).Round(time.Millisecond))
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// server is a running `atelier serve` subprocess.
type server struct {
	api    string // the WebSocket URL of the API, from the server's listening line
	cmd    *exec.Cmd
	mu     sync.Mutex
	output strings.Builder
	exited chan struct{}
}

// apiURL finds the API URL in the line `atelier serve` prints when it listens
// (`serving http://HOST:PORT (Cap'n Web: ws://HOST:PORT/api, batch: ...)`).
var apiURL = regexp.MustCompile(`(ws://[^\s,()]+/api)\b`)

// startServer runs `atelier serve` on a free loopback port with its state in dataFile. The
// server is killed when the test ends if it is still running; its output is logged on failure.
func startServer(t *testing.T, bin, dataFile string) *server {
	t.Helper()
	s := &server{exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", dataFile, "--cache", filepath.Join(tmpDir, "cache"))
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	s.cmd.Stderr = s.cmd.Stdout // one pipe: the listening line may go to either stream
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("start %s serve: %v", bin, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.output.WriteString(line + "\n")
			s.mu.Unlock()
			if m := apiURL.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = s.cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("output of atelier serve --data %s:\n%s", dataFile, s.Output())
		}
	})
	select {
	case s.api = <-found:
		return s
	case <-s.exited:
		t.Fatalf("atelier serve exited before listening (%v); output:\n%s", s.cmd.ProcessState, s.Output())
	case <-time.After(startTimeout):
		t.Fatalf("atelier serve printed no `ws://HOST:PORT/api` line within %v; output:\n%s", startTimeout, s.Output())
	}
	return nil
}

// Output returns what the server has printed so far.
func (s *server) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.output.String()
}

// stop sends SIGTERM and checks that the server shuts down cleanly.
func (s *server) stop(t *testing.T) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM atelier serve: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		t.Fatalf("atelier serve did not stop within %v of SIGTERM; output:\n%s", stopTimeout, s.Output())
	}
	if !s.cmd.ProcessState.Success() {
		t.Fatalf("atelier serve exited with %v after SIGTERM, want status 0; output:\n%s", s.cmd.ProcessState, s.Output())
	}
}

// runScript runs one phase of todo.mjs and logs its step lines.
func runScript(t *testing.T, nodeDir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	script, err := filepath.Abs("todo.mjs")
	if err != nil {
		t.Fatal(err)
	}
	out, err := capnwebtests.RunNode(ctx, nodeDir, script, args...)
	t.Logf("node todo.mjs %s:\n%s", args[0], out)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("node todo.mjs %s ran past %v", args[0], scriptTimeout)
	}
	if err != nil {
		t.Fatalf("todo scenario, phase %s, failed:\n%v", args[0], err)
	}
}

// checkCLI logs in with the atelier binary as the user of the scenario and lists the items
// with `atelier gadget call`.
func checkCLI(t *testing.T, bin, api, stateFile string) {
	t.Helper()
	b, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Username, Password, Workspace string
		Items                         []any
	}
	if err := json.Unmarshal(b, &state); err != nil {
		t.Fatalf("state written by todo.mjs: %v", err)
	}
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "ATELIER_SERVER="+api, "ATELIER_PASSWORD="+state.Password)
	atelier := func(args ...string) []byte {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("atelier %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
	atelier("login", "--username", state.Username)
	atelier("workspace", "use", state.Workspace)
	var items []any
	out := atelier("gadget", "call", "todo", "list")
	if err := json.Unmarshal(out, &items); err != nil {
		t.Fatalf("atelier gadget call todo list printed %q: %v", out, err)
	}
	if want := append(state.Items, map[string]any{"id": 3.0, "title": "after restart", "done": false}); !reflect.DeepEqual(items, want) {
		t.Fatalf("atelier gadget call todo list = %v, want %v", items, want)
	}
}

// TestTodoRealtimeAcrossRestart deploys each to-do gadget (two components and the JS-class
// gadget) to a real server, checks with two
// official capnweb clients that every change reaches both subscribers, restarts the server on
// the same data file, and checks that the items survived and events still flow, then reads
// them with the atelier CLI.
func TestTodoRealtimeAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: builds bin/atelier and the gadgets, and needs node")
	}
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	nodeDir := capnwebtests.NodeDir(root)
	if err := capnwebtests.CheckNode(nodeDir); err != nil {
		t.Fatal(err)
	}
	bin := atelierBinary(t, root)
	for _, dir := range []string{"gadgets/todo-js", "gadgets/todo-go", "gadgets/todo-jsgadget"} {
		t.Run(path.Base(dir), func(t *testing.T) {
			code := filepath.Join(root, dir) // a JS gadget is deployed from its folder
			if dir != "gadgets/todo-jsgadget" {
				code = guesttest.Path(t, dir)
			}
			data := filepath.Join(t.TempDir(), "atelier.db")
			state := filepath.Join(t.TempDir(), "state.json")

			first := startServer(t, bin, data)
			runScript(t, nodeDir, "setup", first.api, code, state)
			first.stop(t)

			second := startServer(t, bin, data)
			runScript(t, nodeDir, "check", second.api, state)
			checkCLI(t, bin, second.api, state)
			second.stop(t)
		})
	}
}
