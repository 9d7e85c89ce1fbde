package capnweb_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"atelier/capnweb"
	"atelier/tests/capnweb/conformance/api"
)

// rawPeer is a hand-driven peer talking to a Go server session over a pipe.
type rawPeer struct {
	t      *testing.T
	tr     capnweb.Transport
	server *capnweb.Session
}

func newRawPeer(t *testing.T, main any, lim capnweb.Limits) *rawPeer {
	serverEnd, clientEnd := capnweb.Pipe()
	s := capnweb.NewSession(serverEnd, capnweb.Options{Main: main, Limits: lim})
	t.Cleanup(func() { s.Close() })
	return &rawPeer{t: t, tr: clientEnd, server: s}
}

func (p *rawPeer) send(msgs ...string) {
	for _, m := range msgs {
		if err := p.tr.WriteMessage([]byte(m)); err != nil {
			p.t.Fatal(err)
		}
	}
}

// next returns the next message from the server, or "" if the session ended.
func (p *rawPeer) next() string {
	type res struct {
		m   []byte
		err error
	}
	ch := make(chan res, 1)
	go func() {
		m, err := p.tr.ReadMessage()
		ch <- res{m, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return ""
		}
		return string(r.m)
	case <-time.After(5 * time.Second):
		p.t.Fatal("no message from server")
		return ""
	}
}

// expectAbort checks that the server aborts with a message containing want and then ends.
func (p *rawPeer) expectAbort(want string) {
	p.t.Helper()
	m := p.next()
	for strings.HasPrefix(m, `["release",`) { // references decoded before the error are dropped
		m = p.next()
	}
	if !strings.HasPrefix(m, `["abort",["error","Error","bad RPC message: `) || !strings.Contains(m, want) {
		p.t.Fatalf("got %q, want an abort mentioning %q", m, want)
	}
	select {
	case <-p.server.Done():
	case <-time.After(5 * time.Second):
		p.t.Fatal("session did not end after abort")
	}
	// Calls that were running finish on their own and drop their references.
	waitFor(p.t, func() bool { return p.server.Stats() == capnweb.Stats{} },
		func() string { return fmt.Sprintf("tables not empty after abort: %+v", p.server.Stats()) })
}

func TestBadMessagesAbort(t *testing.T) {
	for _, c := range []struct{ name, msgs, want string }{
		{"invalid JSON", `not json`, "invalid JSON"},
		{"object", `{}`, "{}"},
		{"empty array", `[]`, "[]"},
		{"unknown type", `["bogus",1]`, "bogus"},
		{"push without expression", `["push"]`, "push"},
		{"pull of unknown id", `["pull",99]`, "pull of unknown export id 99"},
		{"release of unknown id", `["release",99,1]`, "release of unknown export id 99"},
		{"release more than held", `["release",0,5]`, "release of 5 references to export 0"},
		{"fractional id", `["pull",1.5]`, "bad id"},
		{"zero release count", `["release",0,0]`, "bad release count"},
		{"call on unknown id", `["push",["pipeline",42,["x"],[]]]`, "unknown export id 42"},
		{"bad value in args", `["push",["pipeline",0,["echo"],[["bogus"]]]]`, "unknown special value"},
		{"bare array arg", `["push",["pipeline",0,["echo"],[[1,2]]]]`, "unknown special value"},
		{"bad value in resolve", `["resolve",1,["bogus"]]`, "unknown special value"},
		{"positive export id", `["push",["pipeline",0,["echo"],[["export",3]]]]`, "must be negative"},
		{"stream without expression", `["stream"]`, "stream"},
		{"pipe with argument", `["pipe",1]`, "pipe"},
		{"readable of a non-pipe", `["push",["pipeline",0,["echo"],[["readable",0]]]]`, "not a pipe"},
		{"readable twice", "[\"pipe\"]\n[\"push\",[\"pipeline\",0,[\"echo\"],[[\"readable\",1],[\"readable\",1]]]]", "pipe handed over twice"},
		{"blob value", `["push",["pipeline",0,["echo"],[["blob","text/plain",["readable",1]]]]]`, "not supported"},
		{"writable with positive id", `["push",["pipeline",0,["echo"],[["writable",1]]]]`, "must be negative"},
		{"too deep", `["push",` + strings.Repeat("[[", 200) + strings.Repeat("]]", 200) + `]`, "nesting depth"},
		{"too big", `["push","` + strings.Repeat("x", 2<<20) + `"]`, "exceeds the limit"},
		{"bad remap", `["push",["remap",0,[],[],[]]]`, "bad remap"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newRawPeer(t, &api.API{}, capnweb.Limits{MaxMessageSize: 1 << 20})
			p.send(strings.Split(c.msgs, "\n")...)
			p.expectAbort(c.want)
		})
	}
}

