package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
)

// replayTransport answers every request with the stream it holds.
type replayTransport []byte

func (s replayTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{
		StatusCode: http.StatusOK,
		Header:     http.Header{"Content-Type": {"text/event-stream"}},
		Body:       io.NopCloser(bytes.NewReader(s)),
		Request:    r,
	}, nil
}

// FuzzStream feeds arbitrary streams to both decoders, seeded with the golden ones: a stream
// ends either in a reply whose tool calls all have a name and a JSON object of arguments, or
// in an *Error; never in a panic or another error, and never past the reply bound.
func FuzzStream(f *testing.F) {
	for _, name := range []string{"openai_text", "openai_tools", "anthropic_text", "anthropic_tools"} {
		b, err := os.ReadFile("testdata/" + name + ".sse")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(name[0] == 'a', b)
	}
	f.Fuzz(func(t *testing.T, anthropic bool, stream []byte) {
		kind := KindOpenAI
		if anthropic {
			kind = KindAnthropic
		}
		c, err := New(Config{Kind: kind, Model: "m", APIKey: "fuzz-key-0123", MaxReply: 1 << 16, HTTP: &http.Client{Transport: replayTransport(stream)}})
		if err != nil {
			t.Fatal(err)
		}
		text := 0
		reply, err := c.Stream(context.Background(), Request{}, func(e Event) error {
			text += len(e.Text)
			return nil
		})
		var pe *Error
		if err != nil && !errors.As(err, &pe) {
			t.Fatalf("error %v is not an *Error", err)
		}
		if len(reply.Text) != text || text > 1<<16 {
			t.Fatalf("reply has %d bytes of text, events %d", len(reply.Text), text)
		}
		if err != nil {
			return
		}
		for _, call := range reply.ToolCalls {
			var args map[string]any
			if call.Name == "" || json.Unmarshal(call.Args, &args) != nil {
				t.Fatalf("tool call %+v passed unchecked", call)
			}
		}
	})
}
