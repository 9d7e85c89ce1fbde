package capnweb

import (
	"context"
	"testing"
	"time"

	"atelier/capnweb"
)

// CallTimeout bounds one RPC of Await and Must: a server that stops answering fails the test
// instead of hanging it.
const CallTimeout = 30 * time.Second

// Await waits for p, at most CallTimeout.
func Await(p *capnweb.Promise) (any, error) {
	ctx, cancel := context.WithTimeout(context.Background(), CallTimeout)
	defer cancel()
	return p.Await(ctx)
}

// Must awaits p and fails tb on error; what names the call in the failure.
func Must(tb testing.TB, what string, p *capnweb.Promise) any {
	tb.Helper()
	v, err := Await(p)
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
	return v
}
