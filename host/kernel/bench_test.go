package kernel_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"atelier/capnweb"
	"atelier/host/capability/kv"
	"atelier/host/kernel"
	"atelier/host/runtime"
	"atelier/sdk/guesttest"
)

// BenchmarkDirectIncrement is the baseline: counter-go's increment (one kv write) called on a
// runtime instance with an in-memory kv store.
func BenchmarkDirectIncrement(b *testing.B) {
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	comp, err := rt.Compile(ctx, guesttest.Bytes(b, counterGo))
	if err != nil {
		b.Fatal(err)
	}
	defer comp.Close()
	inst, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Grants: append(runtime.WASIBaseline(), counterGrants...),
		Bind: map[string]any{kv.Grant: kv.NewMemory(0)}})
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()
	defer kernel.CPUPerOp(b)()
	for b.Loop() {
		if _, err := inst.Call(ctx, "increment", uint32(1)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFullPathIncrement is the full path at 100 clients: WebSocket -> kernel -> gadget ->
// kv write committed (fsync'd) -> reply. Each client has its own session; the clients share
// 10 gadgets of one workspace.
func BenchmarkFullPathIncrement(b *testing.B) {
	const clients, gadgets = 100, 10
	s := startServer(&testing.T{}, filepath.Join(b.TempDir(), "a.db"), unlimitedCalls)
	defer s.stop()
	code := guesttest.Bytes(b, counterGo)
	root := dialB(b, s)
	tok, err := root.Call(ctx, "signup", "bench", "password-bench").Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ws := root.Call(ctx, "authenticate", tok).Call(ctx, "createWorkspace", "w")
	id, err := ws.Call(ctx, "info").Get("id").Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	for g := range gadgets {
		if _, err := ws.Call(ctx, "createGadget", fmt.Sprint("c", g), code, counterGrants).Await(ctx); err != nil {
			b.Fatal(err)
		}
	}
	pool := make(chan *capnweb.Promise, clients)
	for c := range clients {
		app := dialB(b, s).Call(ctx, "authenticate", tok).Call(ctx, "openWorkspace", id).
			Call(ctx, "gadget", fmt.Sprint("c", c%gadgets)).Call(ctx, "connect")
		if _, err := app.Call(ctx, "increment", 1).Await(ctx); err != nil {
			b.Fatal(err)
		}
		pool <- app
	}
	b.SetParallelism(max(1, clients/runtimeGOMAXPROCS()))
	defer kernel.CPUPerOp(b)()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		app := <-pool
		for pb.Next() {
			if _, err := app.Call(ctx, "increment", 1).Await(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func dialB(b *testing.B, s *server) *capnweb.Stub {
	sess, err := capnweb.DialWebSocket(ctx, s.url, capnweb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { sess.Close() })
	return sess.Main()
}
