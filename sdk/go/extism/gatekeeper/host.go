//go:build wasip1

package gatekeeper

import (
	"errors"

	"atelier/sdk/go/connector"
	"atelier/sdk/go/extism"
)

//go:wasmimport extism:host/user fetch
func hostFetch(req uint64) uint64

//go:wasmimport extism:host/user authorize_observation
func hostAuthorizeObservation(obs uint64) uint64

//go:wasmimport extism:host/user submit_action
func hostSubmitAction(action uint64) uint64

// The types of connector (atelier/sdk/go/connector) that the host functions take and return,
// shared by both formats.
type (
	// Header is one header line.
	Header = connector.Header
	// Request is an HTTP request for the host to send; URL is absolute.
	Request = connector.Request
	// Response is an HTTP response with its whole body.
	Response = connector.Response
	// FetchErrorKind is why the host did not answer a Fetch.
	FetchErrorKind = connector.FetchErrorKind
	// FetchError is the error of a Fetch the host refused or could not send.
	FetchError = connector.FetchError
	// Observation describes a read about to be returned.
	Observation = connector.Observation
	// ActionKind is the kind of an action.
	ActionKind = connector.ActionKind
	// Action describes a side effect to queue for approval.
	Action = connector.Action
)

// The kinds of FetchError, as in atelier/sdk/go/gatekeeper.
const (
	Denied   = connector.Denied
	Invalid  = connector.Invalid
	TooLarge = connector.TooLarge
	Failed   = connector.Failed
)

// Fetch sends req through the host (host function fetch), which applies the egress policy
// and adds the user's credentials. A refused or failed request returns a *FetchError of kind
// Denied, Invalid, TooLarge or Failed, as in atelier/sdk/go/gatekeeper.
func Fetch(req Request) (*Response, error) {
	var resp Response
	if err := extism.CallHost("fetch", hostFetch, req, &resp); err != nil {
		return nil, fetchError(err)
	}
	return &resp, nil
}

// fetchError turns the host's error of fetch into a *FetchError; a kind fetch does not have
// becomes Failed, with the kind in the message.
func fetchError(err error) error {
	var he *extism.Error
	if !errors.As(err, &he) {
		return err
	}
	if kind, ok := connector.ParseFetchErrorKind(he.Kind); ok {
		return &FetchError{Kind: kind, Message: he.Message}
	}
	return &FetchError{Kind: Failed, Message: he.Error()}
}

// AuthorizeObservation records a read; an error means the data must not be returned.
func AuthorizeObservation(o Observation) error {
	return extism.CallHost("authorize_observation", hostAuthorizeObservation, o, nil)
}

// SubmitAction queues a for approval and returns its number.
func SubmitAction(a Action) (uint64, error) {
	var id uint64
	err := extism.CallHost("submit_action", hostSubmitAction, a, &id)
	return id, err
}
