package connector

import (
	"strconv"
	"strings"
)

// Header is one header line (`outbound-http.header`).
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Request is an HTTP request for the host to send (`outbound-http.request`); URL is absolute.
type Request struct {
	Method  string   `json:"method"`
	URL     string   `json:"url"`
	Headers []Header `json:"headers,omitempty"`
	Body    []byte   `json:"body,omitempty"`
}

// Response is an HTTP response with its whole body (`outbound-http.response`).
type Response struct {
	Status  uint16   `json:"status"`
	Headers []Header `json:"headers"`
	Body    []byte   `json:"body"`
}

// Header returns the first value of the header name (compared case-insensitively), or "".
func (r *Response) Header(name string) string {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Name, name) {
			return h.Value
		}
	}
	return ""
}

// FetchErrorKind is the case of `outbound-http.error`.
type FetchErrorKind uint8

// The cases of `outbound-http.error`, in WIT order.
const (
	Denied FetchErrorKind = iota
	Invalid
	TooLarge
	Failed
)

// fetchErrorKinds are the WIT names of the FetchErrorKind values, in order.
var fetchErrorKinds = [...]string{"denied", "invalid", "too-large", "failed"}

// String returns the WIT name of the case ("too-large").
func (k FetchErrorKind) String() string {
	if int(k) < len(fetchErrorKinds) {
		return fetchErrorKinds[k]
	}
	return "fetch error kind " + strconv.Itoa(int(k))
}

// ParseFetchErrorKind returns the FetchErrorKind whose WIT name is name, and whether there is one.
func ParseFetchErrorKind(name string) (FetchErrorKind, bool) {
	for i, n := range fetchErrorKinds {
		if n == name {
			return FetchErrorKind(i), true
		}
	}
	return 0, false
}

// FetchError is an `outbound-http.error`: why the host did not answer a Fetch.
type FetchError struct {
	Kind    FetchErrorKind
	Message string
}

// fetchErrorProse are the FetchErrorKind values as Error words them, in order.
var fetchErrorProse = [...]string{"denied", "invalid request", "too large", "failed"}

// Error implements error: the kind in words ("too large"), then the message.
func (e *FetchError) Error() string {
	kind := e.Kind.String()
	if int(e.Kind) < len(fetchErrorProse) {
		kind = fetchErrorProse[e.Kind]
	}
	return kind + ": " + e.Message
}

// Observation describes a read about to be returned (`approvals.observation`).
type Observation struct {
	Title       string `json:"title"`
	Description string `json:"description"`
}

// ActionKind is the kind of an action (`approvals.action-kind`).
type ActionKind struct {
	Tag   string `json:"tag"`
	Label string `json:"label"`
}

// Action describes a side effect to queue for approval (`approvals.action`).
type Action struct {
	Title            string     `json:"title"`
	Description      string     `json:"description"`
	Kind             ActionKind `json:"kind"`
	AutoApprovable   bool       `json:"autoApprovable"`
	ImplementsRevert bool       `json:"implementsRevert"`
	// Payload comes back to ApplyAction, RejectAction and RevertAction.
	Payload string `json:"payload"`
}
