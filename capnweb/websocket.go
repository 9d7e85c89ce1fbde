package capnweb

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// Close code used for every close this package initiates, as the JavaScript implementation does.
const closeCodeRPC = 3000

const (
	defaultKeepAlive = 30 * time.Second
	writeTimeout     = 10 * time.Second
)

// wsTransport carries messages as WebSocket text frames, with ping/pong keepalive.
type wsTransport struct {
	c         *websocket.Conn
	keepAlive time.Duration
	done      chan struct{}
	once      sync.Once
	wg        sync.WaitGroup
}

// newWSTransport wraps an open connection. keepAlive 0 means the default, negative disables it.
func newWSTransport(c *websocket.Conn, keepAlive time.Duration, maxMessage int) *wsTransport {
	if keepAlive == 0 {
		keepAlive = defaultKeepAlive
	}
	t := &wsTransport{c: c, keepAlive: keepAlive, done: make(chan struct{})}
	c.SetReadLimit(int64(maxMessage))
	if keepAlive > 0 {
		t.extendDeadline()
		c.SetPongHandler(func(string) error { t.extendDeadline(); return nil })
		t.wg.Add(1)
		go t.pingLoop()
	}
	return t
}

// extendDeadline gives the peer two ping intervals to show it is alive.
func (t *wsTransport) extendDeadline() {
	if t.keepAlive > 0 {
		_ = t.c.SetReadDeadline(time.Now().Add(2 * t.keepAlive))
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
			if err := t.c.WriteControl(websocket.PingMessage, nil, time.Now().Add(writeTimeout)); err != nil {
				return
			}
		}
	}
}

func (t *wsTransport) ReadMessage() ([]byte, error) {
	typ, data, err := t.c.ReadMessage()
	if err != nil {
		var ce *websocket.CloseError
		switch {
		case errors.As(err, &ce):
			return nil, fmt.Errorf("Peer closed WebSocket: %d %s", ce.Code, ce.Text)
		case errors.Is(err, websocket.ErrReadLimit):
			return nil, badMessage("message exceeds the size limit")
		}
		return nil, fmt.Errorf("WebSocket connection failed: %w", err)
	}
	t.extendDeadline()
	if typ != websocket.TextMessage {
		return nil, badMessage("binary WebSocket frames are not allowed")
	}
	return data, nil
}

func (t *wsTransport) WriteMessage(msg []byte) error {
	_ = t.c.SetWriteDeadline(time.Now().Add(writeTimeout))
	return t.c.WriteMessage(websocket.TextMessage, msg)
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
		_ = t.c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, text), time.Now().Add(time.Second))
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
	return NewSession(newWSTransport(c, opts.KeepAlive, lim.MaxMessageSize), opts), nil
}

// ServeWebSocket upgrades the request and runs a session until it ends.
func (srv *Server) ServeWebSocket(w http.ResponseWriter, r *http.Request) {
	opts, ok := srv.sessionOptions(w, r, "websocket")
	if !ok {
		return
	}
	up := websocket.Upgrader{CheckOrigin: func(*http.Request) bool { return true }} // checked above
	c, err := up.Upgrade(w, r, nil)
	if err != nil {
		disposeMain(opts.Main)
		return // Upgrade has answered the request
	}
	s := NewSession(newWSTransport(c, opts.KeepAlive, opts.Limits.withDefaults().MaxMessageSize), opts)
	if srv.OnSession != nil {
		srv.OnSession(s)
	}
	<-s.Done()
	_ = s.Close()
}
