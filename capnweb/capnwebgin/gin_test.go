package capnwebgin_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	"atelier/capnweb"
	"atelier/capnweb/capnwebgin"
)

// greeter is the main object of the test server.
type greeter struct{ capnweb.Target }

// Hello greets.
func (*greeter) Hello(name string) string { return "Hello, " + name + "!" }

func TestGinRoutes(t *testing.T) {
	gin.SetMode(gin.TestMode)
	srv := &capnweb.Server{NewMain: func(*http.Request) (any, error) { return &greeter{}, nil }}
	r := gin.New()
	r.GET("/rpc", capnwebgin.WebSocket(srv))
	r.POST("/rpc", capnwebgin.Batch(srv))
	hs := httptest.NewServer(r)
	defer hs.Close()

	resp, err := http.Post(hs.URL+"/rpc", "text/plain", strings.NewReader(`["push",["pipeline",0,["hello"],["gin"]]]`+"\n"+`["pull",1]`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != `["resolve",1,"Hello, gin!"]` {
		t.Fatalf("batch answered %q", body)
	}

	ctx := context.Background()
	s, err := capnweb.DialWebSocket(ctx, "ws"+strings.TrimPrefix(hs.URL, "http")+"/rpc", capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	v, err := capnweb.AwaitAs[string](ctx, s.Main().Call(ctx, "hello", "ws"))
	if err != nil || v != "Hello, ws!" {
		t.Fatalf("websocket call: %q %v", v, err)
	}
}
