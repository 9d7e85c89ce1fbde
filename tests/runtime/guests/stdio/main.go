//go:build wasip1

// Command stdio is a test guest that prints to stdout and stderr, which the host must route to
// the gadget's console log.
package main

import (
	"fmt"
	"os"

	"atelier/sdk/go/cabi"
)

func main() {}

//go:wasmexport say
func say(ptr, n uint32) {
	line := cabi.TakeString(ptr, n)
	fmt.Fprintln(os.Stdout, line)
	fmt.Fprintln(os.Stderr, "stderr: "+line)
}
