package outboundhttp

import (
	"bufio"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loopback returns a Client allowed to dial the server at origin (http://ip:port or
// https://ip:port) and a policy that grants everything under origin.
func loopback(t *testing.T, origin string, opts Options) (*Client, *Policy) {
	t.Helper()
	scheme, addr, _ := strings.Cut(origin, "://")
	opts.AllowAddrs = append(opts.AllowAddrs, addr)
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, &Policy{Schemes: []string{scheme}, Hosts: []string{addr}, Prefixes: []string{origin + "/"}}
}

// newCountingServer is an httptest server that counts the connections it accepts.
func newCountingServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, &conns
}

func wantKind(t *testing.T, err error, kind, about string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) || e.Kind != kind || !strings.Contains(e.Message, about) {
		t.Fatalf("got %v, want a %s error about %q", err, kind, about)
	}
}

// TestKeepAlive sends requests one after another and from many goroutines: kept-alive
// connections carry them (no connection per request), and each answer is its own.
func TestKeepAlive(t *testing.T) {
	srv, conns := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %s", r.Method, r.URL.Path, body)
	})
	c, p := loopback(t, srv.URL, Options{})
	ctx := context.Background()
	for i := range 20 {
		resp, err := c.Do(ctx, p, Request{Method: "POST", URL: fmt.Sprintf("%s/n/%d", srv.URL, i), Body: []byte("b")})
		if want := fmt.Sprintf("POST /n/%d b", i); err != nil || string(resp.Body) != want {
			t.Fatalf("request %d: %+v %v, want %q", i, resp, err, want)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("20 sequential requests used %d connections, want 1", n)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 25 {
				url := fmt.Sprintf("%s/g%d/%d", srv.URL, g, i)
				resp, err := c.Do(ctx, p, Request{Method: "GET", URL: url})
				if want := fmt.Sprintf("GET /g%d/%d ", g, i); err != nil || string(resp.Body) != want {
					t.Errorf("%s: %+v %v", url, resp, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if n := conns.Load(); n > 1+maxIdlePerHost {
		t.Fatalf("8 goroutines used %d connections", n)
	}
}

// rawServer serves HTTP/1.1 by hand, for answers net/http would not send: answer writes the
// response to each request read from a connection, and the connection closes when it
// returns false.
func rawServer(t *testing.T, answer func(w io.Writer, req *http.Request) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					req, err := http.ReadRequest(r)
					if err != nil {
						return
					}
					io.Copy(io.Discard, req.Body)
					if !answer(c, req) {
						return
					}
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// TestServerClosesKeptConnection: a server that closes a connection after answering on it
// (keep-alive promised) does not fail the next request, which goes on a new connection.
func TestServerClosesKeptConnection(t *testing.T) {
	var conns atomic.Int64
	origin := rawServer(t, func(w io.Writer, _ *http.Request) bool {
		conns.Add(1)
		io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		return false
	})
	c, p := loopback(t, origin, Options{})
	for i := range 5 {
		resp, err := c.Do(context.Background(), p, Request{Method: "GET", URL: origin + "/x"})
		if err != nil || string(resp.Body) != "ok" {
			t.Fatalf("request %d: %+v %v", i, resp, err)
		}
		time.Sleep(10 * time.Millisecond) // let the close arrive (the retry covers a close in flight)
	}
	if n := conns.Load(); n != 5 {
		t.Fatalf("%d connections, want one per request", n)
	}
}

// TestResponseShapes: informational answers are skipped, chunked bodies decoded, a protocol
// switch refused, bytes after the response drop the connection instead of answering the next
// request with them.
func TestResponseShapes(t *testing.T) {
	origin := rawServer(t, func(w io.Writer, req *http.Request) bool {
		switch req.URL.Path {
		case "/early":
			io.WriteString(w, "HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
		case "/chunked":
			io.WriteString(w, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
		case "/switch":
			io.WriteString(w, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			return false
		case "/smuggle":
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\naHTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nforged")
		default:
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nplain")
		}
		return true
	})
	c, p := loopback(t, origin, Options{})
	ctx := context.Background()
	for path, want := range map[string]string{"/early": "late", "/chunked": "abcde"} {
		resp, err := c.Do(ctx, p, Request{Method: "GET", URL: origin + path})
		if err != nil || string(resp.Body) != want || resp.Status != 200 {
			t.Fatalf("%s: %+v %v, want %q", path, resp, err, want)
		}
	}
	_, err := c.Do(ctx, p, Request{Method: "GET", URL: origin + "/switch"})
	wantKind(t, err, Failed, "switched protocols")
	resp, err := c.Do(ctx, p, Request{Method: "GET", URL: origin + "/smuggle"})
	if err != nil || string(resp.Body) != "a" {
		t.Fatalf("/smuggle: %+v %v", resp, err)
	}
	resp, err = c.Do(ctx, p, Request{Method: "GET", URL: origin + "/next"})
	if err != nil || string(resp.Body) != "plai" {
		t.Fatalf("the request after extra bytes got %+v %v, want its own answer", resp, err)
	}
}

// TestResponseLimits: a head over maxResponseHeader and a body over MaxResponseBody are
// too-large errors, and the client goes on working.
func TestResponseLimits(t *testing.T) {
	origin := rawServer(t, func(w io.Writer, req *http.Request) bool {
		switch req.URL.Path {
		case "/head":
			io.WriteString(w, "HTTP/1.1 200 OK\r\n")
			for range maxResponseHeader / 1000 {
				io.WriteString(w, "X-Pad: "+strings.Repeat("p", 1000)+"\r\n")
			}
			io.WriteString(w, "Content-Length: 0\r\n\r\n")
			return false
		case "/body":
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"+strings.Repeat("b", 100))
		default:
			io.WriteString(w, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		}
		return true
	})
	c, p := loopback(t, origin, Options{MaxResponseBody: 50})
	ctx := context.Background()
	_, err := c.Do(ctx, p, Request{Method: "GET", URL: origin + "/head"})
	wantKind(t, err, TooLarge, "headers exceed")
	_, err = c.Do(ctx, p, Request{Method: "GET", URL: origin + "/body"})
	wantKind(t, err, TooLarge, "body exceeds 50")
	resp, err := c.Do(ctx, p, Request{Method: "GET", URL: origin + "/ok"})
	if err != nil || string(resp.Body) != "ok" {
		t.Fatalf("after the refusals: %+v %v", resp, err)
	}
}

// TestTimeoutAndCancel: a server that never answers costs at most the timeout, and a
// cancelled context ends the wait; both are failed errors.
func TestTimeoutAndCancel(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	origin := rawServer(t, func(io.Writer, *http.Request) bool {
		<-release
		return false
	})
	c, p := loopback(t, origin, Options{Timeout: 300 * time.Millisecond})
	_, err := c.Do(context.Background(), p, Request{Method: "GET", URL: origin + "/slow"})
	wantKind(t, err, Failed, "timed out after")
	c, p = loopback(t, origin, Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err = c.Do(ctx, p, Request{Method: "GET", URL: origin + "/slow"})
	wantKind(t, err, Failed, "context canceled")
}

// TestTLS: https to a server whose certificate RootCAs trusts works and keeps its connection;
// without that root the handshake fails and nothing is sent.
func TestTLS(t *testing.T) {
	var conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "secure "+r.URL.Path)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(srv.Certificate())
	c, p := loopback(t, srv.URL, Options{RootCAs: roots})
	for i := range 3 {
		resp, err := c.Do(context.Background(), p, Request{Method: "GET", URL: srv.URL + "/s"})
		if err != nil || string(resp.Body) != "secure /s" {
			t.Fatalf("request %d: %+v %v", i, resp, err)
		}
	}
	if n := conns.Load(); n != 1 {
		t.Fatalf("3 requests used %d TLS connections, want 1", n)
	}
	c, p = loopback(t, srv.URL, Options{})
	_, err := c.Do(context.Background(), p, Request{Method: "GET", URL: srv.URL + "/s"})
	wantKind(t, err, Failed, "certificate")
}
