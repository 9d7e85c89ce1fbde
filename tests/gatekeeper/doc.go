// Package gatekeeper_test runs gatekeepers end to end: the example notes gatekeeper
// (gatekeepers/notes-go) and a hostile probe (guests/probe) are built with sdk/build-gadget.sh,
// packaged, installed and run against the jsonapi notes service (jsonapi/), started as a
// separate process on loopback. BenchmarkFetch also builds guests/hop-c, the C gatekeeper
// template with a main.c that does almost nothing of its own, with the authoring kit's builder.
// The Extism builds (gatekeepers/notes-extism, and guests/edge-extism, which drives the edges of
// the Extism SDK, atelier/sdk/go/extism) run on the Extism host. The hooks tests have the
// service deliver signed webhook requests to a receiver of the test's. Run with
// `go test ./tests/gatekeeper` (skipped under -short); fuzz webhook signatures with
// `go test ./tests/gatekeeper -run '^$' -fuzz FuzzHookSignatureVerify`.
package gatekeeper
