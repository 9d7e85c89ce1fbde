package provider

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// oaChunkOf and anEventOf make one event of a stream.
func oaChunkOf(delta, finish string) string {
	return `data: {"choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
}

func anEventOf(typ, body string) string {
	return "event: " + typ + "\ndata: {\"type\":\"" + typ + "\"" + body + "}\n\n"
}

const anStart = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n"

// TestMalformed feeds streams that break each wire format in one place and checks the error
// says which.
func TestMalformed(t *testing.T) {
	tests := []struct {
		name, kind, body string
		want             error
		says             string
	}{
		{"openai/unknown_field", KindOpenAI, "<html>oops</html>\n\n", ErrMalformed, `unknown field "<html>oops</html>"`},
		{"openai/lone_cr", KindOpenAI, "data: [DONE]\rdata: x\n\n", ErrMalformed, "lone carriage return"},
		{"openai/not_json", KindOpenAI, "data: {\"choices\":\n\n", ErrMalformed, "not a JSON object"},
		{"openai/error_chunk", KindOpenAI, oaChunkOf(`{"content":"a"}`, "null") + `data: {"error":{"message":"model overloaded"}}` + "\n\n", ErrRefused, "model overloaded"},
		{"openai/content_filter", KindOpenAI, oaChunkOf(`{}`, `"content_filter"`) + "data: [DONE]\n\n", ErrRefused, "content filter"},
		{"openai/unknown_finish", KindOpenAI, oaChunkOf(`{}`, `"dreaming"`) + "data: [DONE]\n\n", ErrMalformed, `unknown reason "dreaming"`},
		{"openai/no_finish", KindOpenAI, oaChunkOf(`{"content":"a"}`, "null") + "data: [DONE]\n\n", ErrMalformed, "no finish_reason"},
		{"openai/tool_without_name", KindOpenAI, oaChunkOf(`{"tool_calls":[{"index":0,"id":"c","function":{"arguments":"{}"}}]}`, `"tool_calls"`) + "data: [DONE]\n\n", ErrMalformed, "has no tool name"},
		{"openai/args_not_object", KindOpenAI, oaChunkOf(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"[1]"}}]}`, `"tool_calls"`) + "data: [DONE]\n\n", ErrMalformed, "not a JSON object: [1]"},
		{"anthropic/not_started", KindAnthropic, anEventOf("message_stop", ""), ErrMalformed, `began with "message_stop"`},
		{"anthropic/name_mismatch", KindAnthropic, "event: ping\ndata: {\"type\":\"message_stop\"}\n\n", ErrMalformed, `named "ping" has type "message_stop"`},
		{"anthropic/delta_unopened", KindAnthropic, anStart + anEventOf("content_block_delta", `,"index":2,"delta":{"type":"text_delta","text":"x"}`), ErrMalformed, "content block 2, which is not open"},
		{"anthropic/wrong_delta", KindAnthropic, anStart + anEventOf("content_block_start", `,"index":0,"content_block":{"type":"text","text":""}`) + anEventOf("content_block_delta", `,"index":0,"delta":{"type":"input_json_delta","partial_json":"{"}`), ErrMalformed, `"input_json_delta" delta for a text block`},
		{"anthropic/started_twice", KindAnthropic, anStart + strings.Repeat(anEventOf("content_block_start", `,"index":0,"content_block":{"type":"text","text":""}`), 2), ErrMalformed, "started twice"},
		{"anthropic/stop_unopened", KindAnthropic, anStart + anEventOf("content_block_stop", `,"index":0`), ErrMalformed, "not open"},
		{"anthropic/error_event", KindAnthropic, anStart + anEventOf("error", `,"error":{"type":"overloaded_error","message":"Overloaded"}`), ErrRefused, "overloaded_error: Overloaded"},
		{"anthropic/refusal", KindAnthropic, anStart + anEventOf("message_delta", `,"delta":{"stop_reason":"refusal"}`) + anEventOf("message_stop", ""), ErrRefused, "refused"},
		{"anthropic/unknown_stop", KindAnthropic, anStart + anEventOf("message_delta", `,"delta":{"stop_reason":"nap"}`) + anEventOf("message_stop", ""), ErrMalformed, `unknown reason "nap"`},
		{"anthropic/no_stop", KindAnthropic, anStart + anEventOf("message_stop", ""), ErrMalformed, "no stop_reason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(serveBytes(t, tt.kind, []byte(tt.body), len(tt.body)))
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Stream(context.Background(), Request{}, func(Event) error { return nil })
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.says) || !strings.HasPrefix(err.Error(), tt.kind+": ") {
				t.Errorf("error %v, want %v saying %q", err, tt.want, tt.says)
			}
		})
	}
}

