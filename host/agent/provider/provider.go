// Package provider speaks to language models over their providers' documented HTTP wire
// formats, streaming included: an OpenAI-compatible Chat Completions endpoint (OpenAI, Ollama,
// llama.cpp's server, vLLM, LM Studio, OpenRouter; SSE with tool_calls deltas) and the
// Anthropic Messages API (SSE content_block_* events with tool_use blocks). It knows nothing of
// chats, workspaces or the kernel: host/agent drives it.
package provider

import (
	"context"
	"encoding/json"
)

// Kinds of provider.
const (
	KindOpenAI    = "openai"    // an OpenAI-compatible Chat Completions endpoint
	KindAnthropic = "anthropic" // the Anthropic Messages API
)

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool" // the result of one tool call
)

// Message is one message of a conversation sent to a model.
type Message struct {
	Role string
	// Text is the message's text (for RoleTool: the tool's output).
	Text string
	// ToolCalls are the calls an assistant message made.
	ToolCalls []ToolCall
	// ToolCallID and ToolName say which call a RoleTool message answers; IsError marks a
	// tool that failed.
	ToolCallID string
	ToolName   string
	IsError    bool
}

// ToolCall is one call of a tool the model asked for. Args is the JSON object of its
// arguments, as the model wrote it (checked valid JSON by the client).
type ToolCall struct {
	ID   string
	Name string
	Args json.RawMessage
}

// Tool is a tool offered to the model: its name, what it does, and the JSON Schema of its
// arguments (an object schema).
type Tool struct {
	Name        string
	Description string
	Schema      json.RawMessage
}

// Request is one model call.
type Request struct {
	// System is the system prompt.
	System   string
	Messages []Message
	Tools    []Tool
	// MaxTokens bounds the reply (0: the client's default).
	MaxTokens int
}

// EventKind says what an Event carries.
type EventKind int

// The events of a streamed reply.
const (
	// EventText carries a piece of the reply's text (Text).
	EventText EventKind = iota + 1
	// EventToolStart says a tool call began (Call.ID and Call.Name; Args not yet known).
	EventToolStart
)

// Event is one streamed piece of a reply.
type Event struct {
	Kind EventKind
	Text string
	Call ToolCall
}

// Usage counts a call's tokens as the provider reported them (0 when it did not).
type Usage struct {
	InputTokens  int
	OutputTokens int
}

// Stop reasons of a Reply.
const (
	StopEnd      = "end"        // the model finished its turn
	StopToolUse  = "tool_use"   // the model wants ToolCalls run
	StopMaxToken = "max_tokens" // the reply hit MaxTokens
)

// Reply is a whole reply once its stream ended.
type Reply struct {
	Text      string
	ToolCalls []ToolCall
	Stop      string
	Usage     Usage
}

// Client calls one model.
type Client interface {
	// Stream sends req and calls onEvent with each piece of the reply as it arrives (an error
	// from onEvent ends the stream with it), then returns the whole reply. A malformed stream,
	// invalid tool-call JSON, a reply over the client's size bound or a stream stalled past its
	// idle timeout end it with an error that says which (an *Error; see its kinds). On an
	// error, the Reply holds the text and tool calls that arrived before it.
	Stream(ctx context.Context, req Request, onEvent func(Event) error) (Reply, error)
}
