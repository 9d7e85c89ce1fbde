package main

import (
	"context"
	"fmt"
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
	"atelier/host/quota"
	"atelier/host/runtime"
	"atelier/host/store"
)

// writer is a JS gadget that writes n keys in one call.
const writer = `export class Gadget {
  write(n, tag) {
    const batch = {};
    for (let i = 0; i < n; i++) batch["k" + String(i).padStart(3, "0")] = { tag, i };
    this.storage.put(batch);
    return n;
  }
}`

// BenchmarkDryRun compares, in the same run, a snippet whose one gadget call writes 100 keys
// run as a dry run and then committed (dry-run+commit: the dry run starts a shadow instance of
// the gadget over a fork of its state; the commit freezes the gadget, checks the 100 keys,
// writes them in one commit and replaces the live instance) against the same snippet run for
// real (real: the call's 100 writes in one commit by the live instance). Each round writes new
// values. It also reports the commit alone (commit-µs).
func BenchmarkDryRun(b *testing.B) {
	const keys = 100
	ws := benchWorkspace(b)
	snippet := func(round int) string {
		return fmt.Sprintf("export default async (env) => env.writer.write(%d, %d)", keys, round)
	}
	b.Run(fmt.Sprintf("%dkeys/dry-run+commit", keys), func(b *testing.B) {
		var commit time.Duration
		for round := 0; b.Loop(); round++ {
			res, err := capnweb.AwaitAs[kernel.CodeResult](ctx(), ws.Call(ctx(), "executeCode", snippet(round), map[string]any{"dryRun": true}))
			if err != nil || res.Error != nil || res.DryRun == nil || len(res.DryRun.Gadgets) != 1 {
				b.Fatalf("dry run: %v %+v", err, res)
			}
			start := time.Now()
			if _, err := ws.Call(ctx(), "commitDryRun", res.DryRun.ID).Await(ctx()); err != nil {
				b.Fatal(err)
			}
			commit += time.Since(start)
		}
		b.ReportMetric(float64(commit.Microseconds())/float64(b.N), "commit-µs")
	})
	b.Run(fmt.Sprintf("%dkeys/real", keys), func(b *testing.B) {
		for round := 0; b.Loop(); round++ {
			res, err := capnweb.AwaitAs[kernel.CodeResult](ctx(), ws.Call(ctx(), "executeCode", snippet(round), map[string]any{}))
			if err != nil || res.Error != nil {
				b.Fatalf("run: %v %+v", err, res)
			}
		}
	})
}

func ctx() context.Context { return context.Background() }

// benchWorkspace starts a kernel behind its gateway and returns a workspace of a new user with
// the writer gadget, over WebSocket.
func benchWorkspace(b *testing.B) *capnweb.Promise {
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(os.TempDir(), "atelier-bench-cache"), Interfaces: kernel.HostInterfaces(nil)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	k := kernel.New(kernel.Config{Runtime: rt, Store: db, Limits: runtime.Limits{Timeout: 5 * time.Second}, Password: auth.TestParams,
		Quotas: quota.Limits{CallsPerSecond: quota.Unlimited}}) // measure the calls, not the rate limit
	b.Cleanup(func() { k.Close() })
	srv := httptest.NewServer(gateway.New(gateway.Config{Kernel: k}))
	b.Cleanup(srv.Close)
	s, err := capnweb.DialWebSocket(ctx(), "ws"+strings.TrimPrefix(srv.URL, "http")+"/api", capnweb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	tok, err := s.Main().Call(ctx(), "signup", "bench", "password-bench").Await(ctx())
	if err != nil {
		b.Fatal(err)
	}
	ws := s.Main().Call(ctx(), "authenticate", tok).Call(ctx(), "createWorkspace", "w")
	grants := []string{"atelier:host/kv", "atelier:host/log", "atelier:host/events", "atelier:host/bindings"}
	if _, err := ws.Call(ctx(), "createGadget", "writer", map[string]any{"server.js": writer}, grants).Await(ctx()); err != nil {
		b.Fatal(err)
	}
	return ws
}
