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
	"atelier/host/capability/events"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/sdk/guesttest"
)

const counterGo = "gadgets/counter-go"

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	os.Exit(m.Run())
}

// server is a kernel over a real bbolt file, served over a real WebSocket.
type server struct {
	db   *store.DB
	rt   *runtime.Runtime
	k    *kernel.Kernel
	http *httptest.Server
}

func startServer(t *testing.T, dataFile string) *server {
	t.Helper()
	db, err := store.Open(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	bus := events.NewBus()
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(filepath.Dir(dataFile), "cache"), Interfaces: kernel.HostInterfaces(bus)})
	if err != nil {
		t.Fatal(err)
	}
	k := kernel.New(kernel.Config{Runtime: rt, Store: db, Events: bus, Limits: runtime.Limits{Timeout: 5 * time.Second}})
	s := &server{db: db, rt: rt, k: k, http: httptest.NewServer(gateway.New(gateway.Config{Kernel: k}))}
	t.Cleanup(s.stop)
	return s
}

func (s *server) stop() {
	s.http.Close()
	s.k.Close()
	s.rt.Close()
	s.db.Close()
}

// api dials the server and returns its main stub.
func (s *server) api(t *testing.T) *capnweb.Stub {
	t.Helper()
	sess, err := capnweb.DialWebSocket(context.Background(), "ws"+strings.TrimPrefix(s.http.URL, "http")+"/api", capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess.Main()
}

func await(t *testing.T, p *capnweb.Promise) any {
	t.Helper()
	v, err := p.Await(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestDeployCallAndStateSurvivesRestart(t *testing.T) {
	ctx := context.Background()
	code := guesttest.Bytes(t, counterGo)
	data := filepath.Join(t.TempDir(), "atelier.db")

	s := startServer(t, data)
	api := s.api(t)
	await(t, api.Call(ctx, "deploy", "counter", code, []string{"atelier:host/kv", "atelier:host/log"}))
	counter := api.Call(ctx, "gadget", "counter")
	if got := await(t, counter.Call(ctx, "increment", 5)); got != float64(5) {
		t.Fatalf("increment(5) = %v (%T), want 5", got, got)
	}
	if got := await(t, counter.Call(ctx, "increment", 7)); got != float64(12) {
		t.Fatalf("increment(7) = %v, want 12", got)
	}
	s.stop()

	s = startServer(t, data)
	api = s.api(t)
	if got := await(t, api.Call(ctx, "gadget", "counter").Call(ctx, "get")); got != float64(12) {
		t.Fatalf("after restart get() = %v, want 12", got)
	}
}

func TestDeployRefusesUngrantedImport(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, filepath.Join(t.TempDir(), "atelier.db"))
	api := s.api(t)
	_, err := api.Call(ctx, "deploy", "counter", guesttest.Bytes(t, counterGo), []string{"atelier:host/log"}).Await(ctx)
	if err == nil || !strings.Contains(err.Error(), `grant "atelier:host/kv" would allow it`) {
		t.Fatalf("deploy without the kv grant: err = %v, want it to name the kv grant", err)
	}
	gs := await(t, api.Call(ctx, "gadgets")).([]any)
	if len(gs) != 0 {
		t.Fatalf("a refused deploy left gadgets behind: %v", gs)
	}
}

func TestDeployRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, filepath.Join(t.TempDir(), "atelier.db"))
	api := s.api(t)
	for _, tc := range []struct {
		name string
		code []byte
		want string
	}{
		{"counter", []byte("not a component"), "compile"},
		{"../etc", guesttest.Bytes(t, counterGo), "use lowercase letters"},
		{"", guesttest.Bytes(t, counterGo), "want 1 to 64 characters"},
	} {
		_, err := api.Call(ctx, "deploy", tc.name, tc.code, []string{"atelier:host/kv", "atelier:host/log"}).Await(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("deploy %q: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestVersionsAndRollbackKeepState(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, filepath.Join(t.TempDir(), "atelier.db"))
	api := s.api(t)
	code := guesttest.Bytes(t, counterGo)
	grants := []string{"atelier:host/kv", "atelier:host/log"}
	await(t, api.Call(ctx, "deploy", "counter", code, grants))
	await(t, api.Call(ctx, "gadget", "counter").Call(ctx, "increment", 3))
	info := await(t, api.Call(ctx, "deploy", "counter", code, grants)).(map[string]any)
	if info["current"] != float64(2) {
		t.Fatalf("second deploy: current = %v, want 2", info["current"])
	}
	info = await(t, api.Call(ctx, "rollback", "counter", 1)).(map[string]any)
	if info["current"] != float64(1) {
		t.Fatalf("rollback: current = %v, want 1", info["current"])
	}
	if got := await(t, api.Call(ctx, "gadget", "counter").Call(ctx, "get")); got != float64(3) {
		t.Fatalf("state after redeploy and rollback: get() = %v, want 3", got)
	}
	if _, err := api.Call(ctx, "rollback", "counter", 9).Await(ctx); err == nil {
		t.Fatal("rollback to a missing version succeeded")
	}
}

func TestUnknownGadgetAndFunction(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, filepath.Join(t.TempDir(), "atelier.db"))
	api := s.api(t)
	if _, err := api.Call(ctx, "gadget", "nope").Call(ctx, "get").Await(ctx); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Fatalf("call on a missing gadget: err = %v, want not found", err)
	}
	await(t, api.Call(ctx, "deploy", "counter", guesttest.Bytes(t, counterGo), []string{"atelier:host/kv", "atelier:host/log"}))
	_, err := api.Call(ctx, "gadget", "counter").Call(ctx, "format", "/").Await(ctx)
	var rpcErr *capnweb.Error
	if !errors.As(err, &rpcErr) || rpcErr.Name != "TypeError" || !strings.Contains(rpcErr.Message, `no exported function "format"`) {
		t.Fatalf("call of a missing export: err = %#v", err)
	}
	// Bad arguments are refused by the value conversion, naming the argument; the gadget goes on.
	if _, err := api.Call(ctx, "gadget", "counter").Call(ctx, "increment", "five").Await(ctx); err == nil || !strings.Contains(err.Error(), "args[0]") {
		t.Fatalf("increment(\"five\"): err = %v, want a conversion error naming args[0]", err)
	}
	if got := await(t, api.Call(ctx, "gadget", "counter").Call(ctx, "increment", 1)); got != float64(1) {
		t.Fatalf("increment after a refused call = %v, want 1", got)
	}
}

func TestDeleteRemovesState(t *testing.T) {
	ctx := context.Background()
	s := startServer(t, filepath.Join(t.TempDir(), "atelier.db"))
	api := s.api(t)
	code := guesttest.Bytes(t, counterGo)
	grants := []string{"atelier:host/kv", "atelier:host/log"}
	await(t, api.Call(ctx, "deploy", "counter", code, grants))
	await(t, api.Call(ctx, "gadget", "counter").Call(ctx, "increment", 4))
	await(t, api.Call(ctx, "delete", "counter"))
	await(t, api.Call(ctx, "deploy", "counter", code, grants))
	if got := await(t, api.Call(ctx, "gadget", "counter").Call(ctx, "get")); got != float64(0) {
		t.Fatalf("a re-created gadget sees old state: get() = %v", got)
	}
}
