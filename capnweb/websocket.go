package capnweb

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"atelier/internal/membudget"
)

// Close code used for every close this package initiates, as the JavaScript implementation does.
const closeCodeRPC = 3000

const (
	defaultKeepAlive = 30 * time.Second
	writeTimeout     = 10 * time.Second
	closeTimeout     = time.Second
	// keepBufferSize is the largest read or write buffer kept for the next message.
	keepBufferSize = 64 << 10
	// readBufferSize is the size of a server connection's read buffer: one read takes up to
	// this much of what the peer sent.
	readBufferSize = 4096
)

// wsTransport carries messages as WebSocket text frames, with ping/pong keepalive. gorilla reads
// frames; this type writes them itself, straight to the connection, so that a batch of messages
// (each its own frame) leaves in one system call. Control frames wait for the data write in
// progress instead of blocking the reader (see queueControl).
type wsTransport struct {
	c         *websocket.Conn
	nc        net.Conn
	raw       *rawConn // nc, when it is a server's plain TCP connection
	client    bool     // frames are masked
	keepAlive time.Duration
	done      chan struct{}
	once      sync.Once
	wg        sync.WaitGroup

	rbuf       []byte           // reused by ReadMessage
	lastExtend time.Time        // when the read deadline was last moved (read loop only)
	budget     *membudget.Share // bounds large messages across sessions (Server.MessageMemory); nil: none
	held       int64            // bytes of the last message reserved in budget (read loop only)

	wmu           sync.Mutex // serializes writes to nc; guards the fields below
	wbuf          []byte
	pending       []byte // frames a write that could not wait left unwritten (tryWriteMessages)
	writeDeadline time.Time
	closeSent     bool

	cmu        sync.Mutex // guards the fields below
	ping       bool       // a ping is due
	pingData   []byte     // its payload
	pong       []byte     // payload of the pong due, if not nil
	ctrlQueued atomic.Bool
	barriers   int               // round trips started (roundTrip)
	awaited    map[string]func() // ping payloads whose pong a roundTrip waits for
}

// newWSTransport wraps an open connection. keepAlive 0 means the default, negative disables it.
func newWSTransport(c *websocket.Conn, client bool, keepAlive time.Duration, maxMessage int, budget *membudget.Share) *wsTransport {
	if keepAlive == 0 {
		keepAlive = defaultKeepAlive
	}
	t := &wsTransport{c: c, nc: c.NetConn(), client: client, keepAlive: keepAlive, budget: budget, done: make(chan struct{})}
	t.raw, _ = t.nc.(*rawConn)
	c.SetReadLimit(int64(maxMessage))
	c.SetPingHandler(func(data string) error {
		t.queueControl(websocket.PongMessage, []byte(data))
		return nil
	})
	c.SetCloseHandler(func(code int, _ string) error {
		t.writeClose(code, "") // echo the code, as gorilla's default handler does
		return nil
	})
	c.SetPongHandler(func(data string) error {
		t.extendDeadline(time.Now())
		t.cmu.Lock()
		done := t.awaited[data]
		delete(t.awaited, data)
		t.cmu.Unlock()
		if done != nil {
			done()
		}
		return nil
	})
	if keepAlive > 0 {
		t.extendDeadline(time.Now())
		t.wg.Add(1)
		go t.pingLoop()
	}
	return t
}

