package provider

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// toolCalls gathers the tool calls of a streamed reply, each from the pieces that name its
// position (OpenAI's tool_calls[].index, Anthropic's content block index).
type toolCalls struct {
	byIndex map[int]*pendingCall
	order   []int
	emit    func(Event) error
	key     scrubber
	// wire is the provider's name, for errors.
	wire string
}

// pendingCall is a tool call being streamed.
type pendingCall struct {
	id, name string
	args     strings.Builder
	started  bool
}

func newToolCalls(wire string, key scrubber, emit func(Event) error) *toolCalls {
	return &toolCalls{byIndex: make(map[int]*pendingCall), emit: emit, key: key, wire: wire}
}

// at returns the call at index, a new one when create is set. It fails past maxToolCalls.
func (t *toolCalls) at(index int, create bool) (*pendingCall, error) {
	if c, ok := t.byIndex[index]; ok || !create {
		return c, nil
	}
	if len(t.order) >= maxToolCalls {
		return nil, fail(ErrMalformed, fmt.Sprintf("%s: the reply has more than %d tool calls, more than any turn needs", t.wire, maxToolCalls))
	}
	c := &pendingCall{}
	t.byIndex[index] = c
	t.order = append(t.order, index)
	return c, nil
}

// named records the call's id and name as they arrive and emits EventToolStart once both
// are known.
func (t *toolCalls) named(c *pendingCall, id, name string) error {
	if c.id == "" {
		c.id = id
	}
	if c.name == "" {
		c.name = name
	}
	if c.started || c.name == "" || c.id == "" {
		return nil
	}
	c.started = true
	return t.emit(Event{Kind: EventToolStart, Call: ToolCall{ID: c.id, Name: c.name}})
}

// calls returns the calls in index order. With check, each must have a name and arguments
// that are a JSON object ("" stands for {}); a call without an id gets one from its index.
func (t *toolCalls) calls(check bool) ([]ToolCall, error) {
	order := slices.Clone(t.order)
	slices.Sort(order)
	var out []ToolCall
	for _, i := range order {
		c := t.byIndex[i]
		args := []byte(c.args.String())
		if len(bytes.TrimSpace(args)) == 0 {
			args = []byte("{}")
		}
		id := c.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		if check {
			if c.name == "" {
				return out, fail(ErrMalformed, fmt.Sprintf("%s: the model's tool call %d has no tool name", t.wire, i))
			}
			if !json.Valid(args) || bytes.TrimSpace(args)[0] != '{' {
				return out, fail(ErrMalformed, fmt.Sprintf("%s: the model's call of tool %q has arguments that are not a JSON object: %s", t.wire, t.key.text(c.name), t.key.text(string(args))))
			}
		}
		out = append(out, ToolCall{ID: id, Name: c.name, Args: json.RawMessage(args)})
	}
	return out, nil
}
