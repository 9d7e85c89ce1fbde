package kernel_test

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"path/filepath"
	"testing"
	"time"

	"atelier/capnweb"
	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/serveproc"
)

const (
	counterGo = "gadgets/counter-go"
	counterJS = "gadgets/counter-js"
	// password is every test user's password.
	password = "correct horse battery staple"
	// callTimeout bounds one RPC; a server that stops answering fails the test instead of
	// hanging it.
	callTimeout = 30 * time.Second
)

var counterGrants = []string{"atelier:host/kv", "atelier:host/log"}

// tmpDir holds this run's binary and compiled-component cache.
var tmpDir string

func TestMain(m *testing.M) { serveproc.Main(m, "kernel-tests", &tmpDir) }

// atelierBinary builds ./cmd/atelier once per test process and returns its path.
func atelierBinary(tb testing.TB) string { return serveproc.Binary(tb, tmpDir) }

// startServe runs `atelier serve` with its state in data (see package serveproc).
func startServe(tb testing.TB, bin, data string) *serveproc.Process {
	return serveproc.Start(tb, bin, data, filepath.Join(tmpDir, "cache"))
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
func await(p *capnweb.Promise) (any, error) { return capnwebtests.Await(p) }

// must awaits p and fails tb on error; what names the call in the failure.
func must(tb testing.TB, what string, p *capnweb.Promise) any {
	tb.Helper()
	return capnwebtests.Must(tb, what, p)
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
