package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// openAIWire is the OpenAI Chat Completions wire format, as OpenAI documents it and as the
// compatible servers (Ollama, llama.cpp's server, vLLM, LM Studio, OpenRouter) speak it.
type openAIWire struct{}

func (openAIWire) name() string { return "openai" }

func (openAIWire) endpoint(base string) string { return base + "/chat/completions" }

func (openAIWire) header(h http.Header, key string) {
	if key != "" {
		h.Set("Authorization", "Bearer "+key)
	}
}

// The request body of Chat Completions.
type (
	oaRequest struct {
		Model         string      `json:"model"`
		Messages      []oaMessage `json:"messages"`
		Tools         []oaTool    `json:"tools,omitempty"`
		Stream        bool        `json:"stream"`
		StreamOptions struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		MaxTokens int `json:"max_tokens"`
	}
	oaMessage struct {
		Role       string       `json:"role"`
		Content    *string      `json:"content"`
		ToolCalls  []oaToolCall `json:"tool_calls,omitempty"`
		ToolCallID string       `json:"tool_call_id,omitempty"`
	}
	oaToolCall struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	oaTool struct {
		Type     string `json:"type"`
		Function struct {
			Name        string          `json:"name"`
			Description string          `json:"description,omitempty"`
			Parameters  json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
)

// encode writes req as a streamed Chat Completions request. A tool message that reports an
// error gets "error: " before its text, the format having no flag for it.
func (openAIWire) encode(req Request, model string, maxTokens int) ([]byte, error) {
	r := oaRequest{Model: model, Stream: true, MaxTokens: maxTokens}
	r.StreamOptions.IncludeUsage = true
	if req.System != "" {
		r.Messages = append(r.Messages, oaMessage{Role: "system", Content: &req.System})
	}
	for i, m := range req.Messages {
		text := m.Text
		switch m.Role {
		case RoleUser:
			r.Messages = append(r.Messages, oaMessage{Role: "user", Content: &text})
		case RoleAssistant:
			om := oaMessage{Role: "assistant"}
			if text != "" || len(m.ToolCalls) == 0 {
				om.Content = &text
			}
			for _, c := range m.ToolCalls {
				tc := oaToolCall{ID: c.ID, Type: "function"}
				tc.Function.Name = c.Name
				tc.Function.Arguments = string(argsOrEmpty(c.Args))
				om.ToolCalls = append(om.ToolCalls, tc)
			}
			r.Messages = append(r.Messages, om)
		case RoleTool:
			if m.IsError {
				text = "error: " + text
			}
			r.Messages = append(r.Messages, oaMessage{Role: "tool", Content: &text, ToolCallID: m.ToolCallID})
		default:
			return nil, fmt.Errorf("provider: message %d has role %q, not user, assistant or tool", i, m.Role)
		}
	}
	for _, t := range req.Tools {
		ot := oaTool{Type: "function"}
		ot.Function.Name = t.Name
		ot.Function.Description = t.Description
		ot.Function.Parameters = schemaOrEmpty(t.Schema)
		r.Tools = append(r.Tools, ot)
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("provider: encoding the request (is every tool schema and call argument valid JSON?): %w", err)
	}
	return b, nil
}

// argsOrEmpty returns args, or {} when it is empty.
func argsOrEmpty(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage("{}")
	}
	return args
}

// schemaOrEmpty returns schema, or the schema of an object without properties when it is empty.
func schemaOrEmpty(schema json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(schema)) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return schema
}

// oaError is the error object of an error response or of an error chunk.
type oaError struct {
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (openAIWire) errorMessage(body []byte) string {
	var e oaError
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return ""
	}
	return e.Error.Message
}

// oaChunk is one streamed chunk.
type oaChunk struct {
	Choices []struct {
		Index int `json:"index"`
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    *int   `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

func (openAIWire) decoder(key scrubber, emit func(Event) error) decoder {
	return &oaDecoder{key: key, emit: emit, calls: newToolCalls("openai", key, emit)}
}

// oaDecoder decodes a Chat Completions stream: "data: {chunk}" events, then "data: [DONE]".
type oaDecoder struct {
	key    scrubber
	emit   func(Event) error
	text   strings.Builder
	calls  *toolCalls
	finish string
	usage  Usage
}

func (d *oaDecoder) event(ev sseEvent) (bool, error) {
	if string(ev.data) == "[DONE]" {
		return true, nil
	}
	var c oaChunk
	if err := json.Unmarshal(ev.data, &c); err != nil {
		return false, fail(ErrMalformed, fmt.Sprintf("openai: a stream chunk is not a JSON object (%v): %s", err, d.key.text(string(ev.data))))
	}
	if c.Error != nil {
		return false, fail(ErrRefused, "openai: the stream ended with an error: "+d.key.text(c.Error.Message))
	}
	if c.Usage != nil {
		d.usage = Usage{InputTokens: c.Usage.PromptTokens, OutputTokens: c.Usage.CompletionTokens}
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			continue // only one choice is asked for
		}
		if t := ch.Delta.Content; t != nil && *t != "" {
			d.text.WriteString(*t)
			if err := d.emit(Event{Kind: EventText, Text: *t}); err != nil {
				return false, err
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			if tc.Index == nil {
				return false, fail(ErrMalformed, "openai: a tool_calls delta has no index: "+d.key.text(string(ev.data)))
			}
			call, err := d.calls.at(*tc.Index, true)
			if err != nil {
				return false, err
			}
			call.args.WriteString(tc.Function.Arguments)
			if err := d.calls.named(call, tc.ID, tc.Function.Name); err != nil {
				return false, err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			d.finish = *ch.FinishReason
		}
	}
	return false, nil
}

// reply maps the finish reason: stop, tool_calls (function_call of old servers) and length.
// A reply with tool calls stops for them whatever the reason says (some servers say stop).
func (d *oaDecoder) reply(atEnd bool) (Reply, error) {
	calls, err := d.calls.calls(atEnd)
	r := Reply{Text: d.text.String(), ToolCalls: calls, Usage: d.usage}
	if !atEnd || err != nil {
		return r, err
	}
	switch d.finish {
	case "stop", "tool_calls", "function_call":
		r.Stop = StopEnd
	case "length":
		r.Stop = StopMaxToken
	case "":
		return r, fail(ErrMalformed, "openai: the stream ended before the reply finished (no finish_reason); the connection may have been cut")
	case "content_filter":
		return r, fail(ErrRefused, "openai: the provider's content filter stopped the reply")
	default:
		return r, fail(ErrMalformed, fmt.Sprintf("openai: the reply finished for an unknown reason %q", d.key.text(d.finish)))
	}
	if len(calls) > 0 && r.Stop == StopEnd {
		r.Stop = StopToolUse
	}
	return r, nil
}
