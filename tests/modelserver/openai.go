package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"atelier/host/agent/provider"
)

// openAIStream writes a Chat Completions stream: a first chunk with the role, content or
// tool-call chunks, a chunk with the finish reason, the usage chunk, then [DONE].
type openAIStream struct {
	*sse
	id, model string
	roleSent  bool
}

// created is the chunks' creation time (fixed, so that streams are reproducible).
const created = 1694268190

func (o *openAIStream) chunk(delta, finish string) {
	o.send("", fmt.Sprintf(`{"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"system_fingerprint":"fp_modelserver","choices":[{"index":0,"delta":%s,"logprobs":null,"finish_reason":%s}],"usage":null}`,
		jsonString(o.id), created, jsonString(o.model), delta, finish))
}

func (o *openAIStream) text(delta string) {
	if !o.roleSent {
		o.roleSent = true
		o.chunk(`{"role":"assistant","content":"","refusal":null}`, "null")
	}
	o.chunk(`{"content":`+jsonString(delta)+`}`, "null")
}

func (o *openAIStream) toolStart(i int, id, name string) {
	call := fmt.Sprintf(`[{"index":%d,"id":%s,"type":"function","function":{"name":%s,"arguments":""}}]`, i, jsonString("call_"+id), jsonString(name))
	if !o.roleSent {
		o.roleSent = true
		o.chunk(`{"role":"assistant","content":null,"tool_calls":`+call+`,"refusal":null}`, "null")
		return
	}
	o.chunk(`{"tool_calls":`+call+`}`, "null")
}

func (o *openAIStream) toolArgs(i int, fragment string) {
	o.chunk(fmt.Sprintf(`{"tool_calls":[{"index":%d,"function":{"arguments":%s}}]}`, i, jsonString(fragment)), "null")
}

func (o *openAIStream) end(tools bool, input, output int) {
	if !o.roleSent {
		o.text("")
	}
	finish := `"stop"`
	if tools {
		finish = `"tool_calls"`
	}
	o.chunk(`{}`, finish)
	o.send("", fmt.Sprintf(`{"id":%s,"object":"chat.completion.chunk","created":%d,"model":%s,"system_fingerprint":"fp_modelserver","choices":[],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`,
		jsonString(o.id), created, jsonString(o.model), input, output, input+output))
	o.send("", "[DONE]")
}

func (o *openAIStream) broken() {
	o.raw(`data: {"id":` + jsonString(o.id) + `,"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"unfinis` + "\n\n")
}

func (o *openAIStream) unknownShape() {
	o.text("")
	o.chunk(`{"tool_calls":[{"id":"call_x","type":"function","function":{"name":"readFile","arguments":"{}"}}]}`, "null")
}

// decodeOpenAI decodes and checks a Chat Completions request; problem says what is wrong
// with it.
func decodeOpenAI(r *http.Request, body []byte) (req Request, problem string) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		return req, fmt.Sprintf("%s %s, want POST /v1/chat/completions", r.Method, r.URL.Path)
	}
	if key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		req.APIKey = key
	}
	var b struct {
		Model    string `json:"model"`
		Messages []struct {
			Role      string          `json:"role"`
			Content   json.RawMessage `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Type     string `json:"type"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
			ToolCallID string `json:"tool_call_id"`
		} `json:"messages"`
		Tools []struct {
			Type     string `json:"type"`
			Function struct {
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			} `json:"function"`
		} `json:"tools"`
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		MaxTokens int `json:"max_tokens"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return req, "the body is not a Chat Completions request: " + err.Error()
	}
	if b.Model == "" || !b.Stream || b.StreamOptions == nil || !b.StreamOptions.IncludeUsage {
		return req, "the request lacks model, stream: true or stream_options.include_usage: true"
	}
	req.Model, req.MaxTokens = b.Model, b.MaxTokens
	var pending []string // tool call ids still to be answered
	for i, m := range b.Messages {
		text, ok := contentText(m.Content)
		if !ok {
			return req, fmt.Sprintf("message %d's content is neither a string nor text parts: %s", i, m.Content)
		}
		if m.Role != "tool" && len(pending) > 0 {
			return req, fmt.Sprintf("message %d (%s) comes before tool calls %v were answered", i, m.Role, pending)
		}
		switch m.Role {
		case "system", "developer":
			req.System += text
		case "user":
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: text})
		case "assistant":
			pm := provider.Message{Role: provider.RoleAssistant, Text: text}
			for _, c := range m.ToolCalls {
				if c.Type != "function" || c.ID == "" || !json.Valid([]byte(c.Function.Arguments)) {
					return req, fmt.Sprintf("message %d has a tool call without type function, an id or JSON arguments", i)
				}
				pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Function.Name, Args: json.RawMessage(c.Function.Arguments)})
				pending = append(pending, c.ID)
			}
			req.Messages = append(req.Messages, pm)
		case "tool":
			at := slices.Index(pending, m.ToolCallID)
			if at < 0 {
				return req, fmt.Sprintf("message %d answers tool call %q, which is not awaiting an answer", i, m.ToolCallID)
			}
			pending = append(pending[:at], pending[at+1:]...)
			req.Messages = append(req.Messages, provider.Message{Role: provider.RoleTool, Text: text, ToolCallID: m.ToolCallID, ToolName: toolName(req.Messages, m.ToolCallID)})
		default:
			return req, fmt.Sprintf("message %d has role %q", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return req, fmt.Sprintf("the last message leaves tool calls %v unanswered", pending)
	}
	for _, t := range b.Tools {
		if t.Type != "function" || t.Function.Name == "" || !json.Valid(t.Function.Parameters) {
			return req, "a tool is not {type: function, function: {name, parameters}}"
		}
		req.Tools = append(req.Tools, provider.Tool{Name: t.Function.Name, Description: t.Function.Description, Schema: t.Function.Parameters})
	}
	return req, ""
}

// contentText returns a content that is a string, null, or an array of text parts.
func contentText(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return "", false
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", false
		}
		b.WriteString(p.Text)
	}
	return b.String(), true
}

// toolName returns the name of the tool call id among msgs' assistant calls.
func toolName(msgs []provider.Message, id string) string {
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			if c.ID == id {
				return c.Name
			}
		}
	}
	return ""
}