func TestTableLimits(t *testing.T) {
	t.Run("exports", func(t *testing.T) {
		p := newRawPeer(t, &api.API{}, capnweb.Limits{MaxExports: 4})
		for range 4 {
			p.send(`["push",["pipeline",0,["hello"],["x"]]]`)
		}
		p.expectAbort("export table is full")
	})
	t.Run("imports", func(t *testing.T) {
		p := newRawPeer(t, &api.API{}, capnweb.Limits{MaxImports: 2})
		p.send(`["push",["pipeline",0,["echo"],[[[["export",-1],["export",-2],["export",-3],["export",-4]]]]]]`)
		p.expectAbort("import table is full")
	})
}

// blocker is a target whose Wait method blocks until released.
type blocker struct {
	capnweb.Target
	release chan struct{}
}

// Wait blocks until the test releases it.
func (b *blocker) Wait() string { <-b.release; return "done" }

func TestPendingCallLimit(t *testing.T) {
	b := &blocker{release: make(chan struct{})}
	p := newRawPeer(t, b, capnweb.Limits{MaxPendingCalls: 2})
	p.send(`["push",["pipeline",0,["wait"],[]]]`, `["push",["pipeline",0,["wait"],[]]]`,
		`["push",["pipeline",0,["wait"],[]]]`, `["pull",3]`)
	if m := p.next(); m != `["reject",3,["error","RangeError","too many calls in progress (limit 2)"]]` {
		t.Fatalf("got %s", m)
	}
	close(b.release)
	p.send(`["pull",1]`)
	if m := p.next(); m != `["resolve",1,"done"]` {
		t.Fatalf("got %s", m)
	}
}

func TestDisposedStub(t *testing.T) {
	a, b := capnweb.Pipe()
	server := capnweb.NewSession(a, capnweb.Options{Main: &api.API{}})
	defer server.Close()
	client := capnweb.NewSession(b, capnweb.Options{})
	defer client.Close()
	ctx := context.Background()
	main := client.Main()
	c, err := capnweb.AwaitAs[*capnweb.Stub](ctx, main.Call(ctx, "makeCounter", 1))
	if err != nil {
		t.Fatal(err)
	}
	c.Dispose()
	c.Dispose() // idempotent
	if _, err := c.Call(ctx, "increment").Await(ctx); !errors.Is(err, capnweb.ErrDisposed) {
		t.Fatalf("call on disposed stub: %v", err)
	}
	p := main.Call(ctx, "hello", "x")
	p.Dispose()
	if _, err := p.Await(ctx); !errors.Is(err, capnweb.ErrDisposed) {
		t.Fatalf("await of disposed promise: %v", err)
	}
}

func TestBrokenStub(t *testing.T) {
	a, b := capnweb.Pipe()
	server := capnweb.NewSession(a, capnweb.Options{Main: &api.API{}})
	client := capnweb.NewSession(b, capnweb.Options{})
	defer client.Close()
	main := client.Main()
	broken := make(chan error, 1)
	main.OnBroken(func(err error) { broken <- err })
	server.Close()
	select {
	case err := <-broken:
		if err == nil {
			t.Fatal("nil error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("OnBroken not called")
	}
	if _, err := main.Call(context.Background(), "hello", "x").Await(context.Background()); err == nil {
		t.Fatal("call on broken session succeeded")
	}
}

func TestWebSocketBinaryFrameAborts(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeWebSocket))
	defer hs.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.WriteMessage(websocket.BinaryMessage, []byte(`["pull",0]`)); err != nil {
		t.Fatal(err)
	}
	_, m, err := c.ReadMessage()
	if err != nil || !strings.Contains(string(m), "binary WebSocket frames are not allowed") {
		t.Fatalf("got %q %v", m, err)
	}
	_, _, err = c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != 3000 {
		t.Fatalf("want close 3000, got %v", err)
	}
}

