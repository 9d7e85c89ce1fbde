// Package modelserver is a scripted model server for tests: an httptest server on loopback
// that speaks the OpenAI Chat Completions and the Anthropic Messages streaming wire formats
// byte for byte (the event shapes of host/agent/provider/testdata, which come from the
// providers' documentation), and answers each request with the next turn of a script.
//
// A turn is a text reply (streamed a word per delta), tool calls (their arguments streamed in
// fragments), a fault (broken SSE, invalid tool JSON, a 5 MB reply, a stall, an HTTP 500, an
// event of unknown shape, a cut-off stream), a reply computed from the request (Func), or text
// the test feeds delta by delta (Stream). The server checks each request as the provider would
// (path, headers, stream options, tool results answering every tool call) and records it
// decoded, so that a test can assert what was sent. A request it finds malformed, or one that
// comes after the script ran out, fails the test and gets an HTTP error.
//
// Example:
//
//	s := modelserver.Start(t, modelserver.Anthropic,
//		modelserver.Tools(modelserver.Call("writeFile",
//			`{"gadget":"todo","file":"server.js","content":"export function add() {}"}`)),
//		modelserver.Func(func(r modelserver.Request) modelserver.Turn {
//			last := r.Messages[len(r.Messages)-1] // the tool's output
//			return modelserver.Text("The draft now has server.js: " + last.Text)
//		}))
//	client, err := provider.New(s.Config())
//	...
//	sent := s.Requests() // sent[1].Messages ends with the writeFile result
//
// For a client that builds its own provider.Config, s.URL() is the base URL and s.Addr() the
// "ip:port" to allow (provider.EgressOptions.AllowAddrs): loopback is otherwise refused.
package modelserver

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"atelier/host/agent/provider"
)

// Wire is a wire format the server speaks.
type Wire string

// The wire formats.
const (
	OpenAI    Wire = provider.KindOpenAI
	Anthropic Wire = provider.KindAnthropic
)

// maxRequest bounds a request body.
const maxRequest = 64 << 20

// Request is a request the server received, decoded. A tool result's ToolName is the name of
// the call it answers; its IsError comes from Anthropic's is_error (Chat Completions has no
// such flag: there it is false and the text is as the client sent it).
type Request struct {
	Model     string
	System    string
	Messages  []provider.Message
	Tools     []provider.Tool
	MaxTokens int
	// APIKey is the key the request carried (Bearer token or x-api-key), "" for none.
	APIKey string
}

// Server is a running scripted model server. Its methods are safe for concurrent use.
type Server struct {
	t       testing.TB
	wire    Wire
	srv     *httptest.Server
	closing chan struct{}

	mu    sync.Mutex
	turns []Turn
	next  int
	reqs  []Request
}

// Start starts a server of wire that answers requests with turns, in order; it stops when the
// test ends.
func Start(t testing.TB, wire Wire, turns ...Turn) *Server {
	t.Helper()
	if wire != OpenAI && wire != Anthropic {
		t.Fatalf("modelserver: unknown wire %q", wire)
	}
	s := &Server{t: t, wire: wire, turns: turns, closing: make(chan struct{})}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(func() {
		close(s.closing)
		s.srv.Close()
	})
	return s
}

// URL is the base URL for provider.Config.BaseURL.
func (s *Server) URL() string {
	if s.wire == OpenAI {
		return s.srv.URL + "/v1"
	}
	return s.srv.URL
}

// Addr is the server's "ip:port" (a loopback address).
func (s *Server) Addr() string {
	return strings.TrimPrefix(s.srv.URL, "http://")
}

// Config returns a provider.Config for the server: its wire and URL, model "scripted", the key
// "test-key" and an egress-checked HTTP client that allows the server's address.
func (s *Server) Config() provider.Config {
	h, err := provider.NewHTTPClient(provider.EgressOptions{AllowAddrs: []string{s.Addr()}})
	if err != nil {
		s.t.Fatalf("modelserver: %v", err)
	}
	return provider.Config{Kind: string(s.wire), BaseURL: s.URL(), Model: "scripted", APIKey: "test-key", HTTP: h}
}

// Push appends turns to the script.
func (s *Server) Push(turns ...Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.turns = append(s.turns, turns...)
}

