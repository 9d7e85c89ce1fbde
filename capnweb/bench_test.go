package capnweb_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"atelier/capnweb"
)

// benchServer starts a WebSocket server for the conformance API and returns its URL.
func benchServer(b *testing.B) string {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeWebSocket))
	b.Cleanup(hs.Close)
	return "ws" + strings.TrimPrefix(hs.URL, "http")
}

func dialBench(b *testing.B, url string) *capnweb.Session {
	s, err := capnweb.DialWebSocket(context.Background(), url, capnweb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

func reportRate(b *testing.B, calls int) {
	b.ReportMetric(float64(calls)/b.Elapsed().Seconds(), "calls/s")
}

// BenchmarkWebSocketSequential: one call at a time over one WebSocket (a round trip each).
func BenchmarkWebSocketSequential(b *testing.B) {
	s := dialBench(b, benchServer(b))
	main := s.Main()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := main.Call(ctx, "add", 1, 2).Await(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N)
}

// BenchmarkWebSocketPipelined: windows of 100 calls sent, then awaited together, over one
// WebSocket.
func BenchmarkWebSocketPipelined(b *testing.B) {
	s := dialBench(b, benchServer(b))
	main := s.Main()
	ctx := context.Background()
	const window = 100
	b.ResetTimer()
	for done := 0; done < b.N; done += window {
		ps := make([]*capnweb.Promise, 0, window)
		for range min(window, b.N-done) {
			ps = append(ps, main.Call(ctx, "add", 1, 2))
		}
		if _, err := capnweb.AwaitAll(ctx, ps...); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N)
}

// BenchmarkWebSocket100Sessions: 100 concurrent sessions, each making sequential calls.
func BenchmarkWebSocket100Sessions(b *testing.B) {
	url := benchServer(b)
	const sessions = 100
	mains := make([]*capnweb.Stub, sessions)
	for i := range mains {
		mains[i] = dialBench(b, url).Main()
	}
	ctx := context.Background()
	b.ResetTimer()
	var wg sync.WaitGroup
	for i, m := range mains {
		n := b.N / sessions
		if i < b.N%sessions {
			n++
		}
		wg.Go(func() {
			for range n {
				if _, err := m.Call(ctx, "add", 1, 2).Await(ctx); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	reportRate(b, b.N)
}

// BenchmarkInProcessSequential: one call at a time over an in-process pipe (no network).
func BenchmarkInProcessSequential(b *testing.B) {
	x, y := capnweb.Pipe()
	server := capnweb.NewSession(x, capnweb.Options{Main: newAPI()})
	defer server.Close()
	client := capnweb.NewSession(y, capnweb.Options{})
	defer client.Close()
	main := client.Main()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		if _, err := main.Call(ctx, "add", 1, 2).Await(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N)
}

// unblocker is a target whose handler gives up its turn before returning, as the kernel's
// gadget calls do while their reply waits for its commit.
type unblocker struct{ capnweb.Target }

// Add returns a+b after letting the next queued call start.
func (unblocker) Add(ctx context.Context, a, b float64) float64 {
	capnweb.Unblock(ctx)
	return a + b
}

// BenchmarkInProcessUnblock: one call at a time over an in-process pipe to a handler that
// calls Unblock (with nothing queued behind it, which should cost no extra goroutine).
func BenchmarkInProcessUnblock(b *testing.B) {
	x, y := capnweb.Pipe()
	server := capnweb.NewSession(x, capnweb.Options{Main: &unblocker{}})
	defer server.Close()
	client := capnweb.NewSession(y, capnweb.Options{})
	defer client.Close()
	main := client.Main()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := main.Call(ctx, "add", 1, 2).Await(ctx); err != nil {
			b.Fatal(err)
		}
	}
	reportRate(b, b.N)
}