// TestUnknownEventSkipped checks that an Anthropic event type the API may add later is
// skipped, as its versioning policy asks.
func TestUnknownEventSkipped(t *testing.T) {
	body := anStart + anEventOf("future_event", `,"x":1`) + anEventOf("message_delta", `,"delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":2}`) + anEventOf("message_stop", "")
	c, err := New(serveBytes(t, KindAnthropic, []byte(body), len(body)))
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Stream(context.Background(), Request{}, func(Event) error { return nil })
	if err != nil || r.Stop != StopEnd || r.Usage != (Usage{InputTokens: 3, OutputTokens: 2}) {
		t.Errorf("reply %+v, error %v", r, err)
	}
}

// TestMaxReplyBoundary checks that a reply of exactly MaxReply bytes is read and one byte more
// is refused.
func TestMaxReplyBoundary(t *testing.T) {
	body := oaChunkOf(`{"content":"`+strings.Repeat("a", 1000)+`"}`, `"stop"`) + "data: [DONE]\n\n"
	for _, tc := range []struct {
		max  int64
		want error
	}{{int64(len(body)), nil}, {int64(len(body) - 1), ErrTooLarge}} {
		cfg := serveBytes(t, KindOpenAI, []byte(body), 7)
		cfg.MaxReply = tc.max
		c, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.Stream(context.Background(), Request{}, func(Event) error { return nil })
		if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
			t.Errorf("MaxReply %d for a %d-byte reply: error %v, want %v", tc.max, len(body), err, tc.want)
		}
	}
}

// TestNotAStream checks that a 200 answer that is not an event stream is refused.
func TestNotAStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<html>login</html>"))
	}))
	defer srv.Close()
	h, err := NewHTTPClient(EgressOptions{AllowAddrs: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Kind: KindOpenAI, BaseURL: srv.URL, Model: "m", HTTP: h})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Stream(context.Background(), Request{}, func(Event) error { return nil })
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), `Content-Type "text/html"`) {
		t.Errorf("error %v", err)
	}
}

// TestConfig checks New's validation, which names every problem at once.
func TestConfig(t *testing.T) {
	_, err := New(Config{Kind: "gemini", BaseURL: "ftp://x", MaxReply: -1})
	for _, want := range []string{`kind "gemini"`, "base URL", "model name is missing", "must not be negative"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	if _, err := New(Config{Kind: KindOpenAI, BaseURL: "https://user:pw@api.example.com/v1", Model: "m"}); err == nil {
		t.Error("a base URL with user info was accepted")
	}
	for _, tc := range []struct{ kind, base, want string }{
		{KindOpenAI, "", "https://api.openai.com/v1/chat/completions"},
		{KindOpenAI, "http://127.0.0.1:11434/v1/", "http://127.0.0.1:11434/v1/chat/completions"},
		{KindAnthropic, "", "https://api.anthropic.com/v1/messages"},
		{KindAnthropic, "https://api.anthropic.com/v1", "https://api.anthropic.com/v1/messages"},
	} {
		c, err := New(Config{Kind: tc.kind, BaseURL: tc.base, Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.(*client).endpoint; got != tc.want {
			t.Errorf("%s %q: endpoint %q, want %q", tc.kind, tc.base, got, tc.want)
		}
	}
}
