// Package capnwebgin serves Cap'n Web sessions from a gin router. It only adapts
// capnweb.Server's net/http handlers, so the core package does not depend on gin.
//
//	srv := &capnweb.Server{NewMain: newAPI}
//	r.GET("/rpc", capnwebgin.WebSocket(srv))
//	r.POST("/rpc", capnwebgin.Batch(srv))
package capnwebgin

import (
	"github.com/gin-gonic/gin"

	"atelier/capnweb"
)

// WebSocket returns a gin handler that upgrades the request and runs a session until it ends.
func WebSocket(srv *capnweb.Server) gin.HandlerFunc {
	return func(c *gin.Context) { srv.ServeWebSocket(c.Writer, c.Request) }
}

// Batch returns a gin handler that answers one HTTP batch request.
func Batch(srv *capnweb.Server) gin.HandlerFunc {
	return func(c *gin.Context) { srv.ServeBatch(c.Writer, c.Request) }
}
