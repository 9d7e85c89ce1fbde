// Package runtime holds the integration tests and benchmarks of atelier/host/runtime with guests
// built from source: the example gadgets (gadgets/counter-go, gadgets/todo-js) and the escape
// guests in guests/, each built once per test run by sdk/build-gadget.sh. Run with
// `go test ./tests/runtime` (skipped under -short) and
// `go test ./tests/runtime -run '^$' -bench BenchmarkGadget`.
package runtime
