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

// TestConcurrentPipelinedOrder: several WebSocket sessions at once each pipeline windows of
// increments on their own counters (and on the main object) without awaiting in between. Every
// counter must see its increments in the order they were sent, and every call must be answered
// with its own result, however the server groups the messages into writes.
func TestConcurrentPipelinedOrder(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeWebSocket))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	const sessions, counters, window, rounds = 8, 3, 50, 4
	ctx := context.Background()
	var wg sync.WaitGroup
	for range sessions {
		wg.Go(func() {
			s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			main := s.Main()
			defer main.Dispose()
			cs := make([]*capnweb.Promise, counters)
			for i := range cs {
				cs[i] = main.Call(ctx, "makeCounter", 0)
				defer cs[i].Dispose()
			}
			for r := range rounds {
				var ps []*capnweb.Promise
				for i := range window {
					ps = append(ps, cs[i%counters].Call(ctx, "increment", 1), main.Call(ctx, "add", i, r))
				}
				vs, err := capnweb.AwaitAll(ctx, ps...)
				if err != nil {
					t.Error(err)
					return
				}
				for i := range window {
					want := float64(countBefore(r, i%counters, window, counters) + i/counters + 1)
					if vs[2*i] != want || vs[2*i+1] != float64(i+r) {
						t.Errorf("round %d call %d: got %v and %v, want %v and %v", r, i, vs[2*i], vs[2*i+1], want, i+r)
						return
					}
				}
				for _, p := range ps {
					p.Dispose()
				}
			}
		})
	}
	wg.Wait()
}

// countBefore is how many increments counter c received in the rounds before round r.
func countBefore(r, c, window, counters int) int {
	perRound := window / counters
	if c < window%counters {
		perRound++
	}
	return r * perRound
}
