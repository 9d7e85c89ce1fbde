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

// BenchmarkKernelIncrement is the kernel's share of the full path, without Cap'n Web: 100
// callers on 10 counter gadgets call Connection.CallMethod directly (access checks, actor,
// instance call, commit through the output gate to a real bbolt file with fsync).
func BenchmarkKernelIncrement(b *testing.B) {
	const callers, gadgets = 100, 10
	ctx := context.Background()
	dir := b.TempDir()
	db, err := store.Open(filepath.Join(dir, "a.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(dir, "cache"), Interfaces: HostInterfaces(nil)})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	k := New(Config{Runtime: rt, Store: db, Password: auth.TestParams, Quotas: quota.Limits{CallsPerSecond: quota.Unlimited}}) // measures throughput
	defer k.Close()
	u := store.User{ID: store.NewID("u"), Name: "bench", Created: time.Now()}
	if err := db.CreateUser(ctx, u); err != nil {
		b.Fatal(err)
	}
	w := store.Workspace{ID: store.WorkspaceID(store.NewID("ws")), Name: "w", Owner: u.ID, Created: time.Now()}
	if err := db.CreateWorkspace(ctx, w); err != nil {
		b.Fatal(err)
	}
	ws := &Workspace{k: k, p: &principal{k: k, userID: u.ID, username: u.Name}, id: w.ID}
	code := guesttest.Bytes(b, "gadgets/counter-go")
	pool := make(chan *Connection, callers)
	for g := range gadgets {
		gad, err := ws.CreateGadget(ctx, fmt.Sprint("c", g), code, []string{"atelier:host/kv", "atelier:host/log"}, nil)
		if err != nil {
			b.Fatal(err)
		}
		c, err := gad.Connect(ctx)
		if err != nil {
			b.Fatal(err)
		}
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
