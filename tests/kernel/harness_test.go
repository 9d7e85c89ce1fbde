package kernel_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"atelier/capnweb"
	capnwebtests "atelier/tests/capnweb"
)

const (
	counterGo = "gadgets/counter-go"
	counterJS = "gadgets/counter-js"
	// password is every test user's password.
	password = "correct horse battery staple"
	// startTimeout bounds how long `atelier serve` may take to print its listening line.
	startTimeout = 60 * time.Second
	// stopTimeout bounds a graceful shutdown after SIGTERM.
	stopTimeout = 30 * time.Second
	// callTimeout bounds one RPC; a server that stops answering fails the test instead of
	// hanging it.
	callTimeout = 30 * time.Second
)

var counterGrants = []string{"atelier:host/kv", "atelier:host/log"}

var (
	binOnce sync.Once
	binPath string
	binErr  error
	tmpDir  string // this run's binary and compiled-component cache
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // else every Wasmtime error captures a slow Rust backtrace
	dir, err := os.MkdirTemp("", "atelier-kernel-tests-")
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
func atelierBinary(tb testing.TB) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("skipped under -short: builds bin/atelier and the counter gadget")
	}
	binOnce.Do(func() {
		root, err := capnwebtests.ModuleRoot()
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(tmpDir, "atelier")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/atelier")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/atelier: %w\n%s", err, out)
		}
	})
	if binErr != nil {
		tb.Fatal(binErr)
	}
	return binPath
}

// listenLine finds the API URL in what `atelier serve` prints once it listens: either
// "Cap'n Web: ws://HOST:PORT/api," or "api=ws://HOST:PORT/api".
var listenLine = regexp.MustCompile(`(ws://[^\s,)]+/api)\b`)

// serveProcess is a running `atelier serve` subprocess.
type serveProcess struct {
	url  string // the WebSocket URL of the API
	data string
	cmd  *exec.Cmd

	mu     sync.Mutex
	output strings.Builder
	exited chan struct{}
}

// startServe runs `atelier serve` on a free loopback port with its state in data and waits for
// its listening line; the process inherits the environment, from which TestMain removed
// RUST_BACKTRACE (even an empty value makes Wasmtime capture slow backtraces). The process is killed when the test ends if it still runs; its output is
// logged if the test failed.
func startServe(tb testing.TB, bin, data string) *serveProcess {
	tb.Helper()
	s := &serveProcess{data: data, exited: make(chan struct{})}
	s.cmd = exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data,
		"--cache", filepath.Join(tmpDir, "cache"))
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	s.cmd.Stderr = s.cmd.Stdout // one pipe: the listening line may go to either stream
	if err := s.cmd.Start(); err != nil {
		tb.Fatalf("start %s serve: %v", bin, err)
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			s.mu.Lock()
			s.output.WriteString(line + "\n")
			s.mu.Unlock()
			if m := listenLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = s.cmd.Wait()
		close(s.exited)
	}()
	tb.Cleanup(func() {
		s.kill(tb)
		if tb.Failed() {
			tb.Logf("output of atelier serve --data %s:\n%s", data, s.Output())
		}
	})
	select {
	case s.url = <-found:
		return s
	case <-s.exited:
		tb.Fatalf("atelier serve exited before listening (%v); output:\n%s", s.cmd.ProcessState, s.Output())
	case <-time.After(startTimeout):
		tb.Fatalf("atelier serve printed no ws://.../api line within %v; output:\n%s", startTimeout, s.Output())
	}
	return nil
}

// Output returns what the server has printed so far.
func (s *serveProcess) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.output.String()
}

// kill sends SIGKILL (unless the process has exited) and waits for the process to be gone.
func (s *serveProcess) kill(tb testing.TB) {
	select {
	case <-s.exited:
		return
	default:
	}
	if err := s.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		tb.Errorf("SIGKILL atelier serve: %v", err)
	}
	<-s.exited
}

// terminate sends SIGTERM and checks that the server exits with status 0 in time.
func (s *serveProcess) terminate(tb testing.TB) {
	tb.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatalf("SIGTERM atelier serve: %v", err)
	}
	select {
	case <-s.exited:
	case <-time.After(stopTimeout):
		tb.Fatalf("atelier serve did not stop within %v of SIGTERM; output:\n%s", stopTimeout, s.Output())
	}
	if !s.cmd.ProcessState.Success() {
		tb.Fatalf("atelier serve exited with %v after SIGTERM, want status 0; output:\n%s", s.cmd.ProcessState, s.Output())
	}
}

