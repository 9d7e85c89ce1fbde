package capnweb

import (
	"context"
	"strings"
	"testing"
	"time"
)

// keyOrderWant is what node/keyorder.mjs prints when the server keeps key order, as the
// official Node server does.
const keyOrderWant = `{"echo":{"b":1,"a":2},` +
	`"nested":{"z":{"y":[{"d":1,"c":[{"f":0,"e":0}]}],"x":null},"a":[]},` +
	`"repeated":{"b":3,"a":2},` +
	`"mapped":[{"id":1,"hi":"alice"},{"id":2,"hi":"bob"},{"id":3,"hi":"carol"}]}`

// TestKeyOrderGoServer: with the official client, objects come back from the Go server with
// their keys in the order the client wrote them (echo, nested values, map() results).
func TestKeyOrderGoServer(t *testing.T) {
	root, nodeDir := requireNode(t)
	bin, err := BuildGoServer(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartGoServer(bin)
	if err != nil {
		t.Fatal(err)
	}
	checkKeyOrder(t, srv, nodeDir)
}

// TestKeyOrderNodeServer is the control run against the official Node server.
func TestKeyOrderNodeServer(t *testing.T) {
	_, nodeDir := requireNode(t)
	srv, err := StartNodeServer(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	checkKeyOrder(t, srv, nodeDir)
}

func checkKeyOrder(t *testing.T, srv *Server, nodeDir string) {
	t.Helper()
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := RunNode(ctx, nodeDir, "keyorder.mjs", "--url", srv.URL)
	if err != nil {
		t.Fatalf("%v\nserver output:\n%s", err, srv.Output())
	}
	if got := strings.TrimSpace(string(out)); got != keyOrderWant {
		t.Errorf("got  %s\nwant %s", got, keyOrderWant)
	}
}
