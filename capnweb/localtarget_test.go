package capnweb_test

import (
	"context"
	"testing"

	"atelier/capnweb"
)

// token is a capability the server hands out and gets back.
type token struct{ capnweb.Target }

// issuer hands out tokens and tells whether a stub it is given is one of them.
type issuer struct {
	capnweb.Target
	issued *token
}

func (i *issuer) Issue() *token { return i.issued }

func (i *issuer) Check(s *capnweb.Stub) (string, error) {
	target, ok := s.LocalTarget()
	switch {
	case !ok:
		return "not ours", nil
	case target == any(i.issued):
		return "our token", nil
	}
	return "another of ours", nil
}

// TestLocalTarget: a stub the peer passes back to its owner gives the owner its Go target; a
// stub of the peer's own object has none.
func TestLocalTarget(t *testing.T) {
	is := &issuer{issued: &token{}}
	_, main := pair(t, is)
	ctx := context.Background()
	tok := main.Call(ctx, "issue")
	for _, c := range []struct {
		arg  any
		want string
	}{
		{tok, "our token"},                         // pipelined: the promise settles first
		{main, "another of ours"},                  // the server's main object
		{func() string { return "x" }, "not ours"}, // the client's own function
	} {
		got, err := main.Call(ctx, "check", c.arg).Await(ctx)
		if err != nil || got != c.want {
			t.Errorf("check(%T) = %v, %v; want %q", c.arg, got, err, c.want)
		}
	}
}
