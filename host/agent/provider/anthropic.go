package provider

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// anthropicVersion is the Messages API version the client speaks.
const anthropicVersion = "2023-06-01"

// anthropicWire is the Anthropic Messages wire format.
type anthropicWire struct{}

func (anthropicWire) name() string { return "anthropic" }

func (anthropicWire) endpoint(base string) string {
	return strings.TrimSuffix(base, "/v1") + "/v1/messages"
}

func (anthropicWire) header(h http.Header, key string) {
	h.Set("anthropic-version", anthropicVersion)
	if key != "" {
		h.Set("x-api-key", key)
	}
}

// The request body of Messages.
type (
	anRequest struct {
		Model     string      `json:"model"`
		MaxTokens int         `json:"max_tokens"`
		System    string      `json:"system,omitempty"`
		Messages  []anMessage `json:"messages"`
		Tools     []anTool    `json:"tools,omitempty"`
		Stream    bool        `json:"stream"`
	}
	anMessage struct {
		Role    string    `json:"role"`
		Content []anBlock `json:"content"`
	}
	// anBlock is a content block: text, tool_use or tool_result.
	anBlock struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   *string         `json:"content,omitempty"`
		IsError   bool            `json:"is_error,omitempty"`
	}
	anTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
)

// encode writes req as a streamed Messages request. Tool results become tool_result blocks of
// a user message, consecutive ones merged into one; empty text blocks (which the API refuses)
// are left out, and so is a message left without blocks.
func (anthropicWire) encode(req Request, model string, maxTokens int) ([]byte, error) {
	r := anRequest{Model: model, MaxTokens: maxTokens, System: req.System, Stream: true}
	for i, m := range req.Messages {
		var role string
		var blocks []anBlock
		switch m.Role {
		case RoleUser, RoleAssistant:
			role = m.Role
			if m.Text != "" {
				blocks = append(blocks, anBlock{Type: "text", Text: m.Text})
			}
			if m.Role == RoleAssistant {
				for _, c := range m.ToolCalls {
					blocks = append(blocks, anBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: argsOrEmpty(c.Args)})
				}
			}
		case RoleTool:
			role = RoleUser
			text := m.Text
			blocks = append(blocks, anBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: &text, IsError: m.IsError})
		default:
			return nil, fmt.Errorf("provider: message %d has role %q, not user, assistant or tool", i, m.Role)
		}
		if len(blocks) == 0 {
			continue
		}
		if n := len(r.Messages); m.Role == RoleTool && n > 0 && isToolResults(r.Messages[n-1]) {
			r.Messages[n-1].Content = append(r.Messages[n-1].Content, blocks...)
			continue
		}
		r.Messages = append(r.Messages, anMessage{Role: role, Content: blocks})
	}
	for _, t := range req.Tools {
		r.Tools = append(r.Tools, anTool{Name: t.Name, Description: t.Description, InputSchema: schemaOrEmpty(t.Schema)})
	}
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("provider: encoding the request (is every tool schema and call argument valid JSON?): %w", err)
	}
	return b, nil
}

// isToolResults reports whether m is a user message of tool results only.
func isToolResults(m anMessage) bool {
	for _, b := range m.Content {
		if b.Type != "tool_result" {
			return false
		}
	}
	return m.Role == RoleUser && len(m.Content) > 0
}

// anError is the error of an error response or of an "error" event.
type anError struct {
	Error *struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

func (anthropicWire) errorMessage(body []byte) string {
	var e anError
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return ""
	}
	return e.Error.Type + ": " + e.Error.Message
}

