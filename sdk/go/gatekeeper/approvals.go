//go:build wasip1

package gatekeeper

import (
	"errors"

	"atelier/sdk/go/cabi"
	"atelier/sdk/go/connector"
)

// The approval types of connector (atelier/sdk/go/connector), shared by both formats.
type (
	// Observation describes a read (`approvals.observation`).
	Observation = connector.Observation
	// ActionKind is the kind of an action (`approvals.action-kind`).
	ActionKind = connector.ActionKind
	// Action describes a side effect to queue for approval (`approvals.action`).
	Action = connector.Action
)

//go:wasmimport atelier:gatekeeper/approvals@0.1.0 authorize-observation
func approvalsAuthorize(title, description string, ret uint32)

//go:wasmimport atelier:gatekeeper/approvals@0.1.0 submit-action
func approvalsSubmit(title, description, tag, label string, auto, revert uint32, payload string, ret uint32)

// AuthorizeObservation records a read before its data is returned (`approvals.authorize-
// observation`). An error means the data must not be returned.
func AuthorizeObservation(o Observation) error {
	ret := cabi.Ret()
	approvalsAuthorize(o.Title, o.Description, ret) // result<_, string>: tag@0, err@4
	if cabi.Load8(ret) == 0 {
		return nil
	}
	return errors.New("observation refused: " + cabi.TakeString(cabi.Load32(ret+4), cabi.Load32(ret+8)))
}

// SubmitAction queues a side effect and returns its number (`approvals.submit-action`). The
// effect happens later, in the connector's ApplyAction.
func SubmitAction(a Action) (uint64, error) {
	ret := cabi.Ret()
	approvalsSubmit(a.Title, a.Description, a.Kind.Tag, a.Kind.Label, b2u(a.AutoApprovable), b2u(a.ImplementsRevert), a.Payload, ret)
	// result<u64, string>: tag@0, payload@8.
	if cabi.Load8(ret) != 0 {
		return 0, errors.New("action refused: " + cabi.TakeString(cabi.Load32(ret+8), cabi.Load32(ret+12)))
	}
	return cabi.Load64(ret + 8), nil
}

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}
