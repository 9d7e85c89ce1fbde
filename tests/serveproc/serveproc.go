// Package serveproc builds the atelier binary and runs `atelier serve` as a separate process for
// tests that need the real thing: a process that can be killed mid-write and restarted on the
// same data file.
package serveproc

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	capnwebtests "atelier/tests/capnweb"
)

const (
	// StartTimeout bounds how long `atelier serve` may take to print its listening line.
	StartTimeout = 60 * time.Second
	// StopTimeout bounds a graceful shutdown after SIGTERM.
	StopTimeout = 30 * time.Second
)

var (
	binMu    sync.Mutex
	binPaths = map[string]string{}
)

// Binary builds ./cmd/atelier into dir once per test process and returns its path. Under
// -short it skips the test.
func Binary(tb testing.TB, dir string) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("skipped under -short: builds and runs the atelier binary")
	}
	binMu.Lock()
	defer binMu.Unlock()
	if p, ok := binPaths[dir]; ok {
		return p
	}
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(dir, "atelier")
	cmd := exec.Command("go", "build", "-o", path, "./cmd/atelier")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build ./cmd/atelier: %v\n%s", err, out)
	}
	binPaths[dir] = path
	return path
}

// listenLine finds the API URL in what `atelier serve` prints once it listens
// (`serving http://HOST:PORT (Cap'n Web: ws://HOST:PORT/api, batch: ...)`).
var listenLine = regexp.MustCompile(`(ws://[^\s,()]+/api)\b`)

// Process is a running `atelier serve`.
type Process struct {
	// URL is the WebSocket URL of the API, read from the server's listening line.
	URL string
	// Data is the server's data file.
	Data string

	bin, cacheDir string
	args          []string // flags after --addr, --data and --cache
	found         chan string
	cmd           *exec.Cmd
	mu            sync.Mutex
	output        strings.Builder
	exited        chan struct{}
}

// Start runs `bin serve` on a free loopback port with its state in data and its compiled
// components cached in cacheDir, and waits for its listening line. The process inherits the
// environment (tests unset RUST_BACKTRACE first: Wasmtime errors are slow with it). It is
// killed when tb ends if it still runs, and its output is logged if tb failed.
func Start(tb testing.TB, bin, data, cacheDir string) *Process {
	tb.Helper()
	return start(tb, bin, data, cacheDir, "127.0.0.1:0")
}

// Restart starts the server again, after it exited, on the same address and data file (so
// that clients can reconnect to the URL they had).
func (p *Process) Restart(tb testing.TB) *Process {
	tb.Helper()
	select {
	case <-p.exited:
	default:
		tb.Fatal("restart: the server is still running; Terminate or Kill it first")
	}
	addr := strings.TrimSuffix(strings.TrimPrefix(p.URL, "ws://"), "/api")
	return launch(tb, p.bin, p.Data, p.cacheDir, addr, p.args).Wait(tb)
}

// start runs `bin serve` on addr and waits for it.
func start(tb testing.TB, bin, data, cacheDir, addr string) *Process {
	tb.Helper()
	return launch(tb, bin, data, cacheDir, addr, nil).Wait(tb)
}

// Launch runs `bin serve` on a free loopback port with extra flags (for instance a cluster
// node's) and returns at once; Wait waits for its listening line. Nodes of a cluster are
// launched together, since each waits for the others before it listens.
func Launch(tb testing.TB, bin, data, cacheDir string, args ...string) *Process {
	tb.Helper()
	return launch(tb, bin, data, cacheDir, "127.0.0.1:0", args)
}

func launch(tb testing.TB, bin, data, cacheDir, addr string, args []string) *Process {
	tb.Helper()
	p := &Process{Data: data, bin: bin, cacheDir: cacheDir, args: args, exited: make(chan struct{}), found: make(chan string, 1)}
	p.cmd = exec.Command(bin, append([]string{"serve", "--addr", addr, "--data", data, "--cache", cacheDir}, args...)...)
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout // one pipe: the listening line may go to either stream
	if err := p.cmd.Start(); err != nil {
		tb.Fatalf("start %s serve: %v", bin, err)
	}
	found := p.found
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.output.WriteString(line + "\n")
			p.mu.Unlock()
			if m := listenLine.FindStringSubmatch(line); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	tb.Cleanup(func() {
		p.Kill(tb)
		if tb.Failed() {
			tb.Logf("output of atelier serve --data %s:\n%s", data, p.Output())
		}
	})
	return p
}

// Wait waits until the server prints its listening line and sets URL.
func (p *Process) Wait(tb testing.TB) *Process {
	tb.Helper()
	select {
	case p.URL = <-p.found:
		return p
	case <-p.exited:
		tb.Fatalf("atelier serve exited before listening (%v); output:\n%s", p.cmd.ProcessState, p.Output())
	case <-time.After(StartTimeout):
		tb.Fatalf("atelier serve printed no ws://.../api line within %v; output:\n%s", StartTimeout, p.Output())
	}
	return nil
}

// Signal sends sig to the server (SIGSTOP and SIGCONT pause and resume it).
func (p *Process) Signal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signal %v to atelier serve: %v", sig, err)
	}
}

// Exited is closed once the server process has exited.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Pid returns the server's process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Output returns what the server has printed so far.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// adminTokenLine is where `atelier serve` prints the admin token on its first run.
var adminTokenLine = regexp.MustCompile(`admin token[^\n]*\n\s+(\S+)`)

// AdminToken returns the admin token the server printed on its first run, waiting up to
// StartTimeout for it (a node of a cluster prints it after its listening line).
func (p *Process) AdminToken(tb testing.TB) string {
	tb.Helper()
	for deadline := time.Now().Add(StartTimeout); ; time.Sleep(20 * time.Millisecond) {
		if m := adminTokenLine.FindStringSubmatch(p.Output()); m != nil {
			return m[1]
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no admin token in the output of atelier serve:\n%s", p.Output())
		}
	}
}

// Kill sends SIGKILL (unless the process has exited) and waits for the process to be gone.
func (p *Process) Kill(tb testing.TB) {
	select {
	case <-p.exited:
		return
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		tb.Errorf("SIGKILL atelier serve: %v", err)
	}
	<-p.exited
}

// Terminate sends SIGTERM and checks that the server exits with status 0 within StopTimeout.
func (p *Process) Terminate(tb testing.TB) {
	tb.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		tb.Fatalf("SIGTERM atelier serve: %v", err)
	}
	select {
	case <-p.exited:
	case <-time.After(StopTimeout):
		tb.Fatalf("atelier serve did not stop within %v of SIGTERM; output:\n%s", StopTimeout, p.Output())
	}
	if !p.cmd.ProcessState.Success() {
		tb.Fatalf("atelier serve exited with %v after SIGTERM, want status 0; output:\n%s", p.cmd.ProcessState, p.Output())
	}
}

// Main runs the tests of a package that starts atelier processes; call it from TestMain. It
// unsets RUST_BACKTRACE (with it, every Wasmtime error captures a slow Rust backtrace) and sets
// *tmp to a fresh folder for the run's binary and caches, named after name, which it removes
// when the tests end.
func Main(m *testing.M, name string, tmp *string) {
	os.Unsetenv("RUST_BACKTRACE")
	dir, err := os.MkdirTemp("", "atelier-"+name+"-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*tmp = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
