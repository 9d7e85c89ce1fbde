// Package capability is the home of Atelier's host capabilities. Each subpackage is one unit
// (after Spin's factors): it declares the WIT interface it implements (from wit/host/host.wit)
// and returns a runtime.HostInterface that the runtime defines on a linker only for instances
// granted it. Adding a capability means adding a package here and listing it where the runtime
// is built (cmd/atelier); nothing else changes.
//
//   - log:    atelier:host/log, lines into the instance's console
//   - clock:  atelier:host/clock, the host's wall clock
//   - kv:     atelier:host/kv, the gadget's key-value state behind kv.Store
//   - events: atelier:host/events, JSON events behind events.Publisher
//   - hooks:  atelier:host/hooks, a gadget's hooks behind hooks.Registry
package capability
