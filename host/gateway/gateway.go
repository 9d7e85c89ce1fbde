// Package gateway is Atelier's HTTP edge: it serves the kernel's API over Cap'n Web
// (WebSocket at /api, HTTP batch at /api/batch), Code Mode for agents over MCP at /mcp
// (host/mcp), a health check at /healthz, and metrics in the Prometheus text format at
// /metrics (for the user admin's token, or public with Config.MetricsPublic).
package gateway

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

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
	// TrustedProxy, if its Header is set, takes the client's address of requests from
	// trusted reverse proxies from that header (clientaddr.go).
	TrustedProxy TrustedProxy
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
	sessions := &sessionGauge{}
	rpc := &capnweb.Server{
		NewMain:     func(*http.Request) (any, error) { return kernel.NewPublic(cfg.Kernel), nil },
		Options:     capnweb.Options{Logger: cfg.Logger},
		CheckOrigin: cfg.CheckOrigin,
		OnSession:   sessions.track,
	}
	r := gin.New()
	r.Use(gin.Recovery())
	r.GET("/api", gin.WrapF(rpc.ServeWebSocket))
	r.POST("/api/batch", gin.WrapF(rpc.ServeBatch))
	r.Any("/mcp", gin.WrapH(mcp.New(mcp.Config{Kernel: cfg.Kernel, Logger: cfg.Logger})))
	r.GET("/healthz", func(c *gin.Context) { c.String(http.StatusOK, "ok\n") })
	ui := gin.WrapH(shell.Embedded()) // the browser shell (host/shell): the page and its assets
	r.GET("/", ui)
	r.HEAD("/", ui)
	r.GET("/assets/*file", ui)
	r.GET("/metrics", serveMetrics(cfg.Kernel, cfg.MetricsPublic, sessions))
	return &Gateway{Handler: cfg.Hosts.Wrap(cfg.TrustedProxy.wrap(r)), rpc: rpc}
}

func init() { gin.SetMode(gin.ReleaseMode) }
