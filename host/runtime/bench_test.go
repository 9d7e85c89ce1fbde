package runtime_test

import (
	"os"
	"testing"

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
		Record: "point-local", RecordArg: map[string]any{"x": 1, "y": 2, "label": "a point"},
	}
}

// BenchmarkOverhead runs each operation on testdata/echo.wat through the runtime and through
// the bare C API, back to back: compare BenchmarkOverhead/X/runtime with
// BenchmarkOverhead/X/bare for the runtime's overhead.
func BenchmarkOverhead(b *testing.B) { echoSuite(b).Run(b) }