func TestOriginCheck(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeWebSocket))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	_, resp, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin upgrade: %v %v", resp, err)
	}
	c, _, err := websocket.DefaultDialer.Dial(url, http.Header{"Origin": {hs.URL}})
	if err != nil {
		t.Fatalf("same-origin upgrade refused: %v", err)
	}
	c.Close()
}

func TestBatchMethodAndOrigin(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeBatch))
	defer hs.Close()
	resp, err := http.Get(hs.URL)
	if err != nil || resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %v %v", resp, err)
	}
	req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`["push",["pipeline",0,["hello"],["x"]]]`))
	req.Header.Set("Origin", "https://evil.example")
	resp, err = http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin batch: %v %v", resp, err)
	}
}

// TestNoGoroutineLeak runs many sessions over pipes and WebSockets and checks that every
// goroutine they started has ended once they are closed.
func TestNoGoroutineLeak(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeWebSocket))
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	before := runtime.NumGoroutine()
	for i := range 10 {
		for _, sc := range wsScenarios {
			checkScenario(t, sc, false, func() *capnweb.Session {
				if i%2 == 0 {
					a, b := capnweb.Pipe()
					s := capnweb.NewSession(a, capnweb.Options{Main: &api.API{}})
					t.Cleanup(func() { s.Close() })
					return capnweb.NewSession(b, capnweb.Options{})
				}
				s, err := capnweb.DialWebSocket(context.Background(), url, capnweb.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return s
			}, nil)
		}
	}
	hs.CloseClientConnections()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before },
		func() string { return "goroutines still running:\n" + goroutineDump() })
	hs.Close()
}

func goroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}

// sharer returns the same counter object every time.
type sharer struct {
	capnweb.Target
	c *recorder
}

// Shared returns the one shared target.
func (s *sharer) Shared() *recorder { return s.c }

// TestFreshExportIDs: a target sent twice gets two export ids (the JS importer does not count
// introductions), and is disposed once, when the last one is released.
func TestFreshExportIDs(t *testing.T) {
	shared := &recorder{disposed: make(chan struct{})}
	p := newRawPeer(t, &sharer{c: shared}, capnweb.Limits{})
	p.send(`["push",["pipeline",0,["shared"],[]]]`, `["pull",1]`)
	if m := p.next(); m != `["resolve",1,["export",-1]]` {
		t.Fatalf("got %s", m)
	}
	p.send(`["push",["pipeline",0,["shared"],[]]]`, `["pull",2]`)
	if m := p.next(); m != `["resolve",2,["export",-2]]` {
		t.Fatalf("got %s", m)
	}
	p.send(`["release",1,1]`, `["release",2,1]`, `["release",-1,1]`,
		`["push",["pipeline",-2,["record"],[5]]]`, `["pull",3]`)
	if m := p.next(); m != `["resolve",3,5]` {
		t.Fatalf("call through the second id after releasing the first: %s", m)
	}
	select {
	case <-shared.disposed:
		t.Fatal("disposed while still exported")
	default:
	}
	p.send(`["release",3,1]`, `["release",-2,1]`)
	select {
	case <-shared.disposed:
	case <-time.After(5 * time.Second):
		t.Fatal("not disposed after the last release")
	}
	p.send(`["release",-2,1]`)
	p.expectAbort("release of unknown export id -2")
}

// TestAbortReceived: an abort from the peer ends the session and fails pending calls with the
// peer's error, without an answer.
func TestAbortReceived(t *testing.T) {
	serverEnd, clientEnd := capnweb.Pipe()
	client := capnweb.NewSession(clientEnd, capnweb.Options{})
	defer client.Close()
	p := client.Main().Call(context.Background(), "hello", "x")
	if _, err := serverEnd.ReadMessage(); err != nil { // the push
		t.Fatal(err)
	}
	if err := serverEnd.WriteMessage([]byte(`["abort",["error","RangeError","going away"]]`)); err != nil {
		t.Fatal(err)
	}
	_, err := p.Await(context.Background())
	if err == nil || err.Error() != "RangeError: going away" {
		t.Fatalf("pending call after abort: %v", err)
	}
	<-client.Done()
}

// TestKeepAliveDropsSilentPeer: a peer that never answers pings is disconnected.
func TestKeepAliveDropsSilentPeer(t *testing.T) {
	sessions := make(chan *capnweb.Session, 1)
	srv := newServer(sessions)
	srv.Options.KeepAlive = 20 * time.Millisecond
	hs := httptest.NewServer(http.HandlerFunc(srv.ServeWebSocket))
	defer hs.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // never reads, so never answers a ping
	s := <-sessions
	select {
	case <-s.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("silent peer not dropped")
	}
}

