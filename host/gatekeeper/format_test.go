package gatekeeper

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// coreModule is the smallest thing that passes Open's header check for extism packages.
var coreModule = []byte{0, 'a', 's', 'm', 1, 0, 0, 0}

// TestFormats: the manifest's format selects the header Open expects (a component by
// default, a core module for extism), unknown formats are refused, and Install takes only
// component packages.
func TestFormats(t *testing.T) {
	m := manifest()
	if m.PackageFormat() != FormatComponent {
		t.Fatalf("default format %q", m.PackageFormat())
	}
	for _, c := range []struct {
		format string
		wasm   []byte
		want   error
	}{
		{"", component, nil},
		{FormatComponent, component, nil},
		{FormatExtism, coreModule, nil},
		{"", coreModule, ErrNotComponent},
		{FormatComponent, coreModule, ErrNotComponent},
		{FormatExtism, component, ErrNotPlugin},
		{FormatExtism, []byte("not wasm at all"), ErrNotPlugin},
	} {
		m.Format = c.format
		archive, err := Pack(m, c.wasm)
		if err != nil {
			t.Fatalf("%q: pack: %v", c.format, err)
		}
		p, err := Open(archive)
		if !errors.Is(err, c.want) {
			t.Errorf("format %q with % x: got %v, want %v", c.format, c.wasm[:4], err, c.want)
		}
		if err == nil && p.Manifest.Format != c.format {
			t.Errorf("format %q read back as %q", c.format, p.Manifest.Format)
		}
	}
	m.Format = "wasi-plugin"
	if _, err := Pack(m, coreModule); !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), `format "wasi-plugin"`) {
		t.Errorf("unknown format: %v", err)
	}
	m.Format = FormatExtism
	archive, _ := Pack(m, coreModule)
	p, err := Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Install(context.Background(), nil, p); !errors.Is(err, ErrNotComponent) || !strings.Contains(err.Error(), "format is extism") {
		t.Errorf("Install took an extism package: %v", err)
	}
}
