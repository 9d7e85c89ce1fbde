package provider

import (
	"errors"
	"strings"
)

// The kinds of a failed call; an *Error unwraps to one of them (test with errors.Is).
var (
	// ErrStatus is an HTTP status other than 200 (Error.Status says which).
	ErrStatus = errors.New("provider: the model endpoint refused the request")
	// ErrMalformed is a stream that breaks the provider's wire format: broken SSE, JSON that
	// does not parse, an event of an unexpected shape, invalid tool-call arguments.
	ErrMalformed = errors.New("provider: malformed reply")
	// ErrTooLarge is a reply longer than Config.MaxReply.
	ErrTooLarge = errors.New("provider: reply too large")
	// ErrStalled is a stream that sent nothing for Config.IdleTimeout.
	ErrStalled = errors.New("provider: stream stalled")
	// ErrRefused is the model refusing or failing to answer inside a well-formed stream (an
	// error event, a content filter).
	ErrRefused = errors.New("provider: the model did not answer")
	// ErrEgress is an endpoint address that the host's egress rules refuse (see NewHTTPClient).
	ErrEgress = errors.New("provider: endpoint address not allowed")
	// ErrTransport is a connection that failed (DNS, TCP, TLS, a reset).
	ErrTransport = errors.New("provider: connection failed")
)

// Error is a failed model call. Its text never holds the API key: whatever the provider sent
// back is bounded and scrubbed of it before it gets here.
type Error struct {
	// Kind is one of the Err* kinds above.
	Kind error
	// Status is the HTTP status for ErrStatus, else 0.
	Status int
	msg    string
}

// Error returns the message.
func (e *Error) Error() string { return e.msg }

// Unwrap returns the kind, so that errors.Is(err, ErrStalled) and the like work.
func (e *Error) Unwrap() error { return e.Kind }

// maxQuoted bounds the provider text (an error message, a bad line) quoted in an error.
const maxQuoted = 300

// keyMarker replaces the API key wherever provider text reflects it.
const keyMarker = "[api key removed]"

// scrubber removes an API key from text quoted in errors.
type scrubber string

// text returns s with the key replaced, then bounded to maxQuoted bytes (the key is replaced
// before the cut, so a cut cannot leave part of it behind).
func (k scrubber) text(s string) string {
	if k != "" {
		s = strings.ReplaceAll(s, string(k), keyMarker)
	}
	if len(s) > maxQuoted {
		s = strings.ToValidUTF8(s[:maxQuoted], "") + "…"
	}
	return s
}

// fail returns an *Error of kind with the message msg, whose quoted parts the caller has
// already passed through scrubber.text.
func fail(kind error, msg string) *Error {
	return &Error{Kind: kind, msg: msg}
}
