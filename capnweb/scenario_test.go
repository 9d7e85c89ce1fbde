package capnweb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/tests/capnweb/conformance/api"
)

// scenario is one part-A scenario of the golden transcripts, run with the Go client.
type scenario struct {
	name string
	run  func(ctx context.Context, api *capnweb.Stub) (any, error)
	// want is the JSON of the client result in the notation of the transcript notes, or
	// "!Class: message" for an error.
	want string
	// wantNode, if set, replaces want against the official Node server.
	wantNode string
}

// listener is a client-side target passed to notifyTwice.
type listener struct{ capnweb.Target }

// OnEvent answers an event.
func (*listener) OnEvent(name string) string { return "got " + name }

func await(ctx context.Context, p *capnweb.Promise) (any, error) { return p.Await(ctx) }

var wsScenarios = []scenario{
	{name: "ws-1", want: `"Hello, World!"`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		return a.Call(ctx, "hello", "World").Await(ctx)
	}},
	{name: "ws-2", want: `[3,7]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		x, err := a.Call(ctx, "add", 1, 2).Await(ctx)
		if err != nil {
			return nil, err
		}
		y, err := a.Call(ctx, "add", 3, 4).Await(ctx)
		return []any{x, y}, err
	}},
	{name: "ws-3", want: `15`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		c := a.Call(ctx, "makeCounter", 10)
		defer c.Dispose()
		return c.Call(ctx, "increment", 5).Await(ctx)
	}},
	{name: "ws-4", want: `[2,2]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		c, err := capnweb.AwaitAs[*capnweb.Stub](ctx, a.Call(ctx, "makeCounter", 1))
		if err != nil {
			return nil, err
		}
		defer c.Dispose()
		x, err := c.Call(ctx, "increment").Await(ctx)
		if err != nil {
			return nil, err
		}
		y, err := c.Get("value").Await(ctx)
		return []any{x, y}, err
	}},
	{name: "ws-5", want: `"Hello, bob!"`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		u := a.Call(ctx, "getUser", 2)
		defer u.Dispose()
		return a.Call(ctx, "hello", u.Get("name")).Await(ctx)
	}},
	{name: "ws-6", want: `43`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		return a.Call(ctx, "callMeBack", func(x float64) float64 { return x * 2 }, 21).Await(ctx)
	}},
	{name: "ws-7", want: `["got first","got second"]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		return a.Call(ctx, "notifyTwice", &listener{}).Await(ctx)
	}},
	{name: "ws-8", want: `[{"id":1,"name":"alice"},{"id":2,"name":"bob"},{"id":3,"name":"carol"}]`,
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			ids := a.Call(ctx, "getUserIds")
			defer ids.Dispose()
			return ids.Map(ctx, func(id capnweb.MapRef) any {
				return map[string]any{"id": id, "name": id.Capture(a).Call("getUserName", id)}
			}).Await(ctx)
		}},
	{name: "ws-9", want: `["Hello, alice!",null]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		u := a.Call(ctx, "getUser", 1)
		defer u.Dispose()
		x, err := u.Map(ctx, func(u capnweb.MapRef) any {
			return u.Capture(a).Call("hello", u.Get("name"))
		}).Await(ctx)
		if err != nil {
			return nil, err
		}
		n := a.Call(ctx, "getNothing")
		defer n.Dispose()
		y, err := n.Map(ctx, func(x capnweb.MapRef) any { return x.Capture(a).Call("hello", x) }).Await(ctx)
		return []any{x, y}, err
	}},
	{name: "ws-10", want: `"!RangeError: bad thing happened"`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		return a.Call(ctx, "fail").Await(ctx)
	}},
	{name: "ws-11", want: `"!TypeError: 'noSuchMethod' is not a function."`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		return a.Call(ctx, "noSuchMethod").Await(ctx)
	}},
	{name: "ws-12", want: `{"arr":[1,"two",[3]],"date":"date:1749342170815","bytes":"bytes:1,2,3,250","big":"12345678901234567890n","undef":"undefined","nul":null,"inf":"Infinity","ninf":"-Infinity","nan":"NaN","err":"TypeError: boom"}`,
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			big, _ := new(big.Int).SetString("12345678901234567890", 10)
			return a.Call(ctx, "echo", map[string]any{
				"arr": []any{1, "two", []int{3}}, "date": time.UnixMilli(1749342170815),
				"bytes": []byte{1, 2, 3, 250}, "big": big, "undef": capnweb.Undefined, "nul": nil,
				"inf": math.Inf(1), "ninf": math.Inf(-1), "nan": math.NaN(), "err": capnweb.TypeError("boom"),
			}).Await(ctx)
		}},
	{name: "ws-13", want: `"1.0"`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		return a.Get("version").Await(ctx)
	}},
	{name: "ws-14", want: `8`, wantNode: `"!Error: Attempted to use an RPC StubHook after it was disposed."`,
		run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
			c, err := capnweb.AwaitAs[*capnweb.Stub](ctx, a.Call(ctx, "makeCounter", 7))
			if err != nil {
				return nil, err
			}
			defer c.Dispose()
			d, err := capnweb.AwaitAs[*capnweb.Stub](ctx, a.Call(ctx, "echo", c))
			if err != nil {
				return nil, err
			}
			defer d.Dispose()
			return d.Call(ctx, "increment", 1).Await(ctx)
		}},
	{name: "ws-15", want: `107`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		c, err := capnweb.AwaitAs[*capnweb.Stub](ctx, a.Call(ctx, "makeCounter", 7))
		if err != nil {
			return nil, err
		}
		defer c.Dispose()
		return a.Call(ctx, "useCounter", c).Await(ctx)
	}},
	{name: "ws-16", want: `"!Error: nope {code:42}"`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		return a.Call(ctx, "failWithCode").Await(ctx)
	}},
	{name: "ws-17", want: `[["alice","bob"],["carol"]]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		teams := a.Call(ctx, "getTeams")
		defer teams.Dispose()
		return teams.Map(ctx, func(t capnweb.MapRef) any {
			return t.Get("memberIds").Map(func(id capnweb.MapRef) any {
				return id.Capture(a).Call("getUserName", id)
			})
		}).Await(ctx)
	}},
	{name: "ws-18", want: `["subscribed",10,20,"unsubscribed",[1,2]]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		var mu sync.Mutex
		var seen []any
		cb := func(x float64) float64 {
			mu.Lock()
			seen = append(seen, x)
			mu.Unlock()
			return x * 10
		}
		var out []any
		for _, p := range []func() *capnweb.Promise{
			func() *capnweb.Promise { return a.Call(ctx, "subscribe", cb) },
			func() *capnweb.Promise { return a.Call(ctx, "fire", 1) },
			func() *capnweb.Promise { return a.Call(ctx, "fire", 2) },
			func() *capnweb.Promise { return a.Call(ctx, "unsubscribe") },
		} {
			v, err := p().Await(ctx)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
		}
		mu.Lock()
		defer mu.Unlock()
		return append(out, seen), nil
	}},
	{name: "ws-19", want: `["chunk-a","chunk-b"]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		st, err := capnweb.AwaitAs[*capnweb.ReadableStream](ctx, a.Call(ctx, "getStream"))
		if err != nil {
			return nil, err
		}
		return st.ReadAll(ctx)
	}},
	{name: "ws-20", want: `"disposed"`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		a.Call(ctx, "hello", "x").Dispose()
		return "disposed", nil
	}},
	{name: "ws-21", want: `"!RangeError: bad thing happened"`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		p := a.Call(ctx, "fail")
		defer p.Dispose()
		return p.Call(ctx, "someMethod", 1).Await(ctx)
	}},
	{name: "ws-22", want: `[[[1,2],{"a":[3]},[]],"box",6]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		e, err := a.Call(ctx, "echo", []any{[]int{1, 2}, map[string]any{"a": []int{3}}, []any{}}).Await(ctx)
		if err != nil {
			return nil, err
		}
		box, err := capnweb.AwaitAs[map[string]any](ctx, a.Call(ctx, "getCounterBox", 5))
		if err != nil {
			return nil, err
		}
		c := box["counter"].(*capnweb.Stub)
		defer c.Dispose()
		v, err := c.Call(ctx, "increment", 1).Await(ctx)
		return []any{e, box["label"], v}, err
	}},
}

