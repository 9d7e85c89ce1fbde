//go:build wasip1

package gatekeeper

import "atelier/sdk/go/extism"

//go:wasmimport extism:host/user fetch
func hostFetch(req uint64) uint64

//go:wasmimport extism:host/user authorize_observation
func hostAuthorizeObservation(obs uint64) uint64

//go:wasmimport extism:host/user submit_action
func hostSubmitAction(action uint64) uint64

// Header is one header line.
type Header struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Request is an HTTP request for the host to send; URL is absolute.
type Request struct {
	Method  string   `json:"method"`
	URL     string   `json:"url"`
	Headers []Header `json:"headers,omitempty"`
	Body    []byte   `json:"body,omitempty"`
}

// Response is an HTTP response with its whole body.
type Response struct {
	Status  uint16   `json:"status"`
	Headers []Header `json:"headers"`
	Body    []byte   `json:"body"`
}

// Fetch sends req through the host (host function fetch), which applies the egress policy
// and adds the user's credentials. A refused or failed request returns an *extism.Error of
// kind denied, invalid, too-large or failed.
func Fetch(req Request) (*Response, error) {
	var resp Response
	if err := extism.CallHost(hostFetch, req, &resp); err != nil {
		return nil, err
	}
	return &resp, nil
}

// Observation describes a read about to be returned.
type Observation struct {
	Title       string `json:"title"`
	Description string `json:"description"`
}

// AuthorizeObservation records a read; an error means the data must not be returned.
func AuthorizeObservation(o Observation) error {
	return extism.CallHost(hostAuthorizeObservation, o, nil)
}

// ActionKind is the kind of an action.
type ActionKind struct {
	Tag   string `json:"tag"`
	Label string `json:"label"`
}

// Action describes a side effect to queue for approval.
type Action struct {
	Title            string     `json:"title"`
	Description      string     `json:"description"`
	Kind             ActionKind `json:"kind"`
	AutoApprovable   bool       `json:"autoApprovable"`
	ImplementsRevert bool       `json:"implementsRevert"`
	// Payload comes back to ApplyAction, RejectAction and RevertAction.
	Payload string `json:"payload"`
}

// SubmitAction queues a for approval and returns its number.
func SubmitAction(a Action) (uint64, error) {
	var id uint64
	err := extism.CallHost(hostSubmitAction, a, &id)
	return id, err
}
