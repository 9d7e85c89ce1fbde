package outboundhttp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"atelier/host/capability/outboundhttp/internal/scrub"
)

// The transport sends HTTP/1.1 requests on the calling goroutine's own OS thread: every read
// and write is a non-blocking socket call followed, when the socket is not ready, by a
// blocking poll(2), so waiting for the server never goes through Go's network poller.
//
// Why: a gatekeeper's fetch runs inside a Wasmtime host callback, where the goroutine is locked
// to its OS thread. net/http's Transport makes the caller wait on channels fed by its own
// reader and writer goroutines, and every such wait of a locked goroutine is a hand-off between
// OS threads (the locked thread sleeps, another wakes it): two or three per request, which cost
// more than the loopback request itself (docs/gatekeepers.md has the numbers). Here the
// kernel wakes the waiting thread directly. The price is an OS thread per request in flight,
// which a Wasmtime call holds anyway.
//
// Connections are kept alive per scheme://host:port and checked before reuse; HTTP/2 is not
// spoken (ALPN offers http/1.1 only).
type transport struct {
	dialer  net.Dialer
	tls     *tls.Config
	timeout time.Duration

	mu        sync.Mutex
	idle      map[string][]*conn // most recently used last
	idleCount int
	lastSweep time.Time
}

const (
	// maxIdlePerHost and maxIdle bound the kept-alive connections.
	maxIdlePerHost = 16
	maxIdle        = 256
	// idleTimeout is how long an unused connection is kept.
	idleTimeout = 90 * time.Second
	// maxResponseHeader bounds the status line and headers of a response.
	maxResponseHeader = 1 << 20
	// pollSlice is the longest single poll(2): the request's context is checked between them.
	pollSlice = 100 * time.Millisecond
)

func newTransport(o Options, control func(network, address string, c syscall.RawConn) error) *transport {
	return &transport{
		dialer:  net.Dialer{Control: control},
		tls:     &tls.Config{RootCAs: o.RootCAs, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}},
		timeout: o.Timeout,
		idle:    make(map[string][]*conn),
	}
}

// errHeaderTooLarge is a response whose head exceeds maxResponseHeader.
var errHeaderTooLarge = fmt.Errorf("response headers exceed %d bytes", maxResponseHeader)

// body is a response body as read: at most maxBody+1 bytes of it (size counts them), with the
// needles of the scrub matcher replaced in data (scrubbed counts the replacements).
type body struct {
	data     []byte
	size     int64
	scrubbed int
}

// roundTrip sends req and reads the response with at most maxBody+1 bytes of its body (the
// caller refuses more than maxBody), scrubbed by m (nil: as sent) while it streams in. The
// request's deadline is the earlier of ctx's and the transport's timeout, connection included.
func (t *transport) roundTrip(ctx context.Context, req *http.Request, maxBody int, m *scrub.Matcher) (*http.Response, body, error) {
	start := time.Now()
	deadline := start.Add(t.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	addr := hostPort(req.URL.Scheme, req.URL.Host)
	for retried := false; ; retried = true {
		c, reused, err := t.get(ctx, req.URL, addr, deadline)
		if err != nil {
			return nil, body{}, err
		}
		resp, b, err := c.exchange(ctx, req, deadline, maxBody, m)
		if err != nil {
			c.close()
			if reused && !retried && c.got == 0 && replayable(req) && req.GetBody != nil {
				// The server closed the kept-alive connection as we reused it and answered
				// nothing: the request was not processed, send it once more on a new one.
				if req.Body, err = req.GetBody(); err == nil {
					continue
				}
			}
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("timed out after %s: %w", time.Since(start).Round(time.Millisecond), err)
			}
			return nil, body{}, err
		}
		if resp.Close || b.size > int64(maxBody) || c.br.Buffered() > 0 {
			c.close()
		} else {
			t.put(c)
		}
		return resp, b, nil
	}
}

// replayable reports whether req may be sent again after its connection failed: idempotent
// methods, or a request that says it is idempotent.
func replayable(req *http.Request) bool {
	switch req.Method {
	case "GET", "HEAD", "OPTIONS", "PUT", "DELETE":
		return true
	}
	return req.Header.Get("Idempotency-Key") != "" || req.Header.Get("X-Idempotency-Key") != ""
}