// anEvent is one streamed event; which fields it has depends on its type.
type anEvent struct {
	Type    string `json:"type"`
	Message *struct {
		Usage anUsage `json:"usage"`
	} `json:"message"`
	Index        *int `json:"index"`
	ContentBlock *struct {
		Type  string          `json:"type"`
		ID    string          `json:"id"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content_block"`
	Delta *struct {
		Type        string  `json:"type"`
		Text        *string `json:"text"`
		PartialJSON *string `json:"partial_json"`
		StopReason  string  `json:"stop_reason"`
	} `json:"delta"`
	Usage *anUsage `json:"usage"`
	anError
}

type anUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

func (anthropicWire) decoder(key scrubber, emit func(Event) error) decoder {
	return &anDecoder{key: key, emit: emit, calls: newToolCalls("anthropic", key, emit), blocks: make(map[int]string)}
}

// anDecoder decodes a Messages stream: message_start, then per content block
// content_block_start, content_block_delta..., content_block_stop, then message_delta and
// message_stop; ping may come anywhere. Event types the API may add later are skipped, as
// its versioning policy asks of clients; a known event of an unknown shape is an error.
type anDecoder struct {
	key     scrubber
	emit    func(Event) error
	text    strings.Builder
	calls   *toolCalls
	blocks  map[int]string // content block index -> its type, for open blocks
	started bool
	stop    string
	usage   Usage
}

func (d *anDecoder) event(ev sseEvent) (bool, error) {
	var e anEvent
	if err := json.Unmarshal(ev.data, &e); err != nil {
		return false, d.malformed(fmt.Sprintf("an event is not a JSON object (%v)", err), ev)
	}
	if ev.name != "" && ev.name != e.Type {
		return false, d.malformed(fmt.Sprintf("an event named %q has type %q", d.key.text(ev.name), d.key.text(e.Type)), ev)
	}
	if !d.started && e.Type != "message_start" && e.Type != "ping" && e.Type != "error" {
		return false, d.malformed(fmt.Sprintf("the stream began with %q, not message_start", d.key.text(e.Type)), ev)
	}
	switch e.Type {
	case "ping":
	case "error":
		msg := "no message"
		if e.Error != nil {
			msg = e.Error.Type + ": " + e.Error.Message
		}
		return false, fail(ErrRefused, "anthropic: the stream ended with an error: "+d.key.text(msg)+" (try again later)")
	case "message_start":
		if e.Message == nil {
			return false, d.malformed("message_start has no message", ev)
		}
		d.started = true
		d.usage = Usage{InputTokens: e.Message.Usage.InputTokens, OutputTokens: e.Message.Usage.OutputTokens}
	case "content_block_start":
		return false, d.blockStart(e, ev)
	case "content_block_delta":
		return false, d.blockDelta(e, ev)
	case "content_block_stop":
		if e.Index == nil || d.blocks[*e.Index] == "" {
			return false, d.malformed("content_block_stop for a block that is not open", ev)
		}
		delete(d.blocks, *e.Index)
	case "message_delta":
		if e.Delta == nil {
			return false, d.malformed("message_delta has no delta", ev)
		}
		if e.Delta.StopReason != "" {
			d.stop = e.Delta.StopReason
		}
		if e.Usage != nil {
			d.usage.OutputTokens = e.Usage.OutputTokens
			if e.Usage.InputTokens > 0 {
				d.usage.InputTokens = e.Usage.InputTokens
			}
		}
	case "message_stop":
		return true, nil
	}
	return false, nil
}

func (d *anDecoder) blockStart(e anEvent, ev sseEvent) error {
	if e.Index == nil || e.ContentBlock == nil {
		return d.malformed("content_block_start has no index or content_block", ev)
	}
	if d.blocks[*e.Index] != "" {
		return d.malformed(fmt.Sprintf("content block %d started twice", *e.Index), ev)
	}
	switch e.ContentBlock.Type {
	case "text":
	case "tool_use":
		call, err := d.calls.at(*e.Index, true)
		if err != nil {
			return err
		}
		if err := d.calls.named(call, e.ContentBlock.ID, e.ContentBlock.Name); err != nil {
			return err
		}
	default:
		return d.malformed(fmt.Sprintf("a content block of type %q, which the client did not ask for", d.key.text(e.ContentBlock.Type)), ev)
	}
	d.blocks[*e.Index] = e.ContentBlock.Type
	return nil
}

func (d *anDecoder) blockDelta(e anEvent, ev sseEvent) error {
	if e.Index == nil || e.Delta == nil {
		return d.malformed("content_block_delta has no index or delta", ev)
	}
	switch kind := d.blocks[*e.Index]; {
	case kind == "text" && e.Delta.Type == "text_delta" && e.Delta.Text != nil:
		if *e.Delta.Text == "" {
			return nil
		}
		d.text.WriteString(*e.Delta.Text)
		return d.emit(Event{Kind: EventText, Text: *e.Delta.Text})
	case kind == "tool_use" && e.Delta.Type == "input_json_delta" && e.Delta.PartialJSON != nil:
		call, _ := d.calls.at(*e.Index, false)
		call.args.WriteString(*e.Delta.PartialJSON)
		return nil
	case kind == "":
		return d.malformed(fmt.Sprintf("a delta for content block %d, which is not open", *e.Index), ev)
	default:
		return d.malformed(fmt.Sprintf("a %q delta for a %s block", d.key.text(e.Delta.Type), kind), ev)
	}
}

func (d *anDecoder) malformed(what string, ev sseEvent) error {
	return fail(ErrMalformed, fmt.Sprintf("anthropic: malformed stream: %s: %s", what, d.key.text(string(ev.data))))
}

// reply maps the stop reason: end_turn and stop_sequence, tool_use, max_tokens.
func (d *anDecoder) reply(atEnd bool) (Reply, error) {
	calls, err := d.calls.calls(atEnd)
	r := Reply{Text: d.text.String(), ToolCalls: calls, Usage: d.usage}
	if !atEnd || err != nil {
		return r, err
	}
	switch d.stop {
	case "end_turn", "stop_sequence":
		r.Stop = StopEnd
	case "tool_use":
		r.Stop = StopToolUse
	case "max_tokens":
		r.Stop = StopMaxToken
	case "":
		return r, fail(ErrMalformed, "anthropic: the stream ended before the reply finished (no stop_reason); the connection may have been cut")
	case "refusal":
		return r, fail(ErrRefused, "anthropic: the model refused to answer")
	default:
		return r, fail(ErrMalformed, fmt.Sprintf("anthropic: the reply stopped for an unknown reason %q", d.key.text(d.stop)))
	}
	return r, nil
}
