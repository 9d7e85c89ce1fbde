//go:build wasip1

// Package host is the Go guest binding of the `atelier:host@0.1.0` interfaces (wit/host/host.wit),
// written by hand on top of package cabi. Each function is a `//go:wasmimport` of one WIT
// function; Go's linker drops the imports a gadget never calls, so a gadget's component imports
// (and must be granted) only the interfaces it uses.
package host
