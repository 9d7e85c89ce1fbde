package modelserver

import (
	"strings"
	"unicode/utf8"
)

// Turn is one scripted reply: text, tool calls, a fault, or a reply computed from the request.
// Build it with Text, Deltas, Tools, Fault, HTTPError, Func, Stream or Forever.
type Turn struct {
	deltas []string
	calls  []ToolCall
	fault  FaultKind
	// status and message make an HTTP error reply.
	status  int
	message string
	fn      func(Request) Turn
	stream  <-chan string
	forever bool
	// usage, when set, is reported instead of the server's estimate.
	usage *[2]int
}

// ToolCall is a scripted tool call: the tool's name and its JSON arguments as the model writes
// them (not checked, so that a test can send invalid JSON). The server streams the arguments
// in fragments of at most FragmentSize bytes.
type ToolCall struct {
	Name, Args string
}

// FragmentSize is the most bytes of tool-call arguments in one streamed fragment.
const FragmentSize = 8

// Text is a text reply streamed as one delta per word (each word with the space before it).
func Text(text string) Turn {
	var deltas []string
	for text != "" {
		space := len(text) - len(strings.TrimLeft(text, " \n"))
		end := strings.IndexAny(text[space:], " \n")
		if end < 0 {
			deltas = append(deltas, text)
			break
		}
		deltas = append(deltas, text[:space+end])
		text = text[space+end:]
	}
	return Turn{deltas: deltas}
}

// Deltas is a text reply streamed as exactly these deltas.
func Deltas(deltas ...string) Turn {
	return Turn{deltas: deltas}
}

// Tools is a reply of tool calls (stop reason tool_calls / tool_use). Text before the calls
// is added with WithText.
func Tools(calls ...ToolCall) Turn {
	return Turn{calls: calls}
}

// Call is a tool call for Tools.
func Call(name, args string) ToolCall {
	return ToolCall{Name: name, Args: args}
}

// WithText returns t with text streamed before its tool calls.
func (t Turn) WithText(text string) Turn {
	t.deltas = Text(text).deltas
	return t
}

// WithUsage returns t reporting these token counts (by default the input is estimated as the
// request body's bytes / 4 and the output as the number of deltas and fragments).
func (t Turn) WithUsage(input, output int) Turn {
	t.usage = &[2]int{input, output}
	return t
}

// FaultKind is a way for a reply to go wrong.
type FaultKind int

// The faults.
const (
	// FaultBrokenSSE sends a delta, then an event whose JSON is cut off, then closes.
	FaultBrokenSSE FaultKind = iota + 1
	// FaultInvalidToolJSON calls the tool "writeFile" with arguments that are not JSON.
	FaultInvalidToolJSON
	// FaultHuge streams a 5 MB text reply (5,000 deltas of 1,000 bytes), then finishes.
	FaultHuge
	// FaultStall sends a delta, then nothing until the client gives up (or the test ends).
	FaultStall
	// FaultHTTP500 answers HTTP 500 with the provider's error body.
	FaultHTTP500
	// FaultUnknownShape sends an event of a shape the wire format does not have (a tool-call
	// delta without its index; a content block of an unknown type).
	FaultUnknownShape
	// FaultCutOff sends a delta, then closes the stream before the reply finished.
	FaultCutOff
)

// HugeSize is the bytes of text FaultHuge streams.
const HugeSize = 5_000_000

// Fault is a reply that goes wrong as kind says.
func Fault(kind FaultKind) Turn {
	if kind == FaultHTTP500 {
		return HTTPError(500, "The server had an error while processing your request. Sorry about that!")
	}
	if kind == FaultInvalidToolJSON {
		return Turn{fault: kind, calls: []ToolCall{Call("writeFile", `{"gadget": "todo", "file": "server.js", "content": "export`)}}
	}
	return Turn{fault: kind}
}

// HTTPError is a reply of this HTTP status with the provider's error body carrying message.
func HTTPError(status int, message string) Turn {
	return Turn{status: status, message: message}
}

// Func is a reply computed from the request (for a loop that must see the tools' output).
// f must not return a Func or Forever turn.
func Func(f func(Request) Turn) Turn {
	return Turn{fn: f}
}

// Stream is a text reply whose deltas are the strings sent on pieces, each written and flushed
// as it arrives; the reply finishes when pieces is closed. It lets a test decide when each
// delta goes out (to stop a run mid-reply, or to time a delta).
func Stream(pieces <-chan string) Turn {
	return Turn{stream: pieces}
}

// Forever serves t for this request and every later one (an endless tool loop, say).
func Forever(t Turn) Turn {
	t.forever = true
	return t
}

// fragments splits args into pieces of at most FragmentSize bytes, on rune boundaries.
func fragments(args string) []string {
	var out []string
	for args != "" {
		n := min(FragmentSize, len(args))
		for n < len(args) && !utf8.RuneStart(args[n]) {
			n++
		}
		out = append(out, args[:n])
		args = args[n:]
	}
	return out
}