// roundTrip implements roundTripper: it sends a ping with a fresh payload and waits for its
// pong. The read loop handles the pong after every message the peer sent before it.
func (t *wsTransport) roundTrip(ctx context.Context) error {
	got := make(chan struct{})
	t.cmu.Lock()
	t.barriers++
	key := "drain " + strconv.Itoa(t.barriers)
	if t.awaited == nil {
		t.awaited = map[string]func(){}
	}
	t.awaited[key] = func() { close(got) }
	t.ping, t.pingData = true, []byte(key)
	t.ctrlQueued.Store(true)
	t.cmu.Unlock()
	t.flushControl()
	select {
	case <-got:
		return nil
	case <-t.done:
		return errors.New("the WebSocket closed")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// extendDeadline gives the peer two ping intervals to show it is alive.
func (t *wsTransport) extendDeadline(now time.Time) {
	if t.keepAlive > 0 {
		t.lastExtend = now
		_ = t.c.SetReadDeadline(now.Add(2 * t.keepAlive))
	}
}

func (t *wsTransport) pingLoop() {
	defer t.wg.Done()
	tick := time.NewTicker(t.keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-t.done:
			return
		case <-tick.C:
			t.queueControl(websocket.PingMessage, nil)
		}
	}
}

// ReadMessage returns the next text message. The slice is reused by the next call (the session
// copies what it keeps while parsing).
func (t *wsTransport) ReadMessage() ([]byte, error) {
	t.releaseRead() // the previous message has been handled
	typ, r, err := t.c.NextReader()
	if err != nil {
		return nil, readError(err)
	}
	if typ != websocket.TextMessage {
		return nil, badMessage("binary WebSocket frames are not allowed")
	}
	buf := t.rbuf[:0]
	if buf == nil {
		buf = make([]byte, 0, 512)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
			// What a message takes past keepBufferSize counts in the budget until the next
			// read (or until the reading fails).
			if more := int64(cap(buf)-keepBufferSize) - t.held; more > 0 {
				if refused := t.budget.Reserve(more); refused != membudget.Fits {
					t.rbuf = nil
					if refused == membudget.Address {
						return nil, errAddressMessageMemory
					}
					return nil, errMessageMemory
				}
				t.held += more
			}
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			t.releaseRead()
			return nil, readError(err)
		}
	}
	if cap(buf) <= keepBufferSize {
		t.rbuf = buf
	} else {
		t.rbuf = nil
	}
	// Moving the deadline costs a timer update: do it at most four times per interval.
	if t.keepAlive > 0 {
		if now := time.Now(); now.Sub(t.lastExtend) > t.keepAlive/4 {
			t.extendDeadline(now)
		}
	}
	return buf, nil
}

// releaseRead gives back the last message's share of the server's MessageMemory: the read
// loop calls it before each read and when it stops reading.
func (t *wsTransport) releaseRead() {
	t.budget.Release(t.held)
	t.held = 0
}

// errMessageMemory ends a session whose incoming message would take the large messages the
// server's sessions hold past Server.MessageMemory.
var errMessageMemory = errors.New("the server holds as many large incoming messages as it takes at once: send this one again shortly")

// errAddressMessageMemory ends a session whose incoming message would take the large messages
// the sessions of its client network hold past Server.MessageMemoryPerAddress.
var errAddressMessageMemory = errors.New("the server holds as many large incoming messages from your address as it takes from one address at once: send this one again when your others have arrived")

// readError describes why reading a message failed.
func readError(err error) error {
	var ce *websocket.CloseError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("Peer closed WebSocket: %d %s", ce.Code, ce.Text)
	case errors.Is(err, websocket.ErrReadLimit):
		return badMessage("message exceeds the size limit")
	}
	return fmt.Errorf("WebSocket connection failed: %w", err)
}

// WriteMessage sends one message as a text frame.
func (t *wsTransport) WriteMessage(msg []byte) error {
	return t.writeMessages([][]byte{msg})
}

// writeMessages sends each message as its own text frame, all in one write.
func (t *wsTransport) writeMessages(msgs [][]byte) error {
	t.wmu.Lock()
	buf := t.wbuf[:0]
	for _, m := range msgs {
		buf = appendFrame(buf, websocket.TextMessage, m, t.client)
	}
	err := t.writeLocked(buf, writeTimeout)
	if cap(buf) <= keepBufferSize {
		t.wbuf = buf
	} else {
		t.wbuf = nil
	}
	t.wmu.Unlock()
	t.flushControl()
	return err
}

// watchReads implements readWatcher: on a server's TCP connection, idle runs when the reader
// is about to wait for the peer and busy when the wait is over.
func (t *wsTransport) watchReads(idle, busy func()) bool {
	if t.raw == nil {
		return false
	}
	t.raw.onReadWait(idle, busy)
	return true
}

