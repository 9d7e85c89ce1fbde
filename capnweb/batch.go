package capnweb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"atelier/internal/membudget"
)

// errBatchEnded is how promises waiting for the peer of a finished batch fail.
var errBatchEnded = &Error{Name: "Error", Message: "Batch RPC request ended."}

// ServeBatch answers one HTTP batch: it runs a fresh session over the request's messages, waits
// until every pulled result is answered, and replies with the messages the session produced.
func (srv *Server) ServeBatch(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	opts, ok := srv.sessionOptions(w, r, "http-batch")
	if !ok {
		return
	}
	lim := opts.Limits.withDefaults()
	timeout := srv.BatchTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	batches, _ := srv.budget()
	budget := batches.Share(r.RemoteAddr)
	body, held, ok := membudget.ReadBody(w, r, lim.MaxMessageSize, timeout, budget, "batch requests")
	defer budget.Release(held)
	if !ok {
		disposeMain(opts.Main)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	// The answers count against the batch budget too, until they are written.
	out, answers, answersRefused := runBatch(ctx, body, opts, budget)
	defer budget.Release(answers)
	if answersRefused != membudget.Fits {
		membudget.Refuse(w, answersRefused, "batch requests")
		return
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
	}
	w.Header().Set("Content-Type", "text/plain;charset=UTF-8")
	_, _ = w.Write(out)
}

// runBatch feeds the lines of body to a fresh session and returns its output joined by "\n"
// and the bytes of answers it reserved in budget, which the caller releases once it is done
// with the output. A session whose answers do not fit in budget ends, and refused says why.
func runBatch(ctx context.Context, body []byte, opts Options, budget *membudget.Share) (out []byte, held int64, refused membudget.Refusal) {
	s := newSession(nil, opts)
	s.answers = budget
	out = runBatchSession(ctx, s, body)
	s.mu.Lock()
	held, refused = s.answersHeld, s.answersRefused
	s.mu.Unlock()
	return out, held, refused
}

// errBatchAnswers ends a batch session whose answers do not fit in the server's BatchMemory.
var errBatchAnswers = errors.New("the batch's answers do not fit in the memory the server gives batches")

// runBatchSession runs a batch on a session made by newSession (without loops) and ends it.
func runBatchSession(ctx context.Context, s *Session, body []byte) []byte {
	if len(body) > 0 {
		for line := range strings.SplitSeq(string(body), "\n") {
			if err := s.handleMessage([]byte(line)); err != nil {
				s.shutdown(err, true)
				break
			}
		}
	}
	s.endInput(errBatchEnded)
	_ = s.waitDrained(ctx)
	s.mu.Lock()
	out := s.outq
	s.outq, s.queued = nil, 0
	s.mu.Unlock()
	s.shutdown(errBatchEnded, false)
	var b []byte
	for i, m := range out {
		if i > 0 {
			b = append(b, '\n')
		}
		b = append(b, m...)
	}
	return b
}

// NewHTTPBatchSession starts a client session that sends everything it produces in one HTTP POST
// to url. The request leaves on the first Await (or Session.Flush); after the response has been
// processed the session ends, so await everything you need before that first Await returns:
// every call is pulled at once, so results of calls made before the request left all arrive.
// client nil means http.DefaultClient.
func NewHTTPBatchSession(ctx context.Context, url string, opts Options, client *http.Client) *Session {
	if client == nil {
		client = http.DefaultClient
	}
	if opts.Peer.Transport == "" {
		opts.Peer = PeerInfo{Transport: "http-batch", RemoteAddr: url}
	}
	t := &batchClient{ctx: ctx, url: url, client: client, ready: make(chan struct{}), closed: make(chan struct{})}
	s := newSession(t, opts)
	s.pullEagerly = true
	s.wg.Add(2)
	go s.readLoop()
	go s.writeLoop()
	return s
}

// batchClient is the client transport of an HTTP batch: writes are collected until Flush, then
// sent in one request whose response lines are the messages read.
type batchClient struct {
	ctx    context.Context
	url    string
	client *http.Client

	mu      sync.Mutex
	out     [][]byte
	sent    bool
	ready   chan struct{} // closed when the response (or its error) is in
	in      [][]byte
	inErr   error
	closed  chan struct{}
	closeMu sync.Once
}

func (b *batchClient) WriteMessage(msg []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.sent { // after the request has left nothing more can be transmitted
		b.out = append(b.out, msg)
	}
	return nil
}

// Flush sends the collected messages; it runs once.
func (b *batchClient) Flush() {
	b.mu.Lock()
	if b.sent {
		b.mu.Unlock()
		return
	}
	b.sent = true
	body := bytes.Join(b.out, []byte("\n"))
	b.out = nil
	b.mu.Unlock()
	lines, err := b.post(body)
	b.mu.Lock()
	b.in, b.inErr = lines, err
	b.mu.Unlock()
	close(b.ready)
}

func (b *batchClient) post(body []byte) ([][]byte, error) {
	req, err := http.NewRequestWithContext(b.ctx, http.MethodPost, b.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	resp, err := b.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("RPC request failed: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("RPC request failed: %s", resp.Status)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("RPC request failed: %w", err)
	}
	if len(data) == 0 {
		return nil, nil
	}
	return bytes.Split(data, []byte("\n")), nil
}

func (b *batchClient) ReadMessage() ([]byte, error) {
	select {
	case <-b.ready:
	case <-b.closed:
		return nil, errBatchEnded
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.in) > 0 {
		m := b.in[0]
		b.in = b.in[1:]
		return m, nil
	}
	if b.inErr != nil {
		return nil, b.inErr
	}
	return nil, errBatchEnded
}

func (b *batchClient) Close(error) error {
	b.closeMu.Do(func() { close(b.closed) })
	return nil
}
