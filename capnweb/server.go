package capnweb

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"atelier/internal/membudget"
)

// Server serves Cap'n Web sessions over WebSocket (ServeWebSocket) and HTTP batch (ServeBatch).
// Both are plain net/http handlers; see package capnwebgin for gin.
type Server struct {
	// NewMain returns the main object for a new session (called once per WebSocket connection
	// or batch request). An error refuses the request with 500.
	NewMain func(r *http.Request) (any, error)
	// Options is the template for every session; Main and Peer are filled in per session.
	Options Options
	// CheckOrigin decides whether a request from a browser page of another origin is allowed.
	// Nil allows only requests without an Origin header or from the server's own origin. See
	// AllowOrigins and AllowAnyOrigin.
	CheckOrigin func(r *http.Request) bool
	// BatchTimeout bounds how long a batch request may run (0 means 30s).
	BatchTimeout time.Duration
	// BatchMemory bounds the bytes of batch request bodies, read or being read, and of their
	// answers that the server holds at once (0 means DefaultBatchMemory): past it a request
	// is answered 503 with Retry-After, so that many large or slowly sent bodies, or batches
	// calling methods with large results, cannot exhaust the memory.
	BatchMemory int64
	// MessageMemory bounds the bytes of large incoming WebSocket messages (those past 64 KiB,
	// counted while they arrive) the server's sessions hold at once (0 means
	// DefaultMessageMemory): past it the session receiving one ends, saying so, so that
	// many peers sending large messages slowly cannot exhaust the memory.
	MessageMemory int64
	// BatchMemoryPerAddress and MessageMemoryPerAddress bound the part of BatchMemory and of
	// MessageMemory that the requests of one client network (ClientNetwork of the request's
	// RemoteAddr) hold at once (0 means a quarter of it), so that one client cannot take
	// all of it from the others: past it a batch request is answered 429 with Retry-After and
	// a session receiving a large message ends, saying so.
	BatchMemoryPerAddress, MessageMemoryPerAddress int64
	// OnSession, if set, is called with every WebSocket session when it starts.
	OnSession func(*Session)

	sessions sessions // live WebSocket sessions, for Shutdown

	budgets      sync.Once
	batchBytes   *membudget.Budget // see BatchMemory
	messageBytes *membudget.Budget // see MessageMemory
}

// DefaultBatchMemory and DefaultMessageMemory are Server.BatchMemory and Server.MessageMemory
// when left zero.
const (
	DefaultBatchMemory   = 256 << 20
	DefaultMessageMemory = 512 << 20
)

// budget returns the server's byte budgets, made on first use from its settings.
func (srv *Server) budget() (batch, message *membudget.Budget) {
	srv.budgets.Do(func() {
		srv.batchBytes = membudget.New(cmp.Or(srv.BatchMemory, DefaultBatchMemory), srv.BatchMemoryPerAddress)
		srv.messageBytes = membudget.New(cmp.Or(srv.MessageMemory, DefaultMessageMemory), srv.MessageMemoryPerAddress)
	})
	return srv.batchBytes, srv.messageBytes
}

// AllowAnyOrigin is a CheckOrigin that accepts every origin. Use it only when authentication
// happens in-band (an RPC that returns an authenticated object), never with cookies.
func AllowAnyOrigin(*http.Request) bool { return true }

// AllowOrigins returns a CheckOrigin accepting requests without an Origin header, from the
// server's own origin, and from the listed origins (e.g. "https://app.example.com").
func AllowOrigins(origins ...string) func(*http.Request) bool {
	return func(r *http.Request) bool {
		return sameOrigin(r) || slices.Contains(origins, r.Header.Get("Origin"))
	}
}

// sameOrigin accepts a missing Origin header or one whose host is the request's host.
func sameOrigin(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// sessionOptions checks the origin, creates the main object and returns the session options; it
// answers the request itself when it returns false.
func (srv *Server) sessionOptions(w http.ResponseWriter, r *http.Request, transport string) (Options, bool) {
	if srv.refuseDraining(w) {
		return Options{}, false
	}
	check := srv.CheckOrigin
	if check == nil {
		check = sameOrigin
	}
	if !check(r) {
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return Options{}, false
	}
	opts := srv.Options
	opts.Peer = PeerInfo{Transport: transport, RemoteAddr: r.RemoteAddr, Host: r.Host, Header: r.Header.Clone()}
	opts.Main = nil
	if srv.NewMain != nil {
		m, err := srv.NewMain(r)
		if err != nil {
			http.Error(w, "cannot start session", http.StatusInternalServerError)
			return Options{}, false
		}
		opts.Main = m
	}
	return opts, true
}

// disposeMain disposes a main object whose session never started.
func disposeMain(m any) {
	if d, ok := m.(Disposer); ok {
		d.Dispose()
	}
}