// hostPort adds the scheme's default port to host when it has none.
func hostPort(scheme, host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), defaultPort(scheme))
}

// get returns a kept-alive connection to addr for u's scheme that the server has not closed,
// or a new one.
func (t *transport) get(ctx context.Context, u *url.URL, addr string, deadline time.Time) (*conn, bool, error) {
	key := u.Scheme + "://" + addr
	for {
		t.mu.Lock()
		t.sweepLocked()
		list := t.idle[key]
		if len(list) == 0 {
			t.mu.Unlock()
			break
		}
		c := list[len(list)-1]
		t.idle[key] = list[:len(list)-1]
		t.idleCount--
		t.mu.Unlock()
		if c.alive() {
			c.got = 0
			return c, true, nil
		}
		c.close()
	}
	c, err := t.dial(ctx, key, u, addr, deadline)
	return c, false, err
}

// put keeps c for reuse, dropping the least recently used connection beyond the bounds.
func (t *transport) put(c *conn) {
	c.idleSince = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	list := append(t.idle[c.key], c)
	t.idleCount++
	if len(list) > maxIdlePerHost {
		list[0].close()
		list = slices.Delete(list, 0, 1)
		t.idleCount--
	}
	t.idle[c.key] = list
	if t.idleCount > maxIdle {
		t.sweepLocked()
		t.dropOldestLocked()
	}
}

