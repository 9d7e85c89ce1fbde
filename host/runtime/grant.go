package runtime

import (
	"errors"
	"strings"

	"atelier/host/runtime/wit"
)

// WASIBaseline returns the WASI interfaces that are harmless to grant to any component: stdio
// (into the console), the (empty) environment, exit, terminals, clocks, randomness, streams and
// the filesystem types and preopens (no directory is ever preopened). wasi:sockets/* and
// wasi:http/* are never part of it. The slice is new on every call.
func WASIBaseline() []string {
	return []string{
		"wasi:cli/environment", "wasi:cli/exit", "wasi:cli/stdin", "wasi:cli/stdout", "wasi:cli/stderr",
		"wasi:cli/terminal-input", "wasi:cli/terminal-output",
		"wasi:cli/terminal-stdin", "wasi:cli/terminal-stdout", "wasi:cli/terminal-stderr",
		"wasi:clocks/monotonic-clock", "wasi:clocks/wall-clock",
		"wasi:random/random", "wasi:random/insecure", "wasi:random/insecure-seed",
		"wasi:io/error", "wasi:io/poll", "wasi:io/streams",
		"wasi:filesystem/types", "wasi:filesystem/preopens",
	}
}

// isWASI reports whether iface belongs to a WASI package Wasmtime's wasip2 linker provides.
func isWASI(iface string) bool {
	pkg, _, _ := strings.Cut(iface, "/")
	switch pkg {
	case "wasi:cli", "wasi:clocks", "wasi:filesystem", "wasi:io", "wasi:random", "wasi:sockets":
		return true
	}
	return false
}

// CheckGrants decides, before instantiation, whether a component whose imports are `imports`
// may run with `grants` (unversioned interface names, see WASIBaseline) when the host provides
// the interfaces for which `provided` reports true. It returns nil, or the errors.Join of one
// *UngrantedImportError or *UnprovidedImportError per refused import. It is a pure function.
func CheckGrants(imports []wit.Item, grants []string, provided func(iface string) bool) error {
	granted := make(map[string]bool, len(grants))
	for _, g := range grants {
		granted[wit.Unversioned(g)] = true
	}
	var errs []error
	for _, it := range imports {
		iface := it.Interface()
		switch {
		case !granted[iface]:
			errs = append(errs, &UngrantedImportError{Import: it.Name, Grant: iface})
		case it.Kind != wit.ItemInstance || !(isWASI(iface) || provided(iface)):
			errs = append(errs, &UnprovidedImportError{Import: it.Name})
		}
	}
	return errors.Join(errs...)
}
