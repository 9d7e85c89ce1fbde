//go:build wasip1

// Package gatekeeper is the guest side of the atelier:gatekeeper world (wit/gatekeeper) for Go
// gatekeepers built with sdk/build-gadget.sh: Fetch (outbound-http, performed by the host),
// AuthorizeObservation and SubmitAction (approvals), and Register, which exports a Connector
// as the world's `connector` interface. Use atelier/sdk/go/host for kv and log.
//
// A gatekeeper's main package registers its connector in init:
//
//	func init() { gatekeeper.Register(&notes{}) }
//	func main() {}
//
// The canonical ABI is written by hand on top of atelier/sdk/go/cabi; layouts are noted next
// to each call.
package gatekeeper