// Requests returns the requests received so far, oldest first.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// take records req and returns the turn that answers it and the request's number (from 1).
func (s *Server) take(req Request) (Turn, int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	n := len(s.reqs)
	if s.next >= len(s.turns) {
		return Turn{}, n, false
	}
	t := s.turns[s.next]
	if !t.forever {
		s.next++
	}
	return t, n, true
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequest))
	if err != nil {
		s.refuse(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	var req Request
	var problem string
	if s.wire == OpenAI {
		req, problem = decodeOpenAI(r, body)
	} else {
		req, problem = decodeAnthropic(r, body)
	}
	if problem != "" {
		s.refuse(w, http.StatusBadRequest, problem)
		return
	}
	turn, n, ok := s.take(req)
	if !ok {
		s.refuse(w, http.StatusInternalServerError, fmt.Sprintf("request %d came after the script's last turn", n))
		return
	}
	if turn.fn != nil {
		turn = turn.fn(req)
		if turn.fn != nil || turn.forever {
			s.refuse(w, http.StatusInternalServerError, "a Func turn returned a Func or Forever turn")
			return
		}
	}
	if turn.status != 0 {
		s.errorBody(w, turn.status, turn.message)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	out := &sse{w: w, rc: http.NewResponseController(w)}
	input := len(body) / 4
	if turn.usage != nil {
		input = turn.usage[0]
	}
	var sw streamWriter
	if s.wire == OpenAI {
		sw = &openAIStream{sse: out, id: fmt.Sprintf("chatcmpl-%d", n), model: req.Model}
	} else {
		sw = &anthropicStream{sse: out, id: fmt.Sprintf("msg_%d", n), model: req.Model, input: input, open: -1}
	}
	s.play(r, sw, out, turn, n, input)
}

// play writes turn to sw.
func (s *Server) play(r *http.Request, sw streamWriter, out *sse, turn Turn, n, input int) {
	switch turn.fault {
	case FaultStall:
		sw.text("Thinking")
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		return
	case FaultBrokenSSE:
		sw.text("Partial")
		sw.broken()
		return
	case FaultCutOff:
		sw.text("Partial")
		return
	case FaultUnknownShape:
		sw.unknownShape()
		return
	case FaultHuge:
		piece := strings.Repeat("x", 1000)
		for written := 0; written < HugeSize && out.err == nil; written += len(piece) {
			sw.text(piece)
		}
	}
	for _, d := range turn.deltas {
		sw.text(d)
	}
	if turn.stream != nil {
		for done := false; !done; {
			select {
			case d, ok := <-turn.stream:
				if !ok {
					done = true
					break
				}
				sw.text(d)
			case <-r.Context().Done():
				return
			case <-s.closing:
				return
			}
		}
	}
	for i, c := range turn.calls {
		sw.toolStart(i, fmt.Sprintf("%d_%d", n, i), c.Name)
		for _, f := range fragments(c.Args) {
			sw.toolArgs(i, f)
		}
	}
	output := out.events
	if turn.usage != nil {
		output = turn.usage[1]
	}
	sw.end(len(turn.calls) > 0, input, output)
}

// refuse fails the test for a request the script cannot answer, and answers it with status.
func (s *Server) refuse(w http.ResponseWriter, status int, problem string) {
	s.t.Errorf("modelserver: %s", problem)
	s.errorBody(w, status, "modelserver: "+problem)
}

// errorBody writes the provider's error response.
func (s *Server) errorBody(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	if s.wire == OpenAI {
		fmt.Fprintf(w, `{"error":{"message":%s,"type":%s,"param":null,"code":null}}`, jsonString(message), jsonString(openAIErrorType(status)))
		return
	}
	fmt.Fprintf(w, `{"type":"error","error":{"type":%s,"message":%s}}`, jsonString(anthropicErrorType(status)), jsonString(message))
}

func openAIErrorType(status int) string {
	switch {
	case status == 401:
		return "invalid_request_error"
	case status == 429:
		return "rate_limit_exceeded"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func anthropicErrorType(status int) string {
	switch status {
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	if status >= 500 {
		return "api_error"
	}
	return "invalid_request_error"
}

// streamWriter writes one reply in a wire format.
type streamWriter interface {
	text(delta string)
	toolStart(i int, id, name string)
	toolArgs(i int, fragment string)
	// end finishes the reply (for tool calls, or the end of the turn) with this usage.
	end(tools bool, input, output int)
	// broken writes an event whose JSON is cut off.
	broken()
	// unknownShape writes an event of a shape the format does not have.
	unknownShape()
}

// sse writes server-sent events, flushing each; after a failed write it writes nothing.
type sse struct {
	w      io.Writer
	rc     *http.ResponseController
	err    error
	events int
}

func (s *sse) send(event, data string) {
	if event != "" {
		s.raw("event: " + event + "\ndata: " + data + "\n\n")
		return
	}
	s.raw("data: " + data + "\n\n")
}

func (s *sse) raw(text string) {
	if s.err != nil {
		return
	}
	if _, s.err = io.WriteString(s.w, text); s.err == nil {
		s.err = s.rc.Flush()
	}
	s.events++
}

// jsonString returns s as a JSON string, without HTML escaping.
func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		panic("BUG: encoding a string: " + err.Error())
	}
	return strings.TrimSuffix(b.String(), "\n")
}
