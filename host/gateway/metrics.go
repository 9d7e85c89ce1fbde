package gateway

import (
	"errors"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/gin-gonic/gin"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/host/metrics"
)

// sessionGauge counts the open Cap'n Web WebSocket sessions.
type sessionGauge struct{ open atomic.Int64 }

// track is a capnweb.Server OnSession hook: it counts s until it ends.
func (g *sessionGauge) track(s *capnweb.Session) {
	g.open.Add(1)
	go func() {
		<-s.Done()
		g.open.Add(-1)
	}()
}

// metricsRefusal is the body of a refused GET /metrics.
const metricsRefusal = "metrics: send Authorization: Bearer <token of the user admin> (or start atelier serve with --metrics-public)"

// serveMetrics answers GET /metrics with the kernel's metrics and the open sessions in the
// Prometheus text format, to the user admin's bearer token only unless public.
func serveMetrics(k *kernel.Kernel, public bool, sessions *sessionGauge) gin.HandlerFunc {
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
		c.Header("Content-Type", metrics.ContentType)
		c.Header("Cache-Control", "no-store")
		c.Status(http.StatusOK)
		t := metrics.NewTextWriter(c.Writer)
		k.WriteMetrics(t)
		t.Family("atelier_capnweb_sessions_open", metrics.Gauge, "Cap'n Web WebSocket sessions open now.")
		t.Sample("atelier_capnweb_sessions_open", nil, float64(sessions.open.Load()))
		_ = t.Flush() // the client went away: nothing to tell it
	}
}

func refuseMetrics(c *gin.Context, msg string) {
	c.Header("WWW-Authenticate", `Bearer realm="atelier metrics"`)
	c.String(http.StatusUnauthorized, "%s\n", msg)
}
