package runtime_test

import (
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/runtimebench"
	"atelier/sdk/guesttest"
)

// BenchmarkGadget runs the standard operations (see package runtimebench: compile, cached_load,
// instantiate, noop_call, echo_string_1KiB, record_roundtrip) on the Go and the JS gadget,
// each through the runtime and through the bare C API back to back.
func BenchmarkGadget(b *testing.B) {
	for _, g := range []struct {
		name, dir string
		grants    []string
	}{{"go", counterGo, counterGrants}, {"js", todoJS, todoGrants}} {
		b.Run(g.name, func(b *testing.B) {
			runtimebench.Suite{
				Wasm:       guesttest.Bytes(b, g.dir),
				Grants:     append(runtime.WASIBaseline(), g.grants...),
				Interfaces: runtimeConfig("").Interfaces,
				Noop:       "noop",
				EchoString: "echo",
				Record:     "roundtrip",
				RecordArg:  benchSample(),
			}.Run(b)
		})
	}
}
