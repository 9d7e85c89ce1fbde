package gatekeeper_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
)

// TestBadPackages installs packages that must be refused, each with the error that names why.
func TestBadPackages(t *testing.T) {
	svc := startService(t)
	rt := newRuntime(t, outboundhttp.Options{})
	notes := guest(t, "gatekeepers/notes-go")
	m := notesManifest(t, svc)

	truncated := notes[:len(notes)/2] // keeps the component header, loses the rest
	otherKinds := m
	otherKinds.Resources = []gatekeeper.ResourcePattern{{Kind: "folder", URLPattern: svc.Origin + "/folders/:f", Egress: []string{svc.Origin + "/api/folders/:f"}}}
	for _, c := range []struct {
		name string
		m    gatekeeper.Manifest
		wasm []byte
		want error
		text string
	}{
		{"excess imports", m, guest(t, "host/capability/internal/testguest/testdata"), gatekeeper.ErrExcessImports, "atelier:host/events"},
		{"a gadget, not a gatekeeper", m, guest(t, "gadgets/counter-go"), gatekeeper.ErrWorldMismatch, "does not export"},
		{"resource kinds differ from the manifest", otherKinds, notes, gatekeeper.ErrWorldMismatch, "[notebook]"},
		{"corrupted wasm", m, truncated, gatekeeper.ErrNotComponent, "compile"},
	} {
		archive, err := gatekeeper.Pack(c.m, c.wasm)
		if err != nil {
			t.Fatalf("%s: pack: %v", c.name, err)
		}
		p, err := gatekeeper.Open(archive)
		if err != nil {
			t.Fatalf("%s: open: %v", c.name, err)
		}
		g, err := gatekeeper.Install(context.Background(), rt, p)
		if err == nil {
			g.Close()
			t.Errorf("%s: installed", c.name)
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v; want %v mentioning %q", c.name, err, c.want, c.text)
		}
	}
	// The runtime is unharmed: a good package still installs and runs.
	install(t, rt, m, notes)
}
