package runtime_test

import (
	"errors"
	"strings"
	"testing"

	"atelier/host/runtime"
)

// TestCheckGrant: the host's interfaces and the WASI baseline outside wasi:filesystem may be
// granted, with or without a version; sockets, HTTP, the filesystem, unknown interfaces and
// names that are not interface names are refused with an *InvalidGrantError that says why.
func TestCheckGrant(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	if got := f.rt.HostInterfaces(); strings.Join(got, ",") != "test:echo/host" {
		t.Fatalf("HostInterfaces() = %v, want [test:echo/host]", got)
	}
	for _, g := range []string{"test:echo/host", "test:echo/host@0.1.0", "wasi:cli/stdout", "wasi:random/random@0.2.3"} {
		if err := f.rt.CheckGrant(g); err != nil {
			t.Errorf("CheckGrant(%q) = %v, want nil", g, err)
		}
	}
	for g, want := range map[string]string{
		"wasi:sockets/tcp":           "grant wasi:sockets/tcp: sockets are never granted to gadgets; gadgets reach the network only through a gatekeeper binding",
		"wasi:sockets/udp@0.2.0":     "grant wasi:sockets/udp@0.2.0: sockets are never granted",
		"wasi:http/outgoing-handler": "HTTP is never granted",
		"wasi:filesystem/preopens":   "the filesystem is never granted",
		"test:echo/nonsense":         "grant test:echo/nonsense: no such interface; the host provides test:echo/host (and the WASI",
		"wasi:cli/nonsense":          "no such interface",
		"kv":                         "no such interface",
		"test:echo/host\n":           `grant "test:echo/host\n": not an interface name`,
	} {
		err := f.rt.CheckGrant(g)
		var ig *runtime.InvalidGrantError
		if !errors.As(err, &ig) || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckGrant(%q) = %v, want an *InvalidGrantError containing %q", g, err, want)
		}
	}
}
