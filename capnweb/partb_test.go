package capnweb_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"atelier/capnweb"
)

// clientMain is the client's main object in raw-3.
type clientMain struct{ capnweb.Target }

// WhoAreYou answers the server.
func (*clientMain) WhoAreYou() string { return "the client" }

// partB holds the Go client's side of the part-B scenarios, which were recorded against a
// hand-written server; want is the expected client result as JSON.
var partB = []struct {
	name string
	main any
	run  func(ctx context.Context, a *capnweb.Stub) (any, error)
	want string
	// c2s, if set, replaces the recorded client lines where the Go client differs.
	c2s map[int]string
}{
	{name: "raw-1", want: `["pong","pong"]`,
		// The Go importer counts introductions: -1 was introduced twice, so it releases 2
		// (the JS client sends 1, upstream issue #140).
		c2s: map[int]string{12: `["release",-1,2]`},
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			x, err := capnweb.AwaitAs[*capnweb.Stub](ctx, a.Call(ctx, "getObj"))
			if err != nil {
				return nil, err
			}
			y, err := capnweb.AwaitAs[*capnweb.Stub](ctx, a.Call(ctx, "getObj"))
			if err != nil {
				return nil, err
			}
			r1, err := x.Call(ctx, "ping").Await(ctx)
			if err != nil {
				return nil, err
			}
			x.Dispose()
			r2, err := y.Call(ctx, "ping").Await(ctx)
			y.Dispose()
			return []any{r1, r2}, err
		}},
	{name: "raw-2", want: `[{"id":1,"name":"alice"},{"id":2,"name":"bob"}]`,
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			ids := a.Call(ctx, "getIds")
			defer ids.Dispose()
			return ids.Map(ctx, func(id capnweb.MapRef) any {
				return map[string]any{"id": id, "name": id.Capture(a).Call("getUserName", id)}
			}).Await(ctx)
		}},
	{name: "raw-3", main: &clientMain{}, want: `"the client"`,
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			return a.Call(ctx, "callClientMain").Await(ctx)
		}},
	{name: "raw-4", want: `"client rejected: [\"error\",\"Error\",\"This connection has no main object.\"]"`,
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			return a.Call(ctx, "callClientMain").Await(ctx)
		}},
	{name: "raw-5", want: `{"late":"date:0"}`,
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			return a.Call(ctx, "badPromise").Await(ctx)
		}},
}

// TestPartBClient plays the recorded server side of part B to the Go client and checks the
// client's messages. Messages the client sends between two server messages may come in any
// order (the Go client answers calls concurrently).
func TestPartBClient(t *testing.T) {
	trs := loadTranscripts(t)
	for _, sc := range partB {
		t.Run(sc.name, func(t *testing.T) {
			tr := trs[sc.name]
			if tr == nil {
				t.Fatalf("%s not in transcripts", sc.name)
			}
			clientEnd, serverEnd := capnweb.Pipe()
			client := capnweb.NewSession(clientEnd, capnweb.Options{Main: sc.main})
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			got := make(chan string, 100)
			go func() {
				defer close(got)
				for {
					m, err := serverEnd.ReadMessage()
					if err != nil {
						return
					}
					got <- string(m)
				}
			}()
			type result struct {
				v   any
				err error
			}
			done := make(chan result, 1)
			go func() {
				main := client.Main()
				defer main.Dispose()
				v, err := sc.run(ctx, main)
				done <- result{v, err}
			}()
			var segment []string
			n := 0
			flush := func() {
				for len(segment) > 0 {
					select {
					case m := <-got:
						i := slices.IndexFunc(segment, func(w string) bool { return jsonEqual(m, w) })
						if i < 0 {
							t.Fatalf("client sent %s, want one of %v", m, segment)
						}
						segment = slices.Delete(segment, i, i+1)
					case <-ctx.Done():
						t.Fatalf("client did not send %v", segment)
					}
				}
			}
			var res result
			for _, l := range tr.lines {
				if l.fromClient {
					want := l.text
					if o, ok := sc.c2s[n]; ok {
						want = o
					}
					n++
					segment = append(segment, want)
					continue
				}
				flush()
				if err := serverEnd.WriteMessage([]byte(l.text)); err != nil {
					t.Fatal(err)
				}
			}
			// The last client lines follow the end of the scenario code.
			res = <-done
			flush()
			if o := outcome(res.v, res.err); !jsonEqual(mustJSON(o), sc.want) {
				t.Errorf("result %s, want %s", mustJSON(o), sc.want)
			}
			client.Close()
		})
	}
}
