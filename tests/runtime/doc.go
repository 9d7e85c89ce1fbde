// Package runtime holds the integration tests and benchmarks of atelier/host/runtime with guests
// built from source: the example gadgets (gadgets/counter-go, counter-js, todo-js, todo-go) and
// the escape guests in guests/, each built once per test run by sdk/build-gadget.sh. Run with
// `go test ./tests/runtime` (skipped under -short) and
// `go test ./tests/runtime -run '^$' -bench BenchmarkGadget` (BenchmarkColdCall: a gadget call
// on a busy host, its instance out of the CPU caches).
package runtime