var batchScenarios = []scenario{
	{name: "batch-1", want: `"Hello, World!"`, run: wsScenarios[0].run},
	{name: "batch-2", want: `[15,"Hello, carol!"]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		c := a.Call(ctx, "makeCounter", 10)
		u := a.Call(ctx, "getUser", 3)
		p1 := c.Call(ctx, "increment", 5)
		p2 := a.Call(ctx, "hello", u.Get("name"))
		for _, p := range []*capnweb.Promise{c, u, p1, p2} {
			defer p.Dispose()
		}
		return capnweb.AwaitAll(ctx, p1, p2)
	}},
	{name: "batch-3", want: `["alice","bob","carol"]`, run: func(ctx context.Context, a *capnweb.Stub) (any, error) {
		ids := a.Call(ctx, "getUserIds")
		defer ids.Dispose()
		return ids.Map(ctx, func(id capnweb.MapRef) any {
			return id.Capture(a).Call("getUserName", id)
		}).Await(ctx)
	}},
}

// plain renders a result in the notation of the transcript notes.
func plain(v any) any {
	switch v := v.(type) {
	case capnweb.UndefinedType:
		return "undefined"
	case float64:
		switch {
		case math.IsNaN(v):
			return "NaN"
		case math.IsInf(v, 1):
			return "Infinity"
		case math.IsInf(v, -1):
			return "-Infinity"
		}
		return v
	case *big.Int:
		return v.String() + "n"
	case time.Time:
		return fmt.Sprintf("date:%d", v.UnixMilli())
	case []byte:
		parts := make([]string, len(v))
		for i, b := range v {
			parts[i] = fmt.Sprint(b)
		}
		return "bytes:" + strings.Join(parts, ",")
	case *capnweb.Error:
		return v.Name + ": " + v.Message
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = plain(e)
		}
		return out
	}
	return v
}

// outcome renders a scenario's result or error.
func outcome(v any, err error) any {
	if err == nil {
		return plain(v)
	}
	e, ok := err.(*capnweb.Error)
	if !ok {
		return "!" + err.Error()
	}
	s := "!" + e.Name + ": " + e.Message
	if code, ok := e.Props["code"]; ok {
		s += fmt.Sprintf(" {code:%v}", code)
	}
	return s
}

// checkScenario runs sc on a fresh session made by dial and compares the outcome; after, if
// set, runs before the session is closed.
func checkScenario(t *testing.T, sc scenario, node bool, dial func() *capnweb.Session, after func()) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s := dial()
	defer s.Close()
	main := s.Main()
	defer main.Dispose()
	got := outcome(sc.run(ctx, main))
	want := sc.want
	if node && sc.wantNode != "" {
		want = sc.wantNode
	}
	var w any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("%s: bad want: %v", sc.name, err)
	}
	gotJSON, _ := json.Marshal(got)
	var g any
	_ = json.Unmarshal(gotJSON, &g)
	if !reflect.DeepEqual(g, w) {
		t.Errorf("%s: got %s, want %s", sc.name, gotJSON, want)
	}
	if after != nil {
		after()
	}
}

// newServer returns a capnweb.Server for the conformance API that records its sessions.
func newServer(sessions chan<- *capnweb.Session) *capnweb.Server {
	return &capnweb.Server{
		NewMain: func(*http.Request) (any, error) { return newAPI(), nil },
		OnSession: func(s *capnweb.Session) {
			if sessions != nil {
				sessions <- s
			}
		},
	}
}

func TestScenariosInProcess(t *testing.T) {
	for _, sc := range append(slicesClone(wsScenarios), batchScenarios...) {
		t.Run(sc.name, func(t *testing.T) {
			var server *capnweb.Session
			disposed := make(chan float64, 10)
			checkScenario(t, sc, false, func() *capnweb.Session {
				a, b := capnweb.Pipe()
				server = capnweb.NewSession(a, capnweb.Options{Main: &api.API{
					OnCounterDisposed: func(n float64) { disposed <- n },
				}})
				return capnweb.NewSession(b, capnweb.Options{})
			}, func() {
				// When the client has dropped everything, the server holds only its main object.
				waitFor(t, func() bool {
					st := server.Stats()
					return st.Exports == 1 && st.Imports == 0 && st.Targets == 1 && st.PendingCalls == 0
				}, func() string { return fmt.Sprintf("server stats %+v", server.Stats()) })
			})
			server.Close()
			// Calls still running at the close finish on their own and drop their references.
			waitFor(t, func() bool { return server.Stats() == capnweb.Stats{} },
				func() string { return fmt.Sprintf("stats after close: %+v", server.Stats()) })
		})
	}
}

func TestScenariosWebSocket(t *testing.T) {
	srv := newServer(nil)
	hs := httptest.NewServer(http.HandlerFunc(srv.ServeWebSocket))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	for _, sc := range wsScenarios {
		t.Run(sc.name, func(t *testing.T) {
			checkScenario(t, sc, false, func() *capnweb.Session {
				s, err := capnweb.DialWebSocket(context.Background(), url, capnweb.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}, nil)
		})
	}
}

func TestScenariosHTTPBatch(t *testing.T) {
	srv := newServer(nil)
	hs := httptest.NewServer(http.HandlerFunc(srv.ServeBatch))
	defer hs.Close()
	for _, sc := range batchScenarios {
		t.Run(sc.name, func(t *testing.T) {
			checkScenario(t, sc, false, func() *capnweb.Session {
				return capnweb.NewHTTPBatchSession(context.Background(), hs.URL, capnweb.Options{}, hs.Client())
			}, nil)
		})
	}
}

// waitFor polls cond until it holds, failing with describe() after 5 seconds.
func waitFor(t *testing.T, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not reached: %s", describe())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func slicesClone(s []scenario) []scenario { return append([]scenario(nil), s...) }

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func newAPI() *api.API { return &api.API{} }
