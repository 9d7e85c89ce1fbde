package runtime_test

import (
	"os"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/runtime"
	"atelier/host/runtime/runtimebench"
)

func echoSuite(b *testing.B) runtimebench.Suite {
	src, err := os.ReadFile("testdata/echo.wat")
	if err != nil {
		b.Fatal(err)
	}
	h := &echoHost{last: make(map[string]any)}
	return runtimebench.Suite{
		Wasm: src, Grants: echoGrants, Interfaces: []runtime.HostInterface{h.iface()},
		Noop: "noop", EchoString: "echo-string-local",
		// The record in the form records reach the runtime from Cap'n Web (capnweb.Object) and
		// leave Lift: an ordered.Object.
		Record: "point-local", RecordArg: ordered.Object{{Key: "x", Value: 1}, {Key: "y", Value: 2}, {Key: "label", Value: "a point"}},
	}
}

// BenchmarkOverhead runs each operation on testdata/echo.wat through the runtime and through
// the bare C API, back to back: compare BenchmarkOverhead/X/runtime with
// BenchmarkOverhead/X/bare for the runtime's overhead.
func BenchmarkOverhead(b *testing.B) { echoSuite(b).Run(b) }