// tryWriteMessages implements waitlessWriter: it writes what the socket takes at once of the
// frames for msgs and keeps the rest for the next write (flushPending). It reports whether it
// took the messages (not when another write is in progress) and whether all went out.
func (t *wsTransport) tryWriteMessages(msgs [][]byte) (taken, complete bool, err error) {
	if t.raw == nil || !t.wmu.TryLock() {
		return false, false, nil
	}
	if t.closeSent {
		t.wmu.Unlock()
		return true, false, websocket.ErrCloseSent
	}
	buf := append(t.wbuf[:0], t.pending...)
	for _, m := range msgs {
		buf = appendFrame(buf, websocket.TextMessage, m, t.client)
	}
	n, err := t.raw.tryWrite(buf)
	if err != nil {
		n = len(buf) // the connection failed: nothing more will be written
	}
	t.pending = append(t.pending[:0], buf[n:]...)
	if cap(buf) <= keepBufferSize {
		t.wbuf = buf
	} else {
		t.wbuf = nil
	}
	complete = len(t.pending) == 0
	t.wmu.Unlock()
	t.flushControl()
	return true, complete, err
}

// flushPending implements waitlessWriter: it writes what tryWriteMessages left, waiting for
// the peer to take it.
func (t *wsTransport) flushPending() error {
	t.wmu.Lock()
	err := t.writeLocked(nil, writeTimeout)
	t.wmu.Unlock()
	t.flushControl()
	return err
}

// writeLocked writes what tryWriteMessages left and then frames to the connection within about
// timeout; t.wmu must be held. Moving the deadline costs a timer update, so it is only moved
// when less than half the timeout is left.
func (t *wsTransport) writeLocked(frames []byte, timeout time.Duration) error {
	if t.closeSent {
		return websocket.ErrCloseSent
	}
	if len(t.pending) == 0 && len(frames) == 0 {
		return nil
	}
	if now := time.Now(); t.writeDeadline.Sub(now) < timeout/2 || t.writeDeadline.Sub(now) > timeout {
		t.writeDeadline = now.Add(timeout)
		_ = t.nc.SetWriteDeadline(t.writeDeadline)
	}
	if len(t.pending) > 0 {
		_, err := t.nc.Write(t.pending)
		if cap(t.pending) <= keepBufferSize {
			t.pending = t.pending[:0]
		} else {
			t.pending = nil
		}
		if err != nil || len(frames) == 0 {
			return err
		}
	}
	_, err := t.nc.Write(frames)
	return err
}

// queueControl sends a ping or pong frame as soon as no data write is in progress. It never
// waits for one, so the ping handler cannot stall the read loop behind a slow peer. Only the
// latest pong is kept (RFC 6455 section 5.5.3), so a flood of pings costs no memory.
func (t *wsTransport) queueControl(typ int, data []byte) {
	t.cmu.Lock()
	if typ == websocket.PingMessage {
		t.ping = true
	} else {
		t.pong = append(t.pong[:0:0], data...)
	}
	t.ctrlQueued.Store(true)
	t.cmu.Unlock()
	t.flushControl()
}

// flushControl writes the queued control frames if the connection is free. If another
// goroutine is writing, it calls flushControl again when it is done.
func (t *wsTransport) flushControl() {
	for t.ctrlQueued.Load() && t.wmu.TryLock() {
		t.cmu.Lock()
		var frames []byte
		if t.ping {
			frames = appendFrame(frames, websocket.PingMessage, t.pingData, t.client)
		}
		if t.pong != nil {
			frames = appendFrame(frames, websocket.PongMessage, t.pong, t.client)
		}
		t.ping, t.pingData, t.pong = false, nil, nil
		t.ctrlQueued.Store(false)
		t.cmu.Unlock()
		_ = t.writeLocked(frames, writeTimeout)
		t.wmu.Unlock()
	}
}

// writeClose sends a close frame, once.
func (t *wsTransport) writeClose(code int, text string) {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	if !t.closeSent {
		_ = t.writeLocked(appendFrame(nil, websocket.CloseMessage, websocket.FormatCloseMessage(code, text), t.client), closeTimeout)
		t.closeSent = true
	}
}

