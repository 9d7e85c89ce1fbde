package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"strings"
	"testing"
)

// serveBytes starts a loopback server that answers every request with body as an event
// stream, flushing after every chunk bytes, and returns a Config of kind for it.
func serveBytes(t *testing.T, kind string, body []byte, chunk int) Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		rc := http.NewResponseController(w)
		for rest := body; len(rest) > 0; {
			n := min(chunk, len(rest))
			if _, err := w.Write(rest[:n]); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
			rest = rest[n:]
		}
	}))
	t.Cleanup(srv.Close)
	h, err := NewHTTPClient(EgressOptions{AllowAddrs: []string{strings.TrimPrefix(srv.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	base := srv.URL
	if kind == KindOpenAI {
		base += "/v1"
	}
	return Config{Kind: kind, BaseURL: base, Model: "m", APIKey: "k", HTTP: h}
}

// TestGolden parses the providers' documented example streams, whole and fed a byte at a time.
func TestGolden(t *testing.T) {
	args := func(s string) json.RawMessage { return json.RawMessage(s) }
	tests := []struct {
		name, kind, file string
		want             Reply
		events           []Event
	}{
		{
			name: "openai_text", kind: KindOpenAI, file: "openai_text.sse",
			want: Reply{Text: "Hello! How can I assist you today?", Stop: StopEnd, Usage: Usage{InputTokens: 19, OutputTokens: 10}},
		},
		{
			name: "openai_tools", kind: KindOpenAI, file: "openai_tools.sse",
			want: Reply{Stop: StopToolUse, Usage: Usage{InputTokens: 82, OutputTokens: 51}, ToolCalls: []ToolCall{
				{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "get_weather", Args: args(`{"location":"Paris, France"}`)},
				{ID: "call_1kN8GmRhLs2WxSr2QWb1yQpA", Name: "get_weather", Args: args(`{"location":"Bogotá, Colombia"}`)},
			}},
			events: []Event{
				{Kind: EventToolStart, Call: ToolCall{ID: "call_DdmO9pD3xa9XTPNJ32zg2hcA", Name: "get_weather"}},
				{Kind: EventToolStart, Call: ToolCall{ID: "call_1kN8GmRhLs2WxSr2QWb1yQpA", Name: "get_weather"}},
			},
		},
		{
			name: "anthropic_text", kind: KindAnthropic, file: "anthropic_text.sse",
			want:   Reply{Text: "Hello!", Stop: StopEnd, Usage: Usage{InputTokens: 25, OutputTokens: 15}},
			events: []Event{{Kind: EventText, Text: "Hello"}, {Kind: EventText, Text: "!"}},
		},
		{
			name: "anthropic_tools", kind: KindAnthropic, file: "anthropic_tools.sse",
			want: Reply{Text: "Okay, let's check the weather for San Francisco, CA:", Stop: StopToolUse, Usage: Usage{InputTokens: 472, OutputTokens: 89}, ToolCalls: []ToolCall{
				{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Args: args(`{"location": "San Francisco, CA", "unit": "fahrenheit"}`)},
			}},
		},
	}
	for _, tt := range tests {
		body, err := os.ReadFile("testdata/" + tt.file)
		if err != nil {
			t.Fatal(err)
		}
		for _, chunk := range []int{len(body), 1} {
			t.Run(tt.name+"/chunk="+map[bool]string{true: "whole", false: "1"}[chunk == len(body)], func(t *testing.T) {
				c, err := New(serveBytes(t, tt.kind, body, chunk))
				if err != nil {
					t.Fatal(err)
				}
				var events []Event
				var text strings.Builder
				got, err := c.Stream(context.Background(), Request{Messages: []Message{{Role: RoleUser, Text: "hi"}}}, func(e Event) error {
					if e.Kind == EventText {
						text.WriteString(e.Text)
					}
					events = append(events, e)
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Errorf("reply:\n got %+v\nwant %+v", got, tt.want)
				}
				if text.String() != tt.want.Text {
					t.Errorf("text events make %q, want %q", text.String(), tt.want.Text)
				}
				if tt.events != nil {
					if tt.want.Text == "" {
						events = nonText(events)
					}
					if !reflect.DeepEqual(events, tt.events) {
						t.Errorf("events:\n got %+v\nwant %+v", events, tt.events)
					}
				}
			})
		}
	}
}

func nonText(events []Event) []Event {
	var out []Event
	for _, e := range events {
		if e.Kind != EventText {
			out = append(out, e)
		}
	}
	return out
}
