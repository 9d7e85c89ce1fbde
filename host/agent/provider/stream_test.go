package provider_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/host/agent/provider"
	"atelier/tests/modelserver"
)

var wires = []modelserver.Wire{modelserver.OpenAI, modelserver.Anthropic}

// stream sends req to the server's client and returns the reply, the text the events carried
// and the error.
func stream(t *testing.T, cfg provider.Config, req provider.Request) (provider.Reply, string, error) {
	t.Helper()
	c, err := provider.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var text strings.Builder
	reply, err := c.Stream(ctx, req, func(e provider.Event) error {
		if e.Kind == provider.EventText {
			text.WriteString(e.Text)
		}
		return nil
	})
	return reply, text.String(), err
}

var hello = provider.Request{Messages: []provider.Message{{Role: provider.RoleUser, Text: "hello"}}}

// TestTextAndRequest checks a streamed text reply and that the server received the system
// prompt, messages, tools, key and token bound the client sent.
func TestTextAndRequest(t *testing.T) {
	for _, w := range wires {
		t.Run(string(w), func(t *testing.T) {
			s := modelserver.Start(t, w, modelserver.Text("Hi there, what shall we build?"))
			tools := []provider.Tool{{Name: "readFile", Description: "Reads a file.", Schema: json.RawMessage(`{"type":"object","properties":{"file":{"type":"string"}}}`)}}
			req := provider.Request{System: "You are the workspace's agent.", Messages: hello.Messages, Tools: tools, MaxTokens: 512}
			reply, text, err := stream(t, s.Config(), req)
			if err != nil {
				t.Fatal(err)
			}
			if reply.Text != "Hi there, what shall we build?" || text != reply.Text || reply.Stop != provider.StopEnd || len(reply.ToolCalls) != 0 {
				t.Errorf("reply %+v, events' text %q", reply, text)
			}
			if reply.Usage.InputTokens == 0 || reply.Usage.OutputTokens == 0 {
				t.Errorf("usage %+v, want both counted", reply.Usage)
			}
			got := s.Requests()
			want := []modelserver.Request{{Model: "scripted", System: req.System, Messages: req.Messages, Tools: tools, MaxTokens: 512, APIKey: "test-key"}}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("server received\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// TestToolRoundTrip checks tool calls streamed in fragments, then a history with their results
// (several of them: Anthropic gets them merged into one user message, which its server checks).
func TestToolRoundTrip(t *testing.T) {
	for _, w := range wires {
		t.Run(string(w), func(t *testing.T) {
			first := `{"gadget":"todo","file":"server.js","content":"export function add(item) { return \"✓ \" + item }"}`
			s := modelserver.Start(t, w,
				modelserver.Tools(modelserver.Call("writeFile", first), modelserver.Call("listBindings", "")).WithText("Writing it now."),
				modelserver.Func(func(r modelserver.Request) modelserver.Turn {
					last := r.Messages[len(r.Messages)-1]
					return modelserver.Text(fmt.Sprintf("%s said %s", last.ToolName, last.Text))
				}))
			c, err := provider.New(s.Config())
			if err != nil {
				t.Fatal(err)
			}
			var starts []string
			reply, err := c.Stream(context.Background(), hello, func(e provider.Event) error {
				if e.Kind == provider.EventToolStart {
					starts = append(starts, e.Call.Name)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if reply.Stop != provider.StopToolUse || reply.Text != "Writing it now." || len(reply.ToolCalls) != 2 {
				t.Fatalf("reply %+v", reply)
			}
			if string(reply.ToolCalls[0].Args) != first || reply.ToolCalls[0].Name != "writeFile" || string(reply.ToolCalls[1].Args) != "{}" {
				t.Errorf("tool calls %+v", reply.ToolCalls)
			}
			if !reflect.DeepEqual(starts, []string{"writeFile", "listBindings"}) {
				t.Errorf("tool start events %v", starts)
			}
			history := append(append([]provider.Message(nil), hello.Messages...),
				provider.Message{Role: provider.RoleAssistant, Text: reply.Text, ToolCalls: reply.ToolCalls},
				provider.Message{Role: provider.RoleTool, ToolCallID: reply.ToolCalls[0].ID, ToolName: "writeFile", Text: "draft updated"},
				provider.Message{Role: provider.RoleTool, ToolCallID: reply.ToolCalls[1].ID, ToolName: "listBindings", Text: "no bindings", IsError: true})
			reply2, _, err := stream(t, s.Config(), provider.Request{Messages: history})
			if err != nil {
				t.Fatal(err)
			}
			wantLast := "no bindings"
			if w == modelserver.OpenAI {
				wantLast = "error: no bindings" // Chat Completions has no error flag
			}
			if reply2.Text != "listBindings said "+wantLast {
				t.Errorf("second reply %q", reply2.Text)
			}
			got := s.Requests()[1].Messages
			if len(got) != 4 || got[3].IsError != (w == modelserver.Anthropic) || got[2].ToolCallID != reply.ToolCalls[0].ID {
				t.Errorf("server received history %+v", got)
			}
		})
	}
}

// TestFaults checks that every scripted fault ends the call with an error of the right kind
// that says what went wrong, and keeps what arrived before it.
func TestFaults(t *testing.T) {
	tests := []struct {
		name    string
		turn    modelserver.Turn
		kind    error
		says    string
		partial string
		// saysAnthropic, when set, is what the error says for Anthropic.
		saysAnthropic string
	}{
		{"broken_sse", modelserver.Fault(modelserver.FaultBrokenSSE), provider.ErrMalformed, "not a JSON object", "Partial", ""},
		{"invalid_tool_json", modelserver.Fault(modelserver.FaultInvalidToolJSON), provider.ErrMalformed, `tool "writeFile" has arguments that are not a JSON object`, "", ""},
		{"huge", modelserver.Fault(modelserver.FaultHuge), provider.ErrTooLarge, "passed 4194304 bytes", "xxx", ""},
		{"stall", modelserver.Fault(modelserver.FaultStall), provider.ErrStalled, "sent nothing for 100ms", "", ""},
		{"http_500", modelserver.Fault(modelserver.FaultHTTP500), provider.ErrStatus, "HTTP 500: ", "", ""},
		{"unknown_shape", modelserver.Fault(modelserver.FaultUnknownShape), provider.ErrMalformed, "tool_calls delta has no index", "", `content block of type "mystery_block"`},
		{"cut_off", modelserver.Fault(modelserver.FaultCutOff), provider.ErrMalformed, "ended before the reply finished", "Partial", ""},
		{"too_many_calls", modelserver.Tools(manyCalls(65)...), provider.ErrMalformed, "more than 64 tool calls", "", ""},
	}
	for _, w := range wires {
		for _, tt := range tests {
			t.Run(string(w)+"/"+tt.name, func(t *testing.T) {
				s := modelserver.Start(t, w, tt.turn)
				cfg := s.Config()
				if tt.kind == provider.ErrStalled {
					cfg.IdleTimeout = 100 * time.Millisecond
				}
				reply, text, err := stream(t, cfg, hello)
				if !errors.Is(err, tt.kind) {
					t.Fatalf("error %v, want kind %v", err, tt.kind)
				}
				says := tt.says
				if w == modelserver.Anthropic && tt.saysAnthropic != "" {
					says = tt.saysAnthropic
				}
				if !strings.Contains(err.Error(), says) || !strings.HasPrefix(err.Error(), string(w)+": ") {
					t.Errorf("error %q does not say %q (after the provider's name)", err, says)
				}
				if !strings.HasPrefix(reply.Text, tt.partial) || text != reply.Text {
					t.Errorf("partial reply %.40q (events %.40q), want it to start with %q", reply.Text, text, tt.partial)
				}
				if len(reply.Text) > provider.DefaultMaxReply {
					t.Errorf("kept %d bytes of text, over the reply bound", len(reply.Text))
				}
			})
		}
	}
}

func manyCalls(n int) []modelserver.ToolCall {
	calls := make([]modelserver.ToolCall, n)
	for i := range calls {
		calls[i] = modelserver.Call("readFile", "{}")
	}
	return calls
}

// TestKeyNeverEchoed checks that a provider error reflecting the API key (and a stream event
// reflecting it) reaches the caller with the key scrubbed out.
func TestKeyNeverEchoed(t *testing.T) {
	const key = "sk-proj-SECRET0123456789abcdef"
	for _, w := range wires {
		t.Run(string(w), func(t *testing.T) {
			s := modelserver.Start(t, w,
				modelserver.HTTPError(401, "Incorrect API key provided: "+key+". You can find your API key at https://example.com."),
				modelserver.Tools(modelserver.Call("x"+key, `{"k":"`+key+`"`)))
			cfg := s.Config()
			cfg.APIKey = key
			for i := 0; i < 2; i++ {
				_, _, err := stream(t, cfg, hello)
				if err == nil || strings.Contains(err.Error(), key) || strings.Contains(err.Error(), key[:12]) {
					t.Fatalf("error %q holds the key", err)
				}
				if !strings.Contains(err.Error(), "[api key removed]") {
					t.Errorf("error %q does not show where the key was removed", err)
				}
			}
			if got := s.Requests()[0].APIKey; got != key {
				t.Errorf("server received key %q", got)
			}
		})
	}
}

// TestCallerEnds checks that an error from onEvent and a cancelled context end the stream
// with themselves.
func TestCallerEnds(t *testing.T) {
	for _, w := range wires {
		t.Run(string(w), func(t *testing.T) {
			pieces := make(chan string)
			s := modelserver.Start(t, w, modelserver.Text("one two three"), modelserver.Stream(pieces))
			c, err := provider.New(s.Config())
			if err != nil {
				t.Fatal(err)
			}
			stop := errors.New("stop here")
			_, err = c.Stream(context.Background(), hello, func(provider.Event) error { return stop })
			if err != stop {
				t.Errorf("onEvent's error came back as %v", err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			go func() { pieces <- "first" }()
			reply, err := c.Stream(ctx, hello, func(e provider.Event) error {
				cancel()
				return nil
			})
			if !errors.Is(err, context.Canceled) || reply.Text != "first" {
				t.Errorf("cancelled stream: reply %q, error %v", reply.Text, err)
			}
		})
	}
}

// TestSlowCallerIsNotStalled checks that time spent in onEvent does not count against the
// endpoint's idle timeout: the second delta is sent only while the caller is busy with the
// first, so the client must read again after it.
func TestSlowCallerIsNotStalled(t *testing.T) {
	pieces := make(chan string)
	s := modelserver.Start(t, modelserver.OpenAI, modelserver.Stream(pieces))
	cfg := s.Config()
	cfg.IdleTimeout = 500 * time.Millisecond
	c, err := provider.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() { pieces <- "one" }()
	slept := false
	reply, err := c.Stream(context.Background(), hello, func(provider.Event) error {
		if !slept {
			slept = true
			go func() {
				pieces <- " two"
				close(pieces)
			}()
			time.Sleep(1500 * time.Millisecond) // three idle timeouts
		}
		return nil
	})
	if err != nil || reply.Text != "one two" {
		t.Errorf("reply %q, error %v", reply.Text, err)
	}
}
