package kernel

import (
	"context"
	"fmt"
	"path/filepath"
	goruntime "runtime"
	"testing"
	"time"

	"atelier/host/auth"
	"atelier/host/quota"
	"atelier/host/runtime"
	"atelier/host/store"
	"atelier/sdk/guesttest"
)

// counterConnections starts a kernel over a real bbolt file in a temporary directory, creates
// n counter-go gadgets (grants kv and log) in a workspace of a fresh user and returns a
// Connection to each: Connection.CallMethod is the kernel's call path without Cap'n Web (access
// checks, actor, instance call, commit through the output gate with fsync). The calls_per_second
// quota is off: the callers measure how many calls a workspace can make.
func counterConnections(tb testing.TB, n int) []*Connection {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	db, err := store.Open(filepath.Join(dir, "a.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(dir, "cache"), Interfaces: HostInterfaces(nil)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	k := New(Config{Runtime: rt, Store: db, Password: auth.TestParams, Quotas: quota.Limits{CallsPerSecond: quota.Unlimited}})
	tb.Cleanup(func() { k.Close() })
	u := store.User{ID: store.NewID("u"), Name: "bench", Created: time.Now()}
	if err := db.CreateUser(ctx, u); err != nil {
		tb.Fatal(err)
	}
	w := store.Workspace{ID: store.WorkspaceID(store.NewID("ws")), Name: "w", Owner: u.ID, Created: time.Now()}
	if err := db.CreateWorkspace(ctx, w); err != nil {
		tb.Fatal(err)
	}
	ws := &Workspace{k: k, p: &principal{k: k, userID: u.ID, username: u.Name}, id: w.ID}
	code := guesttest.Bytes(tb, "gadgets/counter-go")
	conns := make([]*Connection, n)
	for g := range conns {
		gad, err := ws.CreateGadget(ctx, fmt.Sprint("c", g), code, []string{"atelier:host/kv", "atelier:host/log"}, nil)
		if err != nil {
			tb.Fatal(err)
		}
		if conns[g], err = gad.Connect(ctx); err != nil {
			tb.Fatal(err)
		}
	}
	return conns
}

// BenchmarkKernelIncrement is the kernel's share of the full path, without Cap'n Web: 100
// callers on 10 counter gadgets call Connection.CallMethod directly (counterConnections).
func BenchmarkKernelIncrement(b *testing.B) {
	const callers, gadgets = 100, 10
	ctx := context.Background()
	pool := make(chan *Connection, callers)
	for _, c := range counterConnections(b, gadgets) {
		for range callers / gadgets {
			pool <- c
		}
	}
	b.SetParallelism(max(1, callers/goruntime.GOMAXPROCS(0)))
	defer CPUPerOp(b)()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		c := <-pool
		for pb.Next() {
			if _, err := c.CallMethod(ctx, "increment", []any{float64(1)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
