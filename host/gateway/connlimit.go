package gateway

import (
	"net"
	"net/http"
	"net/netip"
	"sync"
	"syscall"

	"github.com/prometheus/client_golang/prometheus"

	"atelier/internal/membudget"
)

// DefaultMaxConnectionsPerAddress is ConnLimitsConfig.PerAddress when left zero: far more
// than a browser (6 per host) or a CLI opens, far fewer than the server's file descriptors.
const DefaultMaxConnectionsPerAddress = 1000

// ConnLimitsConfig bounds the HTTP connections the server keeps open.
type ConnLimitsConfig struct {
	// PerAddress bounds one client address's open connections (an IPv6 address by its /64;
	// 0: DefaultMaxConnectionsPerAddress). The trusted proxies of TrustedProxy, when it has a
	// Header, are not bounded: every client behind them shares their address.
	PerAddress int
	// Total bounds all open connections (0: the process's file descriptor limit less 1,024
	// kept for its own files and outbound connections, at least 256).
	Total int
	// TrustedProxy is the gateway's (Config.TrustedProxy).
	TrustedProxy TrustedProxy
	// Metrics receives atelier_http_connections_refused_total (nil: none).
	Metrics prometheus.Registerer
}

// ConnLimits bounds the HTTP connections open at once per client address and in all, so that
// a stranger cannot take the server's file descriptors (and with them its ability to accept
// anyone or open a file) with connections that wait for their headers, idle between requests
// or trickle a body. Set its ConnState as the http.Server's ConnState: a connection past a
// bound is closed as soon as it is accepted. A connection upgraded to a WebSocket leaves the
// count; the gateway's session limits (Config.MaxSessionsPerAddress) bound those.
type ConnLimits struct {
	places  *membudget.Budget // one place per open connection
	trusted TrustedProxy
	refused *prometheus.CounterVec

	mu   sync.Mutex
	open map[net.Conn]*membudget.Share // the connections counted, by the share holding their place
}

// NewConnLimits returns the limits of cfg.
func NewConnLimits(cfg ConnLimitsConfig) *ConnLimits {
	perAddress, total := cfg.PerAddress, cfg.Total
	if perAddress <= 0 {
		perAddress = DefaultMaxConnectionsPerAddress
	}
	if total <= 0 {
		total = defaultTotalConnections()
	}
	l := &ConnLimits{places: membudget.New(int64(total), int64(perAddress)), trusted: cfg.TrustedProxy, open: map[net.Conn]*membudget.Share{}}
	if l.trusted.Header != "" && l.trusted.Proxies == nil {
		l.trusted.Proxies = loopback
	}
	l.refused = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "atelier_http_connections_refused_total",
		Help: "HTTP connections closed on arrival for the open-connection limits, by limit (address, server)."}, []string{"limit"})
	if cfg.Metrics != nil {
		cfg.Metrics.MustRegister(l.refused)
	}
	return l
}

// defaultTotalConnections is ConnLimitsConfig.Total when left zero.
func defaultTotalConnections() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur > 1<<20 {
		return 1 << 16
	}
	return max(int(lim.Cur)-1024, 256)
}

// ConnState counts connections as the http.Server reports them: a new one past a bound is
// closed, a closed or hijacked one gives its place back.
func (l *ConnLimits) ConnState(c net.Conn, state http.ConnState) {
	switch state {
	case http.StateNew:
		if limit := l.admit(c); limit != "" {
			l.refused.WithLabelValues(limit).Inc()
			_ = c.Close()
		}
	case http.StateHijacked, http.StateClosed:
		l.mu.Lock()
		share, ok := l.open[c]
		delete(l.open, c)
		l.mu.Unlock()
		if ok {
			share.Release(1)
		}
	}
}

// admit takes c's place, or returns the limit it is past ("address" or "server").
func (l *ConnLimits) admit(c net.Conn) (limit string) {
	share := l.places.Share(c.RemoteAddr().String())
	if l.trusted.Header != "" {
		if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil && l.trusted.trusts(ap.Addr()) {
			share = l.places.SharedShare()
		}
	}
	switch share.Reserve(1) {
	case membudget.Server:
		return "server"
	case membudget.Address:
		return "address"
	}
	l.mu.Lock()
	l.open[c] = share
	l.mu.Unlock()
	return ""
}
