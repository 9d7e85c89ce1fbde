// Command conformance serves the Cap'n Web conformance API (package api) over WebSocket at /ws
// and HTTP batch at /batch, for interop tests with the official JavaScript implementation.
//
//	go run ./tests/capnweb/conformance --addr 127.0.0.1:0
//
// The first stdout line is exactly "listening on http://HOST:PORT"; it then serves until killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"atelier/capnweb"
	"atelier/tests/capnweb/conformance/api"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	flag.Parse()
	srv := &capnweb.Server{
		NewMain:     func(*http.Request) (any, error) { return &api.API{}, nil },
		CheckOrigin: capnweb.AllowAnyOrigin,
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/ws", srv.ServeWebSocket)
	mux.HandleFunc("/batch", srv.ServeBatch)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("listen %s: %v", *addr, err)
	}
	fmt.Fprintf(os.Stdout, "listening on http://%s\n", ln.Addr())
	log.Fatal(http.Serve(ln, mux))
}
