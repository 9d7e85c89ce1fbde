package kernel_test

import (
	"context"
	"errors"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/auth"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/sdk/guesttest"
)

const (
	counterGo = "gadgets/counter-go"
	todoJS    = "gadgets/todo-js"
)

var (
	counterGrants = []string{"atelier:host/kv", "atelier:host/log"}
	todoGrants    = []string{"atelier:host/kv", "atelier:host/log", "atelier:host/events"}
)

// cacheDir holds the compiled-component cache shared by this run's servers, so that each
// guest is compiled once per run.
var cacheDir string

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	dir, err := os.MkdirTemp("", "atelier-kernel-cache-")
	if err != nil {
		panic(err)
	}
	cacheDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a kernel over a real bbolt file, served over a real WebSocket.
type server struct {
	db   *store.Bolt
	rt   *runtime.Runtime
	k    *kernel.Kernel
	gw   *gateway.Gateway
	http *httptest.Server
	url  string
}

type option func(*kernel.Config)

func startServer(t *testing.T, dataFile string, opts ...option) *server {
	t.Helper()
	db, err := store.Open(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		t.Fatal(err)
	}
	cfg := kernel.Config{Runtime: rt, Store: db, Limits: runtime.Limits{Timeout: 5 * time.Second}, Password: auth.TestParams}
	for _, o := range opts {
		o(&cfg)
	}
	k := kernel.New(cfg)
	gw := gateway.New(gateway.Config{Kernel: k})
	s := &server{db: db, rt: rt, k: k, gw: gw, http: httptest.NewServer(gw)}
	s.url = "ws" + strings.TrimPrefix(s.http.URL, "http") + "/api"
	t.Cleanup(s.stop)
	return s
}

func (s *server) stop() {
	s.http.CloseClientConnections()
	s.http.Close()
	s.k.Close()
	s.rt.Close()
	s.db.Close()
}

// dial opens a session and returns its main stub.
func (s *server) dial(t *testing.T) *capnweb.Stub {
	t.Helper()
	sess, err := capnweb.DialWebSocket(context.Background(), s.url, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess.Main()
}

// user signs up name and returns its authenticated API stub.
func (s *server) user(t *testing.T, name string) *capnweb.Stub {
	t.Helper()
	root := s.dial(t)
	tok := await(t, root.Call(ctx, "signup", name, "password-"+name)).(string)
	return await(t, root.Call(ctx, "authenticate", tok)).(*capnweb.Stub)
}

var ctx = context.Background()

func await(t *testing.T, p *capnweb.Promise) any {
	t.Helper()
	v, err := p.Await(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// refused checks that p fails with code and a message containing want.
func refused(t *testing.T, p *capnweb.Promise, code, want string) {
	t.Helper()
	_, err := p.Await(ctx)
	var e *capnweb.Error
	if !errors.As(err, &e) {
		t.Fatalf("got %v, want a %s error", err, code)
	}
	if e.Props["code"] != code || !strings.Contains(e.Message, want) {
		t.Fatalf("got %s %q (code %v), want code %s and a message containing %q", e.Name, e.Message, e.Props["code"], code, want)
	}
}

func TestSignupWorkspaceGadgetAndRestart(t *testing.T) {
	code := guesttest.Bytes(t, counterGo)
	data := filepath.Join(t.TempDir(), "atelier.db")
	s := startServer(t, data)
	root := s.dial(t)
	if got := await(t, root.Call(ctx, "ping")); got != "pong" {
		t.Fatalf("ping = %v", got)
	}
	tok := await(t, root.Call(ctx, "signup", "ada", "correct horse battery staple")).(string)
	api := root.Call(ctx, "authenticate", tok)
	ws := api.Call(ctx, "createWorkspace", "home")
	counter := ws.Call(ctx, "createGadget", "counter", code, counterGrants)
	app := counter.Call(ctx, "connect")
	if got := await(t, app.Call(ctx, "increment", 5)); got != float64(5) {
		t.Fatalf("increment(5) = %v", got)
	}
	if got := await(t, app.Call(ctx, "increment", 7)); got != float64(12) {
		t.Fatalf("increment(7) = %v", got)
	}
	who := await(t, api.Call(ctx, "whoami")).(map[string]any)
	if who["username"] != "ada" || who["kind"] != "user" {
		t.Fatalf("whoami = %v", who)
	}
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	s.stop()

	s = startServer(t, data)
	root = s.dial(t)
	refused(t, root.Call(ctx, "login", "ada", "wrong password"), "UNAUTHORIZED", "wrong username or password")
	tok = await(t, root.Call(ctx, "login", "ada", "correct horse battery staple")).(string)
	api = root.Call(ctx, "authenticate", tok)
	list := await(t, api.Call(ctx, "listWorkspaces")).([]any)
	if len(list) != 1 || list[0].(map[string]any)["role"] != "owner" || list[0].(map[string]any)["owner"] != "ada" {
		t.Fatalf("listWorkspaces = %v", list)
	}
	got := await(t, api.Call(ctx, "openWorkspace", wsID).Call(ctx, "gadget", "counter").Call(ctx, "connect").Call(ctx, "get"))
	if got != float64(12) {
		t.Fatalf("after restart get() = %v, want 12", got)
	}
}