// appendFrame appends one final WebSocket frame (RFC 6455 section 5.2), masked with a random
// key when the client sends it.
func appendFrame(b []byte, typ int, payload []byte, masked bool) []byte {
	b = append(b, 0x80|byte(typ))
	var maskBit byte
	if masked {
		maskBit = 0x80
	}
	switch n := len(payload); {
	case n < 126:
		b = append(b, maskBit|byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, maskBit|126), uint16(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, maskBit|127), uint64(n))
	}
	if !masked {
		return append(b, payload...)
	}
	key := rand.Uint32()
	b = binary.LittleEndian.AppendUint32(b, key)
	start := len(b)
	b = append(b, payload...)
	maskBytes(b[start:], key)
	return b
}

// maskBytes XORs p with the little-endian key repeated, eight bytes at a time.
func maskBytes(p []byte, key uint32) {
	k8 := uint64(key) | uint64(key)<<32
	for len(p) >= 8 {
		binary.LittleEndian.PutUint64(p, binary.LittleEndian.Uint64(p)^k8)
		p = p[8:]
	}
	for i := range p {
		p[i] ^= byte(key >> (8 * (i % 4)))
	}
}

// Close sends a close frame (code 3000 with the reason, cut to 123 bytes) and closes the socket.
func (t *wsTransport) Close(reason error) error {
	var err error
	t.once.Do(func() {
		code, text := websocket.CloseNormalClosure, ""
		if reason != nil {
			code, text = closeCodeRPC, reason.Error()
			if we, ok := reason.(*Error); ok {
				text = we.Message
			}
			if len(text) > 123 {
				text = text[:123]
			}
		}
		t.writeClose(code, text)
		err = t.c.Close()
		close(t.done)
		t.wg.Wait()
	})
	return err
}

// DialWebSocket connects to a Cap'n Web server at url (ws:// or wss://) and starts a session.
// The session's Main() is the server's main object; opts.Main is offered to the server.
func DialWebSocket(ctx context.Context, url string, opts Options) (*Session, error) {
	c, resp, err := websocket.DefaultDialer.DialContext(ctx, url, nil)
	if resp != nil && resp.Body != nil {
		resp.Body.Close()
	}
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	if opts.Peer.Transport == "" {
		opts.Peer = PeerInfo{Transport: "websocket", RemoteAddr: c.RemoteAddr().String()}
	}
	lim := opts.Limits.withDefaults()
	return NewSession(newWSTransport(c, true, opts.KeepAlive, lim.MaxMessageSize, nil), opts), nil
}

// ServeWebSocket upgrades the request and runs a session until it ends.
func (srv *Server) ServeWebSocket(w http.ResponseWriter, r *http.Request) {
	opts, ok := srv.sessionOptions(w, r, "websocket")
	if !ok {
		return
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }} // checked above
	c, err := up.Upgrade(rawHijacker{w}, r, nil)
	if err != nil {
		disposeMain(opts.Main)
		return // Upgrade has answered the request
	}
	// The session is known to Shutdown before it reads its first message, so that a call it
	// runs is always drained.
	_, messages := srv.budget()
	s := newSession(newWSTransport(c, false, opts.KeepAlive, opts.Limits.withDefaults().MaxMessageSize, messages.Share(r.RemoteAddr)), opts)
	if !srv.sessions.add(s) { // Shutdown began during the upgrade
		s.start()
		s.closeWith(ErrShuttingDown)
		return
	}
	defer srv.sessions.remove(s)
	s.start()
	if srv.OnSession != nil {
		srv.OnSession(s)
	}
	<-s.Done()
	_ = s.Close()
}

// rawHijacker hands gorilla's Upgrade the hijacked connection wrapped in a rawConn when it is a
// plain TCP connection, with a read buffer over the wrapper (Upgrade refuses a request whose
// buffer holds more than the handshake, so none is lost).
type rawHijacker struct{ http.ResponseWriter }

// Hijack implements http.Hijacker.
func (h rawHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, errors.New("the response does not implement http.Hijacker")
	}
	c, brw, err := hj.Hijack()
	if err != nil || brw.Reader.Buffered() > 0 {
		return c, brw, err
	}
	rc := newRawConn(c)
	if rc == nil {
		return c, brw, nil
	}
	return rc, bufio.NewReadWriter(bufio.NewReaderSize(rc, readBufferSize), brw.Writer), nil
}