// TestPeerThatDoesNotReadIsDropped: a peer that keeps calling without reading the answers
// cannot make the server hold more than MaxQueuedBytes of them; the session ends saying why.
func TestPeerThatDoesNotReadIsDropped(t *testing.T) {
	sessions := make(chan *capnweb.Session, 1)
	srv := newServer(sessions)
	srv.Options.Limits.MaxQueuedBytes = 1 << 20
	hs := httptest.NewServer(http.HandlerFunc(srv.ServeWebSocket))
	defer hs.Close()
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close() // never reads
	s := <-sessions
	arg := strings.Repeat("x", 64<<10)
	// 64 MiB of answers: far more than the socket buffers on both sides hold.
	for i := 1; i <= 1024; i++ {
		push := fmt.Sprintf(`["push",["pipeline",0,["echo"],[%q]]]`, arg)
		_ = c.SetWriteDeadline(time.Now().Add(5 * time.Second))
		if c.WriteMessage(websocket.TextMessage, []byte(push)) != nil ||
			c.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `["pull",%d]`, i)) != nil {
			break // the server ended the session and stopped reading
		}
	}
	select {
	case <-s.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("a peer that does not read its answers was not dropped")
	}
	if err := s.Err(); err == nil || !strings.Contains(err.Error(), "the peer is not reading") {
		t.Fatalf("session error %v, want one saying the peer is not reading", err)
	}
}

