package mcpgk

import (
	"context"
	"io"
	"mime"
	"net/http"
	"slices"
	"sync"

	"atelier/host/runtime/wit"
)

// A server's answers are bounded while they are read, before the MCP SDK holds them: a JSON
// answer to a POST as a whole, a text/event-stream (the answer to a POST, or the long-lived
// stream of a GET) per event, since a stream may carry any number of notifications before its
// answer. The bound on the wire is wireLimit(MaxResult): room for the JSON-RPC envelope and
// for escapes the server wrote that the result's own JSON does not need; the result itself is
// checked against MaxResult once decoded (guest.bounded). Past the bound the body fails with
// a *wit.SizeError whose Limit is MaxResult (what the caller may ask for) and whose Size is
// what the answer measured, read on without keeping it up to measureFactor×MaxResult (then it
// is "at least" that).

// measureFactor bounds how far an answer over the limit is read on to tell its size.
const measureFactor = 4

// wireLimit is the bound on the bytes of one answer (or one event) for a result bound of
// maxResult.
func wireLimit(maxResult int) int64 {
	return int64(maxResult) + int64(maxResult)/2 + 64<<10
}

// sizeSlot receives the size error of an answer of one call: the body of the request that
// carried the call finds it in the request's context (withSizeSlot).
type sizeSlot struct {
	mu    sync.Mutex
	err   *wit.SizeError
	fatal bool // the answer was JSON: the SDK fails the whole connection on its read error
}

type sizeSlotKey struct{}

// withSizeSlot returns ctx carrying a new slot for the size error of the answers of the
// requests made with it.
func withSizeSlot(ctx context.Context) (context.Context, *sizeSlot) {
	s := &sizeSlot{}
	return context.WithValue(ctx, sizeSlotKey{}, s), s
}

// set records err (the first one wins).
func (s *sizeSlot) set(err *wit.SizeError, fatal bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil {
		s.err, s.fatal = err, fatal
	}
}

// get returns the recorded error, if any, and whether the connection failed with it.
func (s *sizeSlot) get() (*wit.SizeError, bool) {
	if s == nil {
		return nil, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err, s.fatal
}

// boundedBody counts the bytes of a response body and fails once an answer passes the limit.
type boundedBody struct {
	rc      io.ReadCloser
	limit   int64 // wire bound of an answer or event
	result  int64 // MaxResult, the limit a *wit.SizeError reports
	sse     bool  // count per event (bytes since the last empty line), not the whole body
	onLimit func(err *wit.SizeError, fatal bool)

	n      int64 // bytes of the current answer or event
	lineN  int64 // bytes of the current line (SSE)
	prevCR bool  // the previous byte was '\r' (SSE: a "\r\n" is one line end)
	err    error // once set, every Read returns it
}

// newBoundedBody bounds resp's body; onLimit (from the request's size slot, or the stream's)
// learns of an answer over the limit.
func newBoundedBody(resp *http.Response, maxResult int, onLimit func(*wit.SizeError, bool)) *boundedBody {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return &boundedBody{rc: resp.Body, limit: wireLimit(maxResult), result: int64(maxResult), sse: mt == "text/event-stream", onLimit: onLimit}
}

// Read implements io.Reader.
func (b *boundedBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if !b.sse {
		if b.n += int64(n); b.n > b.limit {
			return 0, b.over()
		}
		return n, err
	}
	for _, c := range p[:n] {
		if b.step(c) {
			b.n = 0
		} else if b.n++; b.n > b.limit {
			return 0, b.over()
		}
	}
	return n, err
}

// step moves the SSE line state past c and reports whether c ended an event (an empty line).
func (b *boundedBody) step(c byte) (ended bool) {
	switch {
	case c == '\n' && b.prevCR: // the end of a "\r\n" line end
		b.prevCR = false
		return false
	case c == '\n' || c == '\r':
		ended = b.lineN == 0
		b.lineN, b.prevCR = 0, c == '\r'
		return ended
	}
	b.lineN++
	b.prevCR = false
	return false
}

// over measures the rest of the answer (or of the event) without keeping it, up to
// measureFactor times the result bound, and fails the body with the size error.
func (b *boundedBody) over() error {
	buf := make([]byte, 32<<10)
	for b.n < measureFactor*b.result {
		n, err := b.rc.Read(buf)
		if b.sse {
			if i := slices.IndexFunc(buf[:n], b.step); i >= 0 {
				b.n += int64(i)
				break
			}
		}
		b.n += int64(n)
		if err != nil {
			break
		}
	}
	se := &wit.SizeError{Size: b.n, Limit: b.result}
	b.err = se
	if b.onLimit != nil {
		b.onLimit(se, !b.sse)
	}
	return se
}

// Close implements io.Closer.
func (b *boundedBody) Close() error { return b.rc.Close() }
