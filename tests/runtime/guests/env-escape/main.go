//go:build wasip1

// Command env-escape is a test guest that reports the environment variables and arguments it
// sees; the host must pass none.
package main

import (
	"os"

	"atelier/sdk/go/cabi"
)

func main() {}

//go:wasmexport env
func env() uint32 { return cabi.ReturnStrings(os.Environ()) }

//go:wasmexport args
func args() uint32 { return cabi.ReturnStrings(os.Args) }
