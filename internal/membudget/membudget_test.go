package membudget

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestShares: a budget refuses past its limit in all first, then past a client network's
// share, and takes bytes again once they are released; a nil share takes everything.
func TestShares(t *testing.T) {
	b := New(100, 40)
	a1, a2 := b.Share("192.0.2.1:1"), b.Share("192.0.2.1:2")   // one address, two requests
	c, d := b.Share("[2001:db8::1]:1"), b.Share("2001:db8::2") // one /64
	e := b.Share("198.51.100.7:9")
	steps := []struct {
		s    *Share
		n    int64
		want Refusal
	}{
		{a1, 30, Fits}, {a2, 20, Address}, {a2, 10, Fits}, {c, 40, Fits}, {d, 1, Address},
		{e, 21, Server}, {e, 20, Fits}, {e, 1, Server},
	}
	for i, st := range steps {
		if got := st.s.Reserve(st.n); got != st.want {
			t.Fatalf("step %d: Reserve(%d) = %d, want %d", i, st.n, got, st.want)
		}
	}
	a1.Release(30)
	if got := a2.Reserve(30); got != Fits {
		t.Fatalf("after a release: %d, want Fits", got)
	}
	var none *Share
	if none.Reserve(1<<40) != Fits {
		t.Fatal("a nil share refused")
	}
	// A shared share (a proxy's) is bounded by the limit in all only.
	p := New(100, 10).SharedShare()
	if p.Reserve(60) != Fits || p.Reserve(41) != Server {
		t.Fatal("a shared share: want 60 to fit past the share of 10, and 41 more refused by the limit")
	}
	p.Release(60)
	if p.b.used != 0 || len(p.b.byAddress) != 0 {
		t.Fatalf("after its release the budget holds %d bytes, %d addresses", p.b.used, len(p.b.byAddress))
	}
}

// TestReadAll: a body is reserved as it arrives; one past the share fails with a
// *RefusedError and reports what it held; one past maxBody fails with the reader's error.
func TestReadAll(t *testing.T) {
	b := New(1<<20, 1<<20)
	s := b.Share("192.0.2.1:1")
	body, held, err := ReadAll(strings.NewReader("hello"), 100, s)
	if err != nil || string(body) != "hello" || held != 101 {
		t.Fatalf("small body: %q, held %d, %v", body, held, err)
	}
	s.Release(held)
	_, held, err = ReadAll(strings.NewReader(strings.Repeat("x", 2<<20)), 4<<20, s)
	var refused *RefusedError
	if !errors.As(err, &refused) || refused.Refusal != Server || held == 0 {
		t.Fatalf("a body past the budget: held %d, %v; want a RefusedError", held, err)
	}
	s.Release(held)
	r := http.MaxBytesReader(nil, io.NopCloser(strings.NewReader(strings.Repeat("x", 300))), 200)
	var tooLarge *http.MaxBytesError
	if _, held, err = ReadAll(r, 200, s); !errors.As(err, &tooLarge) {
		t.Fatalf("a body past maxBody: %v, want the reader's error", err)
	}
	s.Release(held)
	if b.used != 0 || len(b.byAddress) != 0 {
		t.Fatalf("after every release the budget holds %d bytes, %d addresses", b.used, len(b.byAddress))
	}
}

func TestClientNetwork(t *testing.T) {
	for in, want := range map[string]string{
		"192.0.2.1:80":           "192.0.2.1/32",
		"192.0.2.1":              "192.0.2.1/32",
		"[::ffff:192.0.2.1]:80":  "192.0.2.1/32",
		"[2001:db8:1:2:3::4]:80": "2001:db8:1:2::/64",
		"2001:db8:1:2:3::4":      "2001:db8:1:2::/64",
		"pipe":                   "invalid Prefix",
	} {
		if got := ClientNetwork(in).String(); got != want {
			t.Errorf("ClientNetwork(%q) = %s, want %s", in, got, want)
		}
	}
}
