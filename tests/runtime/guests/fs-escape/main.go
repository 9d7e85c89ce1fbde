//go:build wasip1

// Command fs-escape is a test guest that tries to read the host's files with the Go standard
// library (os.ReadFile, os.ReadDir). With no preopened directories both must fail.
package main

import (
	"os"
	"strings"

	"atelier/sdk/go/cabi"
)

func main() {}

//go:wasmexport read-file
func readFile(ptr, n uint32) uint32 {
	b, err := os.ReadFile(cabi.TakeString(ptr, n))
	return cabi.ReturnResultString(string(b), err)
}

//go:wasmexport read-dir
func readDir(ptr, n uint32) uint32 {
	entries, err := os.ReadDir(cabi.TakeString(ptr, n))
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return cabi.ReturnResultString(strings.Join(names, "\n"), err)
}
