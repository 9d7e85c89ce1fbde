package gateway

import (
	"errors"
	"log/slog"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// newSessionGauge returns the gauge of the open Cap'n Web WebSocket sessions, registered on
// reg.
func newSessionGauge(reg prometheus.Registerer) prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{Name: "atelier_capnweb_sessions_open", Help: "Cap'n Web WebSocket sessions open now."})
	reg.MustRegister(g)
	return g
}

// trackSessions returns a capnweb.Server OnSession hook that counts each session in g until
// it ends.
func trackSessions(g prometheus.Gauge) func(*capnweb.Session) {
	return func(s *capnweb.Session) {
		g.Inc()
		go func() {
			<-s.Done()
			g.Dec()
		}()
	}
}

// metricsRefusal is the body of a refused GET /metrics.
const metricsRefusal = "metrics: send Authorization: Bearer <token of the user admin> (or start atelier serve with --metrics-public)"

// serveMetrics answers GET /metrics with what reg gathers (the kernel's metrics, the open
// sessions, the Go runtime's and the process's) in the Prometheus exposition format the
// client accepts (the text format by default), to the user admin's bearer token only unless
// public.
func serveMetrics(k *kernel.Kernel, reg prometheus.Gatherer, public bool, logger *slog.Logger) gin.HandlerFunc {
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
		ErrorHandling: promhttp.ContinueOnError, // a failing collector leaves out its series, not the rest
	})
	return func(c *gin.Context) {
		if !public {
			token, ok := strings.CutPrefix(c.GetHeader("Authorization"), "Bearer ")
			if !ok || token == "" {
				refuseMetrics(c, metricsRefusal)
				return
			}
			if err := k.AuthorizeMetrics(c.Request.Context(), token, c.RemoteIP()); err != nil {
				var ke *kernel.Error
				if !errors.As(err, &ke) || ke.Code != kernel.CodeUnauthorized {
					c.String(http.StatusInternalServerError, "metrics: %v\n", err)
					return
				}
				refuseMetrics(c, "metrics: "+ke.Msg)
				return
			}
		}
		c.Header("Cache-Control", "no-store")
		h.ServeHTTP(c.Writer, c.Request)
	}
}

func refuseMetrics(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", `Bearer realm="atelier metrics"`)
	c.String(http.StatusUnauthorized, "%s\n", msg)
}
