// Package capnweb checks Atelier's Cap'n Web implementation against the official npm capnweb
// package (the conformance peer). It starts the Go conformance server (./conformance) and the
// official Node server (node/server.mjs) as subprocesses and drives them with the official
// client (node/scenarios.mjs, node/bench.mjs). The interop tests live in this package; the
// benchmark comparison is the ./benchcmp command.
package capnweb

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// listeningPrefix starts the first stdout line of every conformance server.
const listeningPrefix = "listening on "

// startTimeout bounds how long a server may take to print its listening line.
const startTimeout = 30 * time.Second

// ModuleRoot returns the directory that holds the atelier go.mod, asking the go command so that
// it works from any directory inside the module.
func ModuleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("not inside the atelier module (go env GOMOD is empty)")
	}
	return filepath.Dir(gomod), nil
}

// NodeDir returns the directory of the Node scripts (node/) for a module root.
func NodeDir(root string) string {
	return filepath.Join(root, "tests", "capnweb", "node")
}

// CheckNode reports whether node is on PATH and the pinned npm packages are installed in
// nodeDir, with an error that says how to install them.
func CheckNode(nodeDir string) error {
	if _, err := exec.LookPath("node"); err != nil {
		return fmt.Errorf("node (>= 20) is required for the Cap'n Web interop tests: %w", err)
	}
	for _, pkg := range []string{"capnweb", "ws"} {
		if _, err := os.Stat(filepath.Join(nodeDir, "node_modules", pkg, "package.json")); err != nil {
			return fmt.Errorf("npm package %s is not installed in %s: run scripts/setup.sh "+
				"(or `npm ci` in that directory)", pkg, nodeDir)
		}
	}
	return nil
}

// BuildGoServer compiles the Go conformance server (./tests/capnweb/conformance) into outDir
// and returns the path of the binary.
func BuildGoServer(root, outDir string) (string, error) {
	bin := filepath.Join(outDir, "conformance")
	cmd := exec.Command("go", "build", "-o", bin, "./tests/capnweb/conformance")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build Go conformance server: %w\n%s", err, out)
	}
	return bin, nil
}

// StartGoServer starts a Go conformance server binary (see BuildGoServer) on a free loopback port.
func StartGoServer(bin string) (*Server, error) {
	return StartServer(exec.Command(bin, "--addr", "127.0.0.1:0"))
}

// StartNodeServer starts the official capnweb Node server (node/server.mjs) on a free loopback
// port.
func StartNodeServer(nodeDir string) (*Server, error) {
	cmd := exec.Command("node", "server.mjs", "--port", "0")
	cmd.Dir = nodeDir
	return StartServer(cmd)
}

// Server is a running conformance server subprocess.
type Server struct {
	// URL is the base URL from the listening line, e.g. http://127.0.0.1:43210. The server
	// serves WebSocket sessions at URL/ws and HTTP batch sessions at URL/batch.
	URL string

	cmd    *exec.Cmd
	output *syncBuffer
	exited chan struct{}
}

// StartServer starts cmd, waits for its first stdout line `listening on URL`, and keeps
// collecting the rest of its stdout and stderr (see Output). The caller must Close the server.
func StartServer(cmd *exec.Cmd) (*Server, error) {
	s := &Server{cmd: cmd, output: &syncBuffer{}, exited: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	cmd.Stderr = s.output
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	firstLine := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		firstLine <- line
		_, _ = io.Copy(s.output, r)
		_ = cmd.Wait()
		close(s.exited)
	}()
	select {
	case line := <-firstLine:
		url, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), listeningPrefix)
		if !ok || !strings.HasPrefix(url, "http://") {
			s.Close()
			return nil, fmt.Errorf("start %s: first stdout line is %q, want %q; output:\n%s",
				cmd.Path, line, listeningPrefix+"http://HOST:PORT", s.Output())
		}
		s.URL = url
		return s, nil
	case <-time.After(startTimeout):
		s.Close()
		return nil, fmt.Errorf("start %s: no listening line within %v; output:\n%s", cmd.Path, startTimeout, s.Output())
	}
}

// Output returns what the server wrote to stderr and, after its listening line, to stdout.
func (s *Server) Output() string {
	return s.output.String()
}

// Close kills the server process and waits for it to exit.
func (s *Server) Close() {
	_ = s.cmd.Process.Kill()
	<-s.exited
}

// UserHZ is the unit of the CPU times in /proc (USER_HZ, 100 on every Linux platform Go
// supports).
const UserHZ = 100

// CPUTimes returns the user and the system (kernel) CPU time the server process has used so
// far, apart (Linux only).
func (s *Server) CPUTimes() (user, system time.Duration, err error) {
	return ProcessCPUTimes(s.cmd.Process.Pid)
}

// ProcessCPU returns the user plus system CPU time process pid has used so far, from
// /proc/PID/stat (Linux only).
func ProcessCPU(pid int) (time.Duration, error) {
	user, system, err := ProcessCPUTimes(pid)
	return user + system, err
}

// ProcessCPUTimes returns the user and the system CPU time process pid has used so far, from
// /proc/PID/stat (Linux only).
func ProcessCPUTimes(pid int) (user, system time.Duration, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
	}
	// The command name (field 2) may hold spaces; the fields after it start past its ')'.
	_, rest, ok := strings.Cut(string(stat), ") ")
	fields := strings.Fields(rest)
	if !ok || len(fields) < 13 {
		return 0, 0, fmt.Errorf("CPU time of process %d: malformed /proc stat %q", pid, stat)
	}
	var ticks [2]int64
	for i, f := range fields[11:13] { // utime and stime, fields 14 and 15 of the whole line
		if ticks[i], err = strconv.ParseInt(f, 10, 64); err != nil {
			return 0, 0, fmt.Errorf("CPU time of process %d: %w", pid, err)
		}
	}
	return time.Duration(ticks[0]) * time.Second / UserHZ, time.Duration(ticks[1]) * time.Second / UserHZ, nil
}

// ProcessStatus returns a size field of /proc/PID/status ("VmHWM", "VmRSS") in bytes (Linux
// only).
func ProcessStatus(pid int, field string) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("%s of process %d: %w", field, pid, err)
	}
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s of process %d: %w", field, pid, err)
			}
			return kib << 10, nil
		}
	}
	return 0, fmt.Errorf("%s of process %d: not in /proc/%d/status", field, pid, pid)
}

// RunNode runs `node script args...` in nodeDir and returns its stdout. A non-zero exit status
// is returned as an error that includes stderr; stdout is returned as well, because the scripts
// still print their report when they fail.
func RunNode(ctx context.Context, nodeDir, script string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "node", append([]string{script}, args...)...)
	cmd.Dir = nodeDir
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("node %s %s: %w\nstderr:\n%s", script, strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// syncBuffer is a bytes.Buffer that the output-copying goroutine and readers share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
