package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"atelier/host/kernel"
)

// closeScript closes a callback page that the workshop opened as a popup.
const closeScript = `if (window.opener) { setTimeout(function () { window.close(); }, 1500); }`

// callbackCSP allows the page nothing but its own inline style and closeScript.
var callbackCSP = func() string {
	h := sha256.Sum256([]byte(closeScript))
	return "default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-" + base64.StdEncoding.EncodeToString(h[:]) + "'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}()

var callbackPage = template.Must(template.New("callback").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{.Title}} · Atelier</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px system-ui,sans-serif;max-width:36rem;margin:4rem auto;padding:0 1rem;color:#222}h1{font-size:1.4rem}</style>
</head><body><h1 id="oauth-result" data-ok="{{.OK}}">{{.Title}}</h1><p>{{.Message}}</p>
<p><a href="/">Return to the workshop</a></p>{{if .OK}}<script>` + closeScript + `</script>{{end}}</body></html>
`))

// serveOAuthCallback completes an OAuth authorization (kernel.CompleteOAuth) and answers
// with a page for the user's browser. Before the state is checked it does only a map lookup
// of the state's hash.
func serveOAuthCallback(k *kernel.Kernel, logger *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		q := c.Request.URL.Query()
		ctx, cancel := context.WithTimeout(c.Request.Context(), 30*time.Second)
		defer cancel()
		info, err := k.CompleteOAuth(ctx, q.Get("state"), q.Get("code"), q.Get("error"))
		w := c.Writer
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", callbackCSP)
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		page := struct {
			OK             bool
			Title, Message string
		}{OK: true, Title: "Account connected", Message: "Your " + info.Name + " account for " + info.Resource + " is connected. You can close this tab and return to the workshop."}
		status := http.StatusOK
		if err != nil {
			var ce *kernel.OAuthCallbackError
			page.OK, page.Title, status = false, "The account was not connected", http.StatusBadRequest
			if errors.As(err, &ce) {
				page.Message = ce.Msg
			} else {
				logger.Warn("oauth callback", "err", err)
				page.Message, status = "The server could not store the account. Try again later, or ask the server's admin to look at its log.", http.StatusInternalServerError
			}
		}
		w.WriteHeader(status)
		_ = callbackPage.Execute(w, page)
	}
}
