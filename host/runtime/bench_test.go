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

// BenchmarkRuntime and BenchmarkBare run the same operations on testdata/echo.wat; compare
// BenchmarkRuntime/X with BenchmarkBare/X for the runtime's overhead.
func BenchmarkRuntime(b *testing.B) { echoSuite(b).RunRuntime(b) }

// BenchmarkBare: see BenchmarkRuntime.
func BenchmarkBare(b *testing.B) { echoSuite(b).RunBare(b) }
