package runtime

import (
	"errors"
	"fmt"
	"maps"
	"slices"
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

// neverGranted maps the WASI packages no gadget may be granted to the reason given to whoever
// asks for them.
var neverGranted = map[string]string{
	"wasi:sockets":    "sockets are never granted to gadgets; gadgets reach the network only through a gatekeeper binding",
	"wasi:http":       "HTTP is never granted to gadgets; gadgets reach the network only through a gatekeeper binding",
	"wasi:filesystem": "the filesystem is never granted to gadgets (no directory is preopened); keep state in atelier:host/kv",
}

// grantChars are the characters of a WIT interface name with a semver version.
const grantChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-:/@.+"

// InvalidGrantError is a grant that names nothing the host can provide.
type InvalidGrantError struct {
	// Grant is the grant as given.
	Grant string
	// Reason says why it is refused and what to grant instead.
	Reason string
}

// Error implements error: "grant NAME: REASON".
func (e *InvalidGrantError) Error() string { return "grant " + e.Grant + ": " + e.Reason }

// HostInterfaces returns the unversioned names of the host interfaces rt provides, sorted.
func (rt *Runtime) HostInterfaces() []string { return slices.Sorted(maps.Keys(rt.ifaces)) }

// CheckGrant returns nil when grant (an interface name, a version such as "@0.1.0" ignored as
// CheckGrants ignores it) is one rt provides or one of WASIBaseline outside wasi:filesystem,
// and an *InvalidGrantError otherwise: everything under wasi:sockets, wasi:http and
// wasi:filesystem is never granted, and an unknown interface is named with the ones the host
// has.
func (rt *Runtime) CheckGrant(grant string) error {
	if strings.IndexFunc(grant, func(r rune) bool { return !strings.ContainsRune(grantChars, r) }) >= 0 {
		return &InvalidGrantError{Grant: fmt.Sprintf("%q", grant), Reason: "not an interface name; want namespace:package/interface, optionally with @version, such as atelier:host/kv"}
	}
	iface := wit.Unversioned(grant)
	pkg, _, _ := strings.Cut(iface, "/")
	if reason, ok := neverGranted[pkg]; ok {
		return &InvalidGrantError{Grant: grant, Reason: reason}
	}
	if _, ok := rt.ifaces[iface]; ok || slices.Contains(WASIBaseline(), iface) {
		return nil
	}
	return &InvalidGrantError{Grant: grant, Reason: "no such interface; the host provides " +
		strings.Join(rt.HostInterfaces(), ", ") + " (and the WASI cli, clocks, io and random interfaces every gadget has without a grant)"}
}
