package jsruntime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"atelier/host/capability/bindings"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
)

// The engines import exactly their atelier:host interfaces: no WASI (no files, clocks, random,
// sockets, environment), and nothing else.
func TestEngineImports(t *testing.T) {
	os.Unsetenv("RUST_BACKTRACE")
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = t.TempDir()
	}
	rt, err := runtime.New(runtime.Config{
		CacheDir:   filepath.Join(dir, "atelier", "jsruntime-test"),
		Interfaces: []runtime.HostInterface{log.New(), kv.New(kv.Limits{}), events.New(events.NewBus(), events.Limits{}), bindings.New()},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	e, err := New(context.Background(), rt)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, tc := range []struct {
		comp *runtime.Component
		want string
	}{
		{e.snippet, "atelier:host/log@0.1.0 atelier:host/bindings@0.1.0"},
		{e.gadget, "atelier:host/log@0.1.0 atelier:host/kv@0.1.0 atelier:host/events@0.1.0 atelier:host/bindings@0.1.0"},
	} {
		var got []string
		for _, it := range tc.comp.Audit().Imports {
			got = append(got, it.Name)
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("imports %v, want %s", got, tc.want)
		}
	}
}