// sweepLocked closes connections idle for longer than idleTimeout, at most once a second.
func (t *transport) sweepLocked() {
	now := time.Now()
	if now.Sub(t.lastSweep) < time.Second {
		return
	}
	t.lastSweep = now
	for key, list := range t.idle {
		kept := list[:0]
		for _, c := range list {
			if now.Sub(c.idleSince) > idleTimeout {
				c.close()
				t.idleCount--
			} else {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			delete(t.idle, key)
		} else {
			t.idle[key] = kept
		}
	}
}

// dropOldestLocked closes the connection idle for longest.
func (t *transport) dropOldestLocked() {
	var oldest string
	for key, list := range t.idle {
		if len(list) > 0 && (oldest == "" || list[0].idleSince.Before(t.idle[oldest][0].idleSince)) {
			oldest = key
		}
	}
	if oldest == "" {
		return
	}
	t.idle[oldest][0].close()
	t.idle[oldest] = slices.Delete(t.idle[oldest], 0, 1)
	t.idleCount--
}

// dial connects to the URL's host (every address dialed passes the dialer's Control check)
// and, for https, completes the TLS handshake.
func (t *transport) dial(ctx context.Context, key string, u *url.URL, addr string, deadline time.Time) (*conn, error) {
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	nc, err := t.dialer.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tcp := nc.(*net.TCPConn)
	raw, err := tcp.SyscallConn()
	if err != nil {
		tcp.Close()
		return nil, err
	}
	c := &conn{key: key, sock: &threadConn{TCPConn: tcp, raw: raw, ctx: ctx, deadline: deadline}}
	c.nc = c.sock
	if u.Scheme == "https" {
		cfg := t.tls.Clone()
		cfg.ServerName = u.Hostname()
		tc := tls.Client(c.sock, cfg)
		if err := tc.Handshake(); err != nil {
			tcp.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		c.nc = tc
	}
	c.br = bufio.NewReader(c)
	c.bw = bufio.NewWriter(c.nc)
	return c, nil
}

// conn is one kept-alive connection, used by one request at a time.
type conn struct {
	key       string
	sock      *threadConn
	nc        net.Conn // sock, or TLS over it
	br        *bufio.Reader
	bw        *bufio.Writer
	got       int // response bytes read in the current exchange
	budget    int // bytes the response head may still take; < 0: no bound (the body)
	idleSince time.Time
}

// Read feeds the connection's bufio.Reader: it counts what it takes and enforces the head
// budget.
func (c *conn) Read(p []byte) (int, error) {
	if c.budget >= 0 {
		if c.budget == 0 {
			return 0, errHeaderTooLarge
		}
		p = p[:min(len(p), c.budget)]
	}
	n, err := c.nc.Read(p)
	c.got += n
	if c.budget >= 0 {
		c.budget -= n
	}
	return n, err
}

// exchange writes req and reads its response (skipping informational 1xx answers).
func (c *conn) exchange(ctx context.Context, req *http.Request, deadline time.Time, maxBody int, m *scrub.Matcher) (*http.Response, body, error) {
	c.sock.ctx, c.sock.deadline = ctx, deadline
	c.budget = maxResponseHeader
	if err := req.Write(c.bw); err != nil {
		return nil, body{}, err
	}
	if err := c.bw.Flush(); err != nil {
		return nil, body{}, err
	}
	var resp *http.Response
	for {
		var err error
		if resp, err = http.ReadResponse(c.br, req); err != nil {
			return nil, body{}, err
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			return nil, body{}, errors.New("the server switched protocols")
		}
		if resp.StatusCode >= 200 {
			break
		}
	}
	c.budget = -1
	var data bytes.Buffer
	w := m.NewWriter(&data)
	size, err := io.Copy(w, io.LimitReader(resp.Body, int64(maxBody)+1))
	if err == nil {
		err = w.Close()
	}
	if err != nil {
		return nil, body{}, fmt.Errorf("reading the body: %w", err)
	}
	if size <= int64(maxBody) {
		resp.Body.Close()
	}
	return resp, body{data: data.Bytes(), size: size, scrubbed: w.Replaced()}, nil
}

// alive reports whether the server has neither closed c nor sent anything unasked.
func (c *conn) alive() bool {
	var ok bool
	var buf [1]byte
	err := c.sock.raw.Read(func(fd uintptr) bool {
		_, _, err := syscall.Recvfrom(int(fd), buf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		ok = err == syscall.EAGAIN
		return true
	})
	return err == nil && ok // put keeps no connection with bytes already read
}

func (c *conn) close() { c.sock.Close() }

// threadConn is a TCP connection whose Read and Write wait in poll(2) on the calling thread
// until ctx ends or the deadline passes.
type threadConn struct {
	*net.TCPConn
	raw      syscall.RawConn
	ctx      context.Context
	deadline time.Time
}

// Read reads from the socket, waiting on this thread.
func (c *threadConn) Read(p []byte) (int, error) {
	return c.io(p, unix.POLLIN, c.raw.Read, syscall.Read)
}

// Write writes all of p to the socket, waiting on this thread.
func (c *threadConn) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := c.io(p[written:], unix.POLLOUT, c.raw.Write, syscall.Write)
		written += n
		if err != nil {
			return written, err
		}
	}
	return written, nil
}

// io runs op on the socket inside access (the RawConn's Read or Write, which hold the
// descriptor for that direction), polling for events while op would block.
func (c *threadConn) io(p []byte, events int16, access func(func(uintptr) bool) error, op func(int, []byte) (int, error)) (int, error) {
	var n int
	var opErr error
	err := access(func(fd uintptr) bool {
		for {
			n, opErr = op(int(fd), p)
			switch opErr {
			case syscall.EINTR:
				continue
			case syscall.EAGAIN:
				if opErr = c.wait(int(fd), events); opErr != nil {
					return true
				}
				continue
			}
			return true
		}
	})
	if err != nil {
		return 0, err
	}
	if opErr != nil {
		return 0, opErr
	}
	if n == 0 && len(p) > 0 && events == unix.POLLIN {
		return 0, io.EOF
	}
	return n, nil
}

// wait blocks in poll(2) until fd is ready for events, ctx ends or the deadline passes.
func (c *threadConn) wait(fd int, events int16) error {
	for {
		if err := c.ctx.Err(); err != nil {
			return err
		}
		left := time.Until(c.deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		ms := int(min(left, pollSlice)/time.Millisecond) + 1
		fds := []unix.PollFd{{Fd: int32(fd), Events: events}}
		n, err := unix.Poll(fds, ms)
		if err == unix.EINTR || n == 0 {
			continue
		}
		return err
	}
}

// SetDeadline, SetReadDeadline and SetWriteDeadline set the one deadline of both directions.
func (c *threadConn) SetDeadline(t time.Time) error      { c.deadline = t; return nil }
func (c *threadConn) SetReadDeadline(t time.Time) error  { c.deadline = t; return nil }
func (c *threadConn) SetWriteDeadline(t time.Time) error { c.deadline = t; return nil }