// session is one client's WebSocket session with its main object (the public API).
type session struct {
	s    *capnweb.Session
	root *capnweb.Stub
}

// dial opens a WebSocket session to url.
func dial(ctx context.Context, url string) (*session, error) {
	s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	return &session{s: s, root: s.Main()}, nil
}

// mustDial opens a session that is closed when tb ends.
func mustDial(tb testing.TB, url string) *session {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := dial(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.s.Close() })
	return s
}

// withSession runs fn on a fresh session to url and closes the session when fn returns, which
// releases everything the server holds for it.
func withSession(tb testing.TB, url string, fn func(s *session)) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := dial(ctx, url)
	if err != nil {
		tb.Fatal(err)
	}
	defer s.s.Close()
	fn(s)
}

// await waits for p with the call timeout.
func await(p *capnweb.Promise) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	return p.Await(ctx)
}

// must awaits p and fails tb on error; what names the call in the failure.
func must(tb testing.TB, what string, p *capnweb.Promise) any {
	tb.Helper()
	v, err := await(p)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	return v
}

// mustString awaits a string result.
func mustString(tb testing.TB, what string, p *capnweb.Promise) string {
	tb.Helper()
	v := must(tb, what, p)
	s, ok := v.(string)
	if !ok {
		tb.Fatalf("%s: got %T %v, want a string", what, v, v)
	}
	return s
}

// mustStub awaits a stub result.
func mustStub(tb testing.TB, what string, p *capnweb.Promise) *capnweb.Stub {
	tb.Helper()
	v := must(tb, what, p)
	st, ok := v.(*capnweb.Stub)
	if !ok {
		tb.Fatalf("%s: got %T %v, want a stub", what, v, v)
	}
	return st
}

var bg = context.Background()

// account is a user with one workspace, as set up by newAccount.
type account struct {
	token     string
	workspace string // the workspace id
}

// newAccount signs up name on a session of its own, creates the workspace "home" and returns
// the token and workspace id.
func newAccount(tb testing.TB, url, name string) (acc account) {
	tb.Helper()
	withSession(tb, url, func(s *session) {
		acc.token = mustString(tb, "signup", s.root.Call(bg, "signup", name, password))
		info := must(tb, "createWorkspace", s.root.Call(bg, "authenticate", acc.token).Call(bg, "createWorkspace", "home").Call(bg, "info"))
		acc.workspace, _ = info.(map[string]any)["id"].(string)
		if acc.workspace == "" {
			tb.Fatalf("workspace info %v has no id", info)
		}
	})
	return acc
}

// workspaceOn returns the pipelined workspace stub of acc on s (no round trip).
func (acc account) workspaceOn(s *session) *capnweb.Promise {
	return s.root.Call(bg, "authenticate", acc.token).Call(bg, "openWorkspace", acc.workspace)
}

// createGadget creates gadget name from code with the counter's grants and waits for it.
func (acc account) createGadget(tb testing.TB, s *session, name string, code []byte) {
	tb.Helper()
	must(tb, "createGadget "+name, acc.workspaceOn(s).Call(bg, "createGadget", name, code, counterGrants).Call(bg, "info"))
}

// connect returns the pipelined connection to gadget name on s (no round trip).
func (acc account) connect(s *session, name string) *capnweb.Promise {
	return acc.workspaceOn(s).Call(bg, "gadget", name).Call(bg, "connect")
}

// count converts a u64 gadget result (a number, or a bigint beyond 2^53) to uint64.
func count(v any) (uint64, error) {
	switch n := v.(type) {
	case float64:
		if n < 0 || n != math.Trunc(n) || n > 1<<53 {
			return 0, fmt.Errorf("got %v, want a u64", n)
		}
		return uint64(n), nil
	case *big.Int:
		if !n.IsUint64() {
			return 0, fmt.Errorf("got %v, want a u64", n)
		}
		return n.Uint64(), nil
	}
	return 0, fmt.Errorf("got %T %v, want a u64", v, v)
}
