package capnweb

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// rawWS starts a server session with no main object and connects a bare gorilla client to it.
func rawWS(t *testing.T) *websocket.Conn {
	t.Helper()
	srv := &Server{}
	hs := httptest.NewServer(http.HandlerFunc(srv.ServeWebSocket))
	t.Cleanup(hs.Close)
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(hs.URL, "http"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestWebSocketPingFlood: every ping is answered while pings are not coming faster than they
// can be written, a flood of pings is answered with at most one pong each, and calls still
// work afterwards (the session keeps one frame per message).
func TestWebSocketPingFlood(t *testing.T) {
	c := rawWS(t)
	pongs := make(chan string, 1000)
	c.SetPongHandler(func(data string) error { pongs <- data; return nil })
	for i := range 500 {
		if err := c.WriteControl(websocket.PingMessage, []byte{byte(i)}, time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range []string{`["push",["pipeline",0,["x"],[]]]`, `["pull",1]`} {
		if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	typ, msg, err := c.ReadMessage() // pongs are handled while reading
	if err != nil || typ != websocket.TextMessage {
		t.Fatalf("read: %v %v", typ, err)
	}
	if want := `["reject",1,["error","Error","This connection has no main object."]]`; string(msg) != want {
		t.Fatalf("got %s, want %s", msg, want)
	}
	if n := len(pongs); n == 0 || n > 500 {
		t.Fatalf("%d pongs for 500 pings", n)
	}
}

// TestWebSocketCloseEcho: a close frame from the peer is answered with a close frame carrying
// the same code.
func TestWebSocketCloseEcho(t *testing.T) {
	c := rawWS(t)
	msg := websocket.FormatCloseMessage(4321, "bye")
	if err := c.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, _, err := c.ReadMessage()
	if !websocket.IsCloseError(err, 4321) {
		t.Fatalf("got %v, want close 4321", err)
	}
}

// TestAppendFrameMasking: masked frames unmask to the payload, for every length encoding.
func TestAppendFrameMasking(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 125, 126, 65535, 65536} {
		payload := []byte(strings.Repeat("abcdefghij", n/10+1)[:n])
		frame := appendFrame(nil, websocket.TextMessage, payload, true)
		hdr := 2
		switch {
		case n >= 65536:
			hdr += 8
		case n >= 126:
			hdr += 2
		}
		if frame[0] != 0x81 || frame[1]&0x80 == 0 || len(frame) != hdr+4+n {
			t.Fatalf("n=%d: bad header % x", n, frame[:hdr])
		}
		key := frame[hdr : hdr+4]
		for i, b := range frame[hdr+4:] {
			if b^key[i%4] != payload[i] {
				t.Fatalf("n=%d: byte %d not masked with the key", n, i)
			}
		}
	}
}
