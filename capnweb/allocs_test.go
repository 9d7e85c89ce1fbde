package capnweb_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gorilla/websocket"
)

// messageAllocs is what the server allocates, at most, for one call of add(1, 2) made as the
// official client makes it over a WebSocket: push, pull, the resolve answer and the release.
// Issue 20 brought it down from 24: the raw connection's read and write functions are made once,
// a pull of a settled result and a result without promises make no func value, and a handler's
// arguments are built in a fixed array. A change that adds to the message path shows here;
// lower it when a change saves allocations.
const messageAllocs = 19

// TestMessagePathAllocs guards the allocations of the server's message path (messageAllocs).
// The client writes prepared frames and reads the answers into a fixed buffer, so that every
// allocation counted is the server's.
func TestMessagePathAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector changes the allocation counts")
	}
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeWebSocket))
	defer hs.Close()
	ws, resp, err := websocket.DefaultDialer.DialContext(context.Background(), "ws"+strings.TrimPrefix(hs.URL, "http")+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	defer ws.Close()
	conn := ws.NetConn() // the server sends nothing before it is asked, so gorilla holds no bytes
	const calls = 700
	frames := make([][]byte, calls)
	for i := range frames {
		id := i + 1
		var b []byte
		b = appendMaskedFrame(b, `["push",["pipeline",0,["add"],[1,2]]]`)
		b = appendMaskedFrame(b, fmt.Sprintf(`["pull",%d]`, id))
		frames[i] = b
	}
	releases, wants := make([][]byte, calls), make([]string, calls)
	for i := range releases {
		releases[i] = appendMaskedFrame(nil, fmt.Sprintf(`["release",%d,1]`, i+1))
		wants[i] = fmt.Sprintf(`["resolve",%d,3]`, i+1)
	}
	buf := make([]byte, 256)
	next := 0
	call := func() {
		if _, err := conn.Write(frames[next]); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(conn, buf[:2]); err != nil {
			t.Fatal(err)
		}
		n := int(buf[1] & 0x7f)
		if _, err := io.ReadFull(conn, buf[:n]); err != nil {
			t.Fatal(err)
		}
		if string(buf[:n]) != wants[next] {
			t.Fatalf("got %s, want %s", buf[:n], wants[next])
		}
		if _, err := conn.Write(releases[next]); err != nil {
			t.Fatal(err)
		}
		next++
	}
	for range 100 { // buffers and pooled goroutines warm up
		call()
	}
	got := testing.AllocsPerRun(500, call)
	t.Logf("allocations per call: %.1f", got)
	if got > messageAllocs {
		t.Errorf("a call allocates %.1f times on the server's message path, more than the %d it did; find what the change added (go test -run '^$' -bench WebSocketSequential -memprofile)", got, messageAllocs)
	}
}

// appendMaskedFrame appends a client's text frame for payload (under 126 bytes).
func appendMaskedFrame(b []byte, payload string) []byte {
	key := [4]byte{1, 2, 3, 4}
	b = append(b, 0x81, 0x80|byte(len(payload)))
	b = append(b, key[:]...)
	for i := range len(payload) {
		b = append(b, payload[i]^key[i%4])
	}
	return b
}
