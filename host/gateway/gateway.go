// Package gateway is Atelier's HTTP edge: it serves the kernel's API over Cap'n Web
// (WebSocket at /api, HTTP batch at /api/batch), Code Mode for agents over MCP at /mcp
// (host/mcp), the OAuth callback at /oauth/callback (gatekeeper accounts), inbound webhooks of
// hooks at POST /hooks/<id>, a health check at /healthz, and Prometheus metrics at /metrics (for the user
// admin's token, or public with Config.MetricsPublic).
package gateway

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/host/mcp"
	"atelier/host/shell"
)

// Config configures the gateway.
type Config struct {
	// Kernel serves the API; every session's main object is kernel.NewPublic(Kernel).
	Kernel *kernel.Kernel
	// Logger receives handler panics and session errors; nil uses slog.Default().
	Logger *slog.Logger
	// Hosts are the names the gateway answers to (see Hosts); nil is LoopbackHosts().
	Hosts *Hosts
	// CheckOrigin decides whether a browser page may open a session; nil is Hosts.CheckOrigin
	// (pages served from a host on the list, and non-browser clients).
	CheckOrigin func(*http.Request) bool
	// MetricsPublic serves GET /metrics to anyone; otherwise only to a request bearing the
	// token of the user admin (kernel.AuthorizeMetrics).
	MetricsPublic bool
	// Metrics is the registry served at /metrics, on which the gateway registers the gauge of
	// open Cap'n Web sessions (one gateway per registry); nil is Kernel.Metrics(), where the
	// kernel's metrics are.
	Metrics *prometheus.Registry
	// TrustedProxy, if its Header is set, takes the client's address of requests from
	// trusted reverse proxies from that header (clientaddr.go).
	TrustedProxy TrustedProxy
	// MaxSessionsPerAddress bounds the Cap'n Web WebSocket sessions open at once from one
	// client address (an IPv6 address by its /64); 0 is DefaultMaxSessionsPerAddress.
	MaxSessionsPerAddress int
	// MaxSessions bounds the WebSocket sessions open at once in all; 0 is DefaultMaxSessions.
	MaxSessions int
}

// Gateway is the gateway's HTTP handler.
type Gateway struct {
	http.Handler
	rpc *capnweb.Server
}

// Shutdown drains the Cap'n Web sessions (capnweb.Server.Shutdown): new sessions are refused,
// calls in progress finish and their replies are sent, then each session closes with the
// reason "the server is shutting down". Use it alongside http.Server.Shutdown, which does not
// wait for WebSocket sessions; it returns ctx's error when ctx ends first.
func (g *Gateway) Shutdown(ctx context.Context) error { return g.rpc.Shutdown(ctx) }

// New returns the gateway's HTTP handler.
func New(cfg Config) *Gateway {
	if cfg.Hosts == nil {
		cfg.Hosts = LoopbackHosts()
	}
	if cfg.CheckOrigin == nil {
		cfg.CheckOrigin = cfg.Hosts.CheckOrigin
	}
	if cfg.Metrics == nil {
		cfg.Metrics = cfg.Kernel.Metrics()
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	sessions := newSessionGauge(cfg.Metrics)
	rpc := &capnweb.Server{
		NewMain:     func(*http.Request) (any, error) { return kernel.NewPublic(cfg.Kernel), nil },
		Options:     capnweb.Options{Logger: cfg.Logger},
		CheckOrigin: cfg.CheckOrigin,
		OnSession:   trackSessions(sessions),
	}
	r := gin.New()
	r.Use(gin.Recovery())
	limits := newSessionLimits(cfg.MaxSessionsPerAddress, cfg.MaxSessions, cfg.Metrics)
	get(r, "/api", gin.WrapF(limits.wrap(rpc.ServeWebSocket)))
	r.POST("/api/batch", gin.WrapF(rpc.ServeBatch))
	r.Any("/mcp", gin.WrapH(mcp.New(mcp.Config{Kernel: cfg.Kernel, Logger: cfg.Logger})))
	get(r, "/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	ui := gin.WrapH(shell.Embedded()) // the browser shell (host/shell): the page and its assets
	get(r, "/", ui)
	get(r, "/assets/*file", ui)
	r.GET(kernel.OAuthCallbackPath, serveOAuthCallback(cfg.Kernel, logger)) // not HEAD: it uses up the state
	r.POST(kernel.HookPath+":id", serveHook(cfg.Kernel))                    // inbound webhooks of hooks
	get(r, "/metrics", serveMetrics(cfg.Kernel, cfg.Metrics, cfg.MetricsPublic, logger))
	return &Gateway{Handler: cfg.Hosts.Wrap(cfg.TrustedProxy.wrap(challenge(r))), rpc: rpc}
}

// get routes GET and HEAD of path to h: HEAD answers like GET, without the body.
func get(r *gin.Engine, path string, h gin.HandlerFunc) {
	r.GET(path, h)
	r.HEAD(path, h)
}

// challenge gives every 401 answer of next a WWW-Authenticate header (RFC 9110 section
// 11.6.1; the MCP authorization spec expects it of /mcp too): "Bearer" unless next set one.
func challenge(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&challenger{ResponseWriter: w}, r)
	})
}

// challenger is a ResponseWriter that adds the WWW-Authenticate header to a 401.
type challenger struct {
	http.ResponseWriter
	wrote bool
}

// WriteHeader adds the header to a 401 that lacks one, then writes the status.
func (c *challenger) WriteHeader(code int) {
	if !c.wrote && code == http.StatusUnauthorized && c.Header().Get("WWW-Authenticate") == "" {
		c.Header().Set("WWW-Authenticate", `Bearer realm="atelier"`)
	}
	if code >= 200 {
		c.wrote = true
	}
	c.ResponseWriter.WriteHeader(code)
}

// Write writes body bytes (status 200 unless WriteHeader came first).
func (c *challenger) Write(b []byte) (int, error) {
	c.wrote = true
	return c.ResponseWriter.Write(b)
}

// Unwrap returns the underlying writer, for http.ResponseController (flushes, hijacks).
func (c *challenger) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// Flush sends what is buffered, for handlers that check for http.Flusher.
func (c *challenger) Flush() { _ = http.NewResponseController(c.ResponseWriter).Flush() }

// Hijack takes over the connection, for WebSocket upgrades that check for http.Hijacker.
func (c *challenger) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(c.ResponseWriter).Hijack()
}

func init() { gin.SetMode(gin.ReleaseMode) }
