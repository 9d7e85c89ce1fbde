package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"atelier/host/agent/provider"
)

// anthropicStream writes a Messages stream: message_start, each content block as
// content_block_start, its deltas and content_block_stop (a ping after the first start),
// message_delta with the stop reason and usage, message_stop.
type anthropicStream struct {
	*sse
	id, model string
	input     int
	started   bool
	// open is the index of the open content block (-1: none); blocks counts the blocks.
	open, blocks int
	openKind     string
}

func (a *anthropicStream) start() {
	if a.started {
		return
	}
	a.started = true
	a.send("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":%s,"type":"message","role":"assistant","content":[],"model":%s,"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`,
		jsonString(a.id), jsonString(a.model), a.input))
}

// block opens a content block of kind (closing the open one) unless one of kind is open.
func (a *anthropicStream) block(kind, content string) {
	a.start()
	if a.open >= 0 && a.openKind == kind && kind == "text" {
		return
	}
	a.closeBlock()
	a.open, a.openKind = a.blocks, kind
	a.blocks++
	a.send("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":%d,"content_block":%s}`, a.open, content))
	if a.open == 0 {
		a.send("ping", `{"type":"ping"}`)
	}
}

func (a *anthropicStream) closeBlock() {
	if a.open < 0 {
		return
	}
	a.send("content_block_stop", fmt.Sprintf(`{"type":"content_block_stop","index":%d}`, a.open))
	a.open = -1
}

func (a *anthropicStream) text(delta string) {
	a.block("text", `{"type":"text","text":""}`)
	a.send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"text_delta","text":%s}}`, a.open, jsonString(delta)))
}

func (a *anthropicStream) toolStart(_ int, id, name string) {
	a.block("tool_use", fmt.Sprintf(`{"type":"tool_use","id":%s,"name":%s,"input":{}}`, jsonString("toolu_"+id), jsonString(name)))
	a.toolArgs(0, "")
}

func (a *anthropicStream) toolArgs(_ int, fragment string) {
	a.send("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":%d,"delta":{"type":"input_json_delta","partial_json":%s}}`, a.open, jsonString(fragment)))
}

func (a *anthropicStream) end(tools bool, _, output int) {
	a.start()
	a.closeBlock()
	stop := "end_turn"
	if tools {
		stop = "tool_use"
	}
	a.send("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%s,"stop_sequence":null},"usage":{"output_tokens":%d}}`, jsonString(stop), output))
	a.send("message_stop", `{"type":"message_stop"}`)
}

func (a *anthropicStream) broken() {
	a.raw(fmt.Sprintf("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":%d,\"delta\":{\"type\":\"text_del\n\n", a.open))
}

func (a *anthropicStream) unknownShape() {
	a.start()
	a.send("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"mystery_block","data":"?"}}`)
}

// anBlock is a content block of a request.
type anBlock struct {
	Type      string          `json:"type"`
	Text      *string         `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
}

// decodeAnthropic decodes and checks a Messages request; problem says what is wrong with it.
func decodeAnthropic(r *http.Request, body []byte) (req Request, problem string) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		return req, fmt.Sprintf("%s %s, want POST /v1/messages", r.Method, r.URL.Path)
	}
	if v := r.Header.Get("anthropic-version"); v != "2023-06-01" {
		return req, fmt.Sprintf("anthropic-version is %q, want 2023-06-01", v)
	}
	req.APIKey = r.Header.Get("x-api-key")
	var b struct {
		Model     string          `json:"model"`
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Stream bool `json:"stream"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return req, "the body is not a Messages request: " + err.Error()
	}
	if b.Model == "" || !b.Stream || b.MaxTokens <= 0 {
		return req, "the request lacks model, stream: true or a positive max_tokens"
	}
	req.Model, req.MaxTokens = b.Model, b.MaxTokens
	system, ok := contentText(b.System)
	if !ok {
		return req, "system is neither a string nor text blocks"
	}
	req.System = system
	var pending []string // tool_use ids the next message must answer
	for i, m := range b.Messages {
		blocks, ok := anBlocks(m.Content)
		if !ok || len(blocks) == 0 {
			return req, fmt.Sprintf("message %d's content is neither a non-empty string nor content blocks", i)
		}
		switch m.Role {
		case "user":
			var text strings.Builder
			for _, bl := range blocks {
				switch {
				case bl.Type == "tool_result":
					at := slices.Index(pending, bl.ToolUseID)
					if at < 0 || text.Len() > 0 {
						return req, fmt.Sprintf("message %d has a tool_result for %q that no tool_use of the message before awaits, or after text", i, bl.ToolUseID)
					}
					pending = slices.Delete(pending, at, at+1)
					out, ok := contentText(bl.Content)
					if !ok {
						return req, fmt.Sprintf("message %d has a tool_result whose content is not text", i)
					}
					req.Messages = append(req.Messages, provider.Message{Role: provider.RoleTool, Text: out, ToolCallID: bl.ToolUseID, ToolName: toolName(req.Messages, bl.ToolUseID), IsError: bl.IsError})
				case bl.Type == "text" && bl.Text != nil && *bl.Text != "":
					text.WriteString(*bl.Text)
				default:
					return req, fmt.Sprintf("message %d has a block of type %q (or an empty text block) in a user message", i, bl.Type)
				}
			}
			if len(pending) > 0 {
				return req, fmt.Sprintf("message %d does not answer tool calls %v", i, pending)
			}
			if text.Len() > 0 {
				req.Messages = append(req.Messages, provider.Message{Role: provider.RoleUser, Text: text.String()})
			}
		case "assistant":
			if len(pending) > 0 {
				return req, fmt.Sprintf("message %d comes before tool calls %v were answered", i, pending)
			}
			pm := provider.Message{Role: provider.RoleAssistant}
			for _, bl := range blocks {
				switch {
				case bl.Type == "text" && bl.Text != nil && *bl.Text != "":
					pm.Text += *bl.Text
				case bl.Type == "tool_use" && bl.ID != "" && bl.Name != "" && json.Valid(bl.Input) && strings.HasPrefix(string(bl.Input), "{"):
					pm.ToolCalls = append(pm.ToolCalls, provider.ToolCall{ID: bl.ID, Name: bl.Name, Args: bl.Input})
					pending = append(pending, bl.ID)
				default:
					return req, fmt.Sprintf("message %d has a malformed %q block (an empty text, or a tool_use without id, name or object input)", i, bl.Type)
				}
			}
			req.Messages = append(req.Messages, pm)
		default:
			return req, fmt.Sprintf("message %d has role %q, not user or assistant", i, m.Role)
		}
	}
	if len(pending) > 0 {
		return req, fmt.Sprintf("the last message leaves tool calls %v unanswered", pending)
	}
	for _, t := range b.Tools {
		if t.Name == "" || !json.Valid(t.InputSchema) {
			return req, "a tool lacks name or input_schema"
		}
		req.Tools = append(req.Tools, provider.Tool{Name: t.Name, Description: t.Description, Schema: t.InputSchema})
	}
	return req, ""
}

// anBlocks returns content as blocks: a string is one text block.
func anBlocks(raw json.RawMessage) ([]anBlock, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []anBlock{{Type: "text", Text: &s}}, s != ""
	}
	var blocks []anBlock
	return blocks, json.Unmarshal(raw, &blocks) == nil
}