// TestBatchMemory: the batch bodies a server holds at once are bounded (here 1 MiB + 32 KiB,
// and a body of 700 KiB needs 1 MiB): a body sent too slowly ends at the batch timeout, one past
// the message limit is refused; of two sent at once at least one is answered 503 with
// Retry-After; then a batch is served again. One client's bodies are bounded by its share of
// a larger budget (429), which leaves the rest to the other clients.
func TestBatchMemory(t *testing.T) {
	// A body of 700 KiB holds 1 MiB (its buffer grows by doubling).
	serve := func(timeout time.Duration, maxMessage int, total, perAddress int64) *httptest.Server {
		srv := newServer(nil)
		srv.BatchMemory, srv.BatchMemoryPerAddress, srv.BatchTimeout = total, perAddress, timeout
		srv.Options.Limits.MaxMessageSize = maxMessage
		hs := httptest.NewServer(fromClient(srv.ServeBatch))
		t.Cleanup(hs.Close)
		return hs
	}
	const oneBody = 1<<20 + 32<<10
	// send sends 700 KiB of a promised 4 MiB from the client at addr, then nothing, and
	// returns the answer's status and Retry-After, or the read error once wait has passed
	// (then it closes the connection).
	send := func(hs *httptest.Server, addr string, wait time.Duration, answer chan<- string) {
		c, err := net.Dial("tcp", hs.Listener.Addr().String())
		if err != nil {
			answer <- err.Error()
			return
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nX-Client: %s\r\nContent-Length: %d\r\n\r\n", addr, 4<<20)
		_, _ = c.Write(make([]byte, 700<<10)) // a refused one's may fail
		_ = c.SetReadDeadline(time.Now().Add(wait))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			answer <- err.Error()
			return
		}
		resp.Body.Close()
		answer <- fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	answers := make(chan string, 2)
	send(serve(time.Second, 0, oneBody, oneBody), "192.0.2.1:1", 10*time.Second, answers)
	if a := <-answers; a != "408 " {
		t.Fatalf("a body sent too slowly: %q, want 408 at the batch timeout", a)
	}
	resp, err := http.Post(serve(time.Second, 1<<20, oneBody, oneBody).URL, "text/plain", strings.NewReader(strings.Repeat(" ", 1<<20+1)))
	if err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a body past the message limit (1 MiB): %v %v, want 413", resp, err)
	}
	resp.Body.Close()
	// batch posts a small batch from the client at addr and returns its status.
	batch := func(hs *httptest.Server, addr string) int {
		req, err := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(`["push",["pipeline",0,["echo"],["x"]]]`+"\n"+`["pull",1]`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-Client", addr)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The server waits long for the bodies; the one not refused is given up by the client.
	// Two clients' bodies pass the server's budget (each address may hold all of it).
	hs := serve(time.Minute, 0, oneBody, oneBody)
	go send(hs, "192.0.2.1:1", 3*time.Second, answers)
	go send(hs, "192.0.2.2:1", 3*time.Second, answers)
	if a, b := <-answers, <-answers; a != "503 5" && b != "503 5" {
		t.Fatalf("two bodies that together pass the budget: %q and %q, want a 503 with Retry-After", a, b)
	}
	deadline := time.Now().Add(10 * time.Second)
	for batch(hs, "192.0.2.1:1") != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("a batch after the bodies ended is refused: their memory was not freed")
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Two bodies of one client pass its share of a larger budget: the second is refused
	// with 429, and while the first is held that client's small batch is refused too, but
	// not another client's (an IPv6 client counts by its /64).
	hs = serve(time.Minute, 0, 4*oneBody, oneBody)
	go send(hs, "[2001:db8::1]:1", 5*time.Second, answers)
	go send(hs, "[2001:db8::2]:1", 5*time.Second, answers)
	if a := <-answers; a != "429 5" {
		t.Fatalf("two bodies of one client that together pass its share: %q, want a 429 with Retry-After", a)
	}
	// The body held may still be growing to 1 MiB after the other's refusal; if a small batch
	// took part of the share as it grew, it was refused itself, and another one is sent.
	deadline = time.Now().Add(4 * time.Second)
	for got := 0; got != http.StatusTooManyRequests; got = batch(hs, "[2001:db8::3]:1") {
		if len(answers) > 0 {
			<-answers
			go send(hs, "[2001:db8::1]:1", 5*time.Second, answers)
		}
		if time.Now().After(deadline) {
			t.Fatalf("a small batch of the client whose share is held: %d, want 429", got)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if got := batch(hs, "[2001:db8:1::1]:1"); got != http.StatusOK {
		t.Fatalf("a small batch of another client while one holds its share: %d, want 200", got)
	}
	<-answers
}

// fromClient serves h with the request's RemoteAddr taken from its X-Client header, as
// the gateway does behind a trusted proxy, so that a test plays several clients.
func fromClient(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("X-Client"); a != "" {
			r.RemoteAddr = a
		}
		h(w, r)
	}
}

// TestMessageMemory: the large incoming messages a server's sessions hold at once are bounded
// (here 1 MiB; what a message takes past 64 KiB counts): of two peers that each send 700 KiB
// of a message and stop, at least one session ends saying why; once both are gone, and a
// session ended by a bad message of 700 KiB, a session takes a message of 600 KiB again, so
// what they held was given back.
func TestMessageMemory(t *testing.T) {
	sessions := make(chan *capnweb.Session, 4)
	srv := newServer(sessions)
	srv.MessageMemory, srv.MessageMemoryPerAddress = 1<<20, 1<<20
	hs := httptest.NewServer(http.HandlerFunc(srv.ServeWebSocket))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	conns, served := unfinishedMessages(t, url, "", sessions, "large incoming messages")
	for i, c := range conns {
		c.Close()
		<-served[i].Done()
	}
	// A whole large message that ends its session (a bad one) is given back too.
	bad, _, err := websocket.DefaultDialer.Dial(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	if err := bad.WriteMessage(websocket.TextMessage, fmt.Appendf(nil, `["bogus",%q]`, strings.Repeat("x", 700<<10))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-(<-sessions).Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a bad message did not end its session")
	}
	// The ended sessions give their share back as their read loops stop, right after they
	// end: a leak would refuse the message for ever, so it is tried until a deadline.
	big := strings.Repeat("x", 600<<10)
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, _, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range []string{fmt.Sprintf(`["push",["pipeline",0,["echo"],[%q]]]`, big), `["pull",1]`} {
			_ = c.WriteMessage(websocket.TextMessage, []byte(m))
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, msg, err := c.ReadMessage()
		c.Close()
		if err == nil && strings.HasPrefix(string(msg), `["resolve",1,`) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("a 600 KiB message after the others ended: %.80s %v, want its answer", msg, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestMessageMemoryPerAddress: one client's large incoming messages are bounded by its share
// of the server's budget (here 1 MiB of 4 MiB): of its two unfinished 700 KiB messages one
// ends its session, saying so, and while the other is held another client's 600 KiB message
// is answered.
func TestMessageMemoryPerAddress(t *testing.T) {
	sessions := make(chan *capnweb.Session, 4)
	srv := newServer(sessions)
	srv.MessageMemory, srv.MessageMemoryPerAddress = 4<<20, 1<<20
	hs := httptest.NewServer(fromClient(srv.ServeWebSocket))
	defer hs.Close()
	url := "ws" + strings.TrimPrefix(hs.URL, "http")
	dial := func(addr string) *websocket.Conn {
		c, _, err := websocket.DefaultDialer.Dial(url, http.Header{"X-Client": {addr}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	unfinishedMessages(t, url, "192.0.2.1:1", sessions, "large incoming messages from your address")
	c := dial("192.0.2.2:1")
	<-sessions
	for _, m := range []string{fmt.Sprintf(`["push",["pipeline",0,["echo"],[%q]]]`, strings.Repeat("x", 600<<10)), `["pull",1]`} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, msg, err := c.ReadMessage(); err != nil || !strings.HasPrefix(string(msg), `["resolve",1,`) {
		t.Fatalf("another client's 600 KiB message while one holds its share: %.80s %v, want its answer", msg, err)
	}
}

// unfinishedMessages opens two sessions to url as the client at addr ("": the connection's own
// address), sends 700 KiB of a message on each that never ends, and waits until one of them
// ends with an error that says want. It returns the connections and the sessions served.
func unfinishedMessages(t *testing.T, url, addr string, sessions <-chan *capnweb.Session, want string) ([]*websocket.Conn, []*capnweb.Session) {
	t.Helper()
	var header http.Header
	if addr != "" {
		header = http.Header{"X-Client": {addr}}
	}
	var conns []*websocket.Conn
	var served []*capnweb.Session
	for range 2 {
		c, _, err := websocket.DefaultDialer.Dial(url, header)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns, served = append(conns, c), append(served, <-sessions)
		w, err := c.NextWriter(websocket.TextMessage)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.Write([]byte(strings.Repeat(" ", 700<<10))) // never closed: the message never ends
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.ContainsFunc(served, func(s *capnweb.Session) bool {
		return s.Err() != nil && strings.Contains(s.Err().Error(), want)
	}) {
		if time.Now().After(deadline) {
			t.Fatalf("two unfinished messages past the budget: sessions end with %v and %v, want one saying %q", served[0].Err(), served[1].Err(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return conns, served
}

// TestBatchAnswerMemory: the answers of a batch count against the server's batch budget
// (and its client's share) until they are written: a 200 KiB body whose calls answer 1.4 MiB
// is refused with 503 against a budget of 1 MiB, and with 429 against a share of 1 MiB of
// 4 MiB, with Retry-After; what it held is given back, so a small batch passes after it.
func TestBatchAnswerMemory(t *testing.T) {
	lines := []string{fmt.Sprintf(`["push",["pipeline",0,["echo"],[%q]]]`, strings.Repeat("x", 200<<10)), `["pull",1]`}
	for i := 2; i <= 8; i++ {
		lines = append(lines, `["push",["pipeline",0,["echo"],[["pipeline",1]]]]`, fmt.Sprintf(`["pull",%d]`, i))
	}
	large := strings.Join(lines, "\n")
	small := `["push",["pipeline",0,["echo"],["x"]]]` + "\n" + `["pull",1]`
	for _, c := range []struct {
		total, perAddress int64
		want              string
	}{{1 << 20, 1 << 20, "503 5"}, {4 << 20, 1 << 20, "429 5"}} {
		srv := newServer(nil)
		srv.BatchMemory, srv.BatchMemoryPerAddress = c.total, c.perAddress
		hs := httptest.NewServer(http.HandlerFunc(srv.ServeBatch))
		for _, b := range []struct{ body, want string }{{large, c.want}, {small, "200 "}, {large, c.want}} {
			resp, err := http.Post(hs.URL, "text/plain", strings.NewReader(b.body))
			if err != nil {
				t.Fatal(err)
			}
			out, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if got := fmt.Sprintf("%d %s", resp.StatusCode, resp.Header.Get("Retry-After")); got != b.want {
				t.Fatalf("budget %d, share %d: a batch of %d bytes answered %q (%.100s), want %q", c.total, c.perAddress, len(b.body), got, out, b.want)
			}
		}
		hs.Close()
	}
}
