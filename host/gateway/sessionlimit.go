package gateway

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"sync"

	"atelier/internal/membudget"

	"github.com/prometheus/client_golang/prometheus"
)

// Default bounds of the open Cap'n Web WebSocket sessions (Config.MaxSessionsPerAddress,
// Config.MaxSessions). A session that waits for its peer costs the server about 40 KiB
// (its goroutines, buffers and tables; 2,000 idle sessions added 80 MiB of RSS to atelier
// serve), whether or not it ever signs in.
const (
	DefaultMaxSessionsPerAddress = 500
	DefaultMaxSessions           = 20000
)

// sessionLimits bounds the open WebSocket sessions per client address and in all, so that a
// stranger cannot hold the server's memory with connections that never sign in. Addresses
// count by network (membudget.ClientNetwork).
type sessionLimits struct {
	perAddress, total int
	refused           *prometheus.CounterVec

	mu   sync.Mutex
	open map[netip.Prefix]int
	all  int
}

// newSessionLimits returns the limits, registering the counter of refused sessions on reg.
func newSessionLimits(perAddress, total int, reg prometheus.Registerer) *sessionLimits {
	if perAddress <= 0 {
		perAddress = DefaultMaxSessionsPerAddress
	}
	if total <= 0 {
		total = DefaultMaxSessions
	}
	refused := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "atelier_capnweb_sessions_refused_total",
		Help: "Cap'n Web WebSocket sessions refused for the open-session limits, by limit (address, server)."}, []string{"limit"})
	reg.MustRegister(refused)
	return &sessionLimits{perAddress: perAddress, total: total, refused: refused, open: map[netip.Prefix]int{}}
}

// acquire counts a session of the client at remoteAddr, or returns why it is refused.
func (l *sessionLimits) acquire(remoteAddr string) (release func(), status int, refusal string) {
	key := membudget.ClientNetwork(remoteAddr)
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.open[key] >= l.perAddress:
		l.refused.WithLabelValues("address").Inc()
		return nil, http.StatusTooManyRequests, fmt.Sprintf("too many Cap'n Web sessions from your address (%d open): close some, or ask the server's operator to raise --max-sessions-per-address", l.perAddress)
	case l.all >= l.total:
		l.refused.WithLabelValues("server").Inc()
		return nil, http.StatusServiceUnavailable, fmt.Sprintf("the server has its most Cap'n Web sessions open (%d): try again later, or ask its operator to raise --max-sessions", l.total)
	}
	l.open[key]++
	l.all++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.open[key]--; l.open[key] == 0 {
			delete(l.open, key)
		}
		l.all--
	}, 0, ""
}

// wrap returns serve (a WebSocket session handler, which returns when the session ends)
// counted against the limits: a refused request is answered with its status, a line saying
// why, and Retry-After, before any upgrade.
func (l *sessionLimits) wrap(serve http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		release, status, refusal := l.acquire(r.RemoteAddr)
		if release == nil {
			w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
			http.Error(w, refusal, status)
			return
		}
		defer release()
		serve(w, r)
	}
}

// retryAfterSeconds is the Retry-After of a refused session.
const retryAfterSeconds = 10
