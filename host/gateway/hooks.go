package gateway

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"atelier/host/kernel"
)

// hookBodyTimeout bounds how long a webhook request may take to send its body (a service
// sends at most kernel.MaxHookBody at once); past it the request is answered 408.
const hookBodyTimeout = 10 * time.Second

// serveHook answers POST /hooks/<id>, an inbound webhook request for a hook
// (kernel.DeliverHook): JSON {"ok": true} when the gadget's method ran (or the gatekeeper
// dropped the event), else {"ok": false, "error": "..."} with the status that says why, and
// Retry-After on a 429.
func serveHook(k *kernel.Kernel) gin.HandlerFunc {
	return func(c *gin.Context) {
		r := c.Request
		// The body must arrive in time: a delivery holds one of the server's few places for
		// deliveries while it reads it.
		_ = http.NewResponseController(c.Writer).SetReadDeadline(time.Now().Add(hookBodyTimeout))
		body := http.MaxBytesReader(c.Writer, r.Body, kernel.MaxHookBody+1)
		from := r.RemoteAddr // the client's, behind a trusted proxy (TrustedProxy.wrap)
		if host, _, err := net.SplitHostPort(from); err == nil {
			from = host
		}
		d := k.DeliverHook(r.Context(), c.Param("id"), from, r.Header, body)
		w := c.Writer
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		if d.Status == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int((d.RetryAfter+999_999_999)/1_000_000_000))))
		}
		if d.Status == http.StatusUnauthorized {
			w.Header().Set("WWW-Authenticate", `Signature realm="atelier-hooks"`)
		}
		if d.Status != http.StatusOK {
			// A refusal may leave the body unread: closing the connection keeps the server
			// from reading the rest before it answers (net/http would, to keep it alive).
			w.Header().Set("Connection", "close")
		}
		out := map[string]any{"ok": d.Status == http.StatusOK}
		if d.Status != http.StatusOK {
			out["error"] = d.Message
		} else if d.Message == "dropped" {
			out["dropped"] = true
		}
		w.WriteHeader(d.Status)
		_ = json.NewEncoder(w).Encode(out)
	}
}
