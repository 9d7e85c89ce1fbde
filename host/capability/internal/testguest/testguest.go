// Package testguest runs the capability test guest (testdata/host.wat), a component that
// imports every atelier:host interface and re-exports each function as `<iface>-<func>`
// (`kv-get`, `events-publish`...), so capability tests call real host functions through a
// real guest.
package testguest

import (
	"bytes"
	"context"
	_ "embed"
	"testing"
	"time"

	"atelier/host/capability/clock"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

//go:embed testdata/host.wat
var guest []byte

// Source returns a copy of the guest's WAT text.
func Source() []byte { return bytes.Clone(guest) }

// Grants are the grants the guest needs.
func Grants() []string {
	return []string{log.Grant, clock.Grant, kv.Grant, events.Grant}
}

// Start instantiates the guest in a new runtime with the given host interfaces; the
// atelier:host interfaces missing from ifaces get their defaults (kv and events with default
// limits, an events bus nobody listens to, a clock stuck at the Unix epoch). cfg.Grants
// defaults to Grants(). Everything is closed when the test ends.
func Start(tb testing.TB, cfg runtime.InstanceConfig, ifaces ...runtime.HostInterface) *runtime.Instance {
	tb.Helper()
	have := make(map[string]bool)
	for _, hi := range ifaces {
		have[wit.Unversioned(hi.Name)] = true
	}
	for _, def := range []runtime.HostInterface{
		log.New(), clock.New(func() time.Time { return time.Unix(0, 0) }),
		kv.New(kv.Limits{}), events.New(events.NewBus(), events.Limits{}),
	} {
		if !have[wit.Unversioned(def.Name)] {
			ifaces = append(ifaces, def)
		}
	}
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: ifaces})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	comp, err := rt.Compile(context.Background(), guest)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(comp.Close)
	if cfg.Grants == nil {
		cfg.Grants = Grants()
	}
	inst, err := rt.Instantiate(context.Background(), comp, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { inst.Close() })
	return inst
}
