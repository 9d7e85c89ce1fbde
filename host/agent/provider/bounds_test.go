package provider

import (
	"compress/gzip"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// hostile starts a loopback model server that answers with handler and returns a client of it.
func hostile(t *testing.T, handler http.HandlerFunc) Client {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	h, err := NewHTTPClient(EgressOptions{AllowAddrs: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Kind: KindOpenAI, BaseURL: srv.URL, Model: "m", HTTP: h})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGzipBomb checks that a compressed reply is bounded by its decoded size: 64 MB of deltas
// that compress to a few hundred KB end at the reply bound.
func TestGzipBomb(t *testing.T) {
	c := hostile(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Content-Encoding", "gzip")
		z := gzip.NewWriter(w)
		chunk := []byte(strings.Repeat(oaChunkOf(`{"content":"`+strings.Repeat("a", 4000)+`"}`, "null"), 16))
		for sent := 0; sent < 64<<20; sent += len(chunk) {
			if _, err := z.Write(chunk); err != nil {
				return
			}
		}
		z.Close()
	})
	reply, err := c.Stream(context.Background(), Request{}, func(Event) error { return nil })
	if !errors.Is(err, ErrTooLarge) || len(reply.Text) > DefaultMaxReply {
		t.Errorf("error %v after %d bytes of text, want ErrTooLarge within the bound", err, len(reply.Text))
	}
}

// TestHugeHeaders checks that a response head over 64 KiB is refused.
func TestHugeHeaders(t *testing.T) {
	c := hostile(t, func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i < 100; i++ {
			w.Header().Add("X-Filler", strings.Repeat("h", 1000))
		}
		w.Header().Set("Content-Type", "text/event-stream")
	})
	_, err := c.Stream(context.Background(), Request{}, func(Event) error { return nil })
	if !errors.Is(err, ErrTransport) || !strings.Contains(err.Error(), "header") {
		t.Errorf("error %v, want a refused response head", err)
	}
}

// TestHugeErrorBody checks that an error response is read only up to its bound and quoted
// shortly.
func TestHugeErrorBody(t *testing.T) {
	c := hostile(t, func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		for i := 0; i < 1000; i++ {
			if _, err := w.Write([]byte(strings.Repeat("e", 10000))); err != nil {
				return
			}
		}
	})
	_, err := c.Stream(context.Background(), Request{}, func(Event) error { return nil })
	if !errors.Is(err, ErrStatus) || len(err.Error()) > 500 || !strings.Contains(err.Error(), "HTTP 502") {
		t.Errorf("error of %d bytes: %.200v", len(err.Error()), err)
	}
}
