//go:build wasip1

// Package gatekeeper is the guest side of an Atelier gatekeeper built as an Extism plugin
// (manifest "format": "extism"), with the API of atelier/sdk/go/gatekeeper: Register exports
// a Connector as the plugin functions of host/gatekeeper/extism (describe, resource_kinds,
// ..., with JSON input and output), and Fetch, AuthorizeObservation and SubmitAction call
// Atelier's host functions. Use atelier/sdk/go/extism/host for kv and log. A connector written
// for atelier/sdk/go/gatekeeper builds unchanged against this package:
//
//	func init() { gatekeeper.Register(&notes{}) }
//	func main() {}
//
// Build with `GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared` (what `atelier build` does
// for a project whose atelier.json says "format": "extism"). The types are those of
// atelier/sdk/go/connector, as in the component SDK; Fetch's errors are *FetchError values,
// those of the other host functions *extism.Error values.
package gatekeeper
