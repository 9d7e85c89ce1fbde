package capnweb_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"

	"atelier/capnweb"
)

// streamer is a target that consumes and produces streams.
type streamer struct{ capnweb.Target }

// Upload reads a stream to its end.
func (*streamer) Upload(ctx context.Context, r *capnweb.ReadableStream) ([]any, error) {
	return r.ReadAll(ctx)
}

// Feed writes two chunks into the caller's sink and closes it.
func (*streamer) Feed(ctx context.Context, w *capnweb.WritableStream) (string, error) {
	for _, c := range []string{"a", "b"} {
		if err := w.Write(ctx, c); err != nil {
			return "", err
		}
	}
	return "fed", w.Close(ctx)
}

// collector is a StreamSink recording what it receives.
type collector struct {
	mu     sync.Mutex
	chunks []any
	closed bool
}

func (c *collector) Write(_ context.Context, chunk any) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.chunks = append(c.chunks, chunk)
	return nil
}

func (c *collector) Close(context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	return nil
}

func (c *collector) Abort(context.Context, any) error { return nil }

func TestStreams(t *testing.T) {
	server, main := pair(t, &streamer{})
	ctx := context.Background()

	chunks := make([]any, 300) // more than the sender's window
	for i := range chunks {
		chunks[i] = float64(i)
	}
	v, err := capnweb.AwaitAs[[]float64](ctx, main.Call(ctx, "upload", capnweb.StreamOf(chunks...)))
	if err != nil || len(v) != len(chunks) || v[299] != 299 {
		t.Fatalf("upload: %v %v", len(v), err)
	}

	boom := errors.New("source failed")
	failing := capnweb.NewReadableStream(func(context.Context) (any, error) { return nil, boom })
	if _, err := main.Call(ctx, "upload", failing).Await(ctx); err == nil || err.Error() != "Error: source failed" {
		t.Fatalf("aborted upload: %v", err)
	}

	sink := &collector{}
	if v, err := main.Call(ctx, "feed", capnweb.NewWritableStream(sink)).Await(ctx); err != nil || v != "fed" {
		t.Fatalf("feed: %v %v", v, err)
	}
	sink.mu.Lock()
	if len(sink.chunks) != 2 || sink.chunks[1] != "b" || !sink.closed {
		t.Errorf("sink got %v closed=%v", sink.chunks, sink.closed)
	}
	sink.mu.Unlock()

	st := capnweb.StreamOf(1)
	if _, err := main.Call(ctx, "upload", st).Await(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := main.Call(ctx, "upload", st).Await(ctx); err == nil {
		t.Error("a stream was sent twice")
	}
	if _, err := st.Read(ctx); !errors.Is(err, io.EOF) {
		t.Errorf("read after end: %v", err)
	}
	waitFor(t, func() bool {
		s := server.Stats()
		return s.Exports == 1 && s.Imports == 0 && s.PendingCalls == 0
	}, func() string { return "server tables not back to main" })
}
