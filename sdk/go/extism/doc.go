//go:build wasip1

// Package extism is the guest side of Extism's ABI for Go plugins built with GOOS=wasip1
// (-buildmode=c-shared), written by hand (no PDK): the kernel functions of extism:host/env that
// move bytes between the plugin's memory and Extism's, the call's input and output, and calls
// of host functions that take and return JSON. Atelier's gatekeeper plugins use it through
// atelier/sdk/go/extism/gatekeeper and atelier/sdk/go/extism/host, which have the API of
// atelier/sdk/go/gatekeeper and the kv and log part of atelier/sdk/go/host: the same Go code
// builds as a component or as an Extism plugin.
//
// Each host function of Atelier (extism:host/user) takes a block holding a JSON request and
// returns a block holding a JSON envelope, {"ok": value} or {"error": {"kind": "...",
// "message": "..."}}; see host/gatekeeper/extism for the list.
package extism
