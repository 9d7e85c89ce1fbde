package kernel_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/sdk/guesttest"
)

// benchWorkspace signs up a user over a WebSocket and returns a workspace with the Go counter
// and the JS-class to-do list.
func benchWorkspace(b *testing.B) *capnweb.Promise {
	s := startServer(&testing.T{}, filepath.Join(b.TempDir(), "a.db"), unlimitedCalls)
	b.Cleanup(s.stop)
	root := dialB(b, s)
	tok, err := root.Call(ctx, "signup", "bench", "password-bench").Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ws := root.Call(ctx, "authenticate", tok).Call(ctx, "createWorkspace", "w")
	if _, err := ws.Call(ctx, "createGadget", "counter", guesttest.Bytes(b, counterGo), counterGrants).Await(ctx); err != nil {
		b.Fatal(err)
	}
	if _, err := ws.Call(ctx, "createGadget", "todo", jsFiles(b, todoJSGadget), jsGrants).Await(ctx); err != nil {
		b.Fatal(err)
	}
	return ws
}

// percentiles reports the p50 and p99 of one-at-a-time latencies.
func percentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// timed runs call b.N times one at a time, reporting latency percentiles.
func timed(b *testing.B, call func() error) {
	if err := call(); err != nil { // warm: engine, actors
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for b.Loop() {
		start := time.Now()
		if err := call(); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	percentiles(b, lat)
}

// BenchmarkExecuteCodeTrivial is executeCode end to end over Cap'n Web: WebSocket -> kernel
// (bindings of two gadgets built, snippet sandbox created and discarded, audit line committed)
// -> reply.
func BenchmarkExecuteCodeTrivial(b *testing.B) {
	ws := benchWorkspace(b)
	timed(b, func() error {
		_, err := ws.Call(ctx, "executeCode", "export default async () => 1").Await(ctx)
		return err
	})
}

// BenchmarkExecuteCodeTwoCalls is executeCode whose snippet calls both gadgets once.
func BenchmarkExecuteCodeTwoCalls(b *testing.B) {
	ws := benchWorkspace(b)
	timed(b, func() error {
		_, err := ws.Call(ctx, "executeCode", "export default async (env) => [await env.counter.get(), await env.todo.echo('x')]").Await(ctx)
		return err
	})
}

// BenchmarkJSGadgetCall is a JS gadget method call through the kernel over Cap'n Web (echo:
// no state written), and one that writes (add).
func BenchmarkJSGadgetCall(b *testing.B) {
	app := benchWorkspace(b).Call(ctx, "gadget", "todo").Call(ctx, "connect")
	b.Run("echo", func(b *testing.B) {
		timed(b, func() error { _, err := app.Call(ctx, "echo", "hello").Await(ctx); return err })
	})
	b.Run("add", func(b *testing.B) {
		timed(b, func() error { _, err := app.Call(ctx, "add", "item").Await(ctx); return err })
	})
}
