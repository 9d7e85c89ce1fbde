package gatekeeper

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestManifestValidate(t *testing.T) {
	m := manifest()
	m.Component.SHA256 = strings.Repeat("a", 64)
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*Manifest)
		want string
	}{
		{"name", func(m *Manifest) { m.Name = "Notes!" }, "name"},
		{"hash", func(m *Manifest) { m.Component.SHA256 = "xyz" }, "sha256"},
		{"scheme", func(m *Manifest) { m.Egress.Schemes = []string{"ftp"} }, "ftp"},
		{"wildcard host", func(m *Manifest) { m.Egress.Hosts = []string{"*.example"} }, "egress.hosts"},
		{"host with path", func(m *Manifest) { m.Egress.Hosts = []string{"api.notes.example/v1"} }, "egress.hosts"},
		{"credential header", func(m *Manifest) { m.Credentials[0].Header = "Host" }, "header"},
		{"credential template", func(m *Manifest) { m.Credentials[0].Template = "Bearer" }, "{secret}"},
		{"template newline", func(m *Manifest) { m.Credentials[0].Template = "{secret}\r\nX: y" }, "{secret}"},
		{"egress host not allowed", func(m *Manifest) { m.Resources[0].Egress = []string{"https://evil.example/:nb"} }, "not in egress.hosts"},
		{"egress scheme not allowed", func(m *Manifest) { m.Resources[0].Egress = []string{"http://api.notes.example/:nb"} }, "not in egress.schemes"},
		{"unknown parameter", func(m *Manifest) { m.Resources[0].Egress = []string{"https://api.notes.example/:other"} }, ":other"},
		{"dot segment", func(m *Manifest) { m.Resources[0].Egress = []string{"https://api.notes.example/../:nb"} }, "segment"},
		{"no resources", func(m *Manifest) { m.Resources = nil }, "resources"},
		{"tag", func(m *Manifest) { m.AutoApprovable = []string{"Add Note"} }, "autoApprovable"},
		{"no session methods", func(m *Manifest) { m.Session = &SessionAPI{} }, "session.methods"},
		{"session method name", func(m *Manifest) { m.Session = &SessionAPI{Methods: []string{"list", "drop table"}} }, "drop table"},
		{"session method twice", func(m *Manifest) { m.Session = &SessionAPI{Methods: []string{"list", "list"}} }, `"list"`},
		{"session type", func(m *Manifest) { m.Session = &SessionAPI{Methods: []string{"list"}, Type: "Note<T>"} }, "session.type"},
	} {
		m := manifest()
		m.Component.SHA256 = strings.Repeat("a", 64)
		m.Credentials = slices.Clone(m.Credentials)
		m.Resources = slices.Clone(m.Resources)
		c.edit(&m)
		err := m.Validate()
		if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a manifest error about %q", c.name, err, c.want)
		}
	}
}

func TestGrantFor(t *testing.T) {
	m := manifest()
	g, err := m.GrantFor("https://NOTES.example:443/notebooks/work")
	if err != nil {
		t.Fatal(err)
	}
	if g.Kind != "notebook" || !slices.Equal(g.Prefixes, []string{"https://api.notes.example/v1/notebooks/work"}) {
		t.Fatalf("grant %+v", g)
	}
	for _, bad := range []string{
		"https://notes.example/notebooks/work/extra",
		"https://notes.example/notebooks/",
		"https://notes.example/notebooks/..",
		"https://notes.example/notebooks/%2e%2e",
		"https://notes.example/notebooks/a%2Fb",
		"http://notes.example/notebooks/work",
		"https://evil.example/notebooks/work",
		"https://user@notes.example/notebooks/work",
		"https://notes.example/notebooks/work?x=1",
		"https://notes.example:8443/notebooks/work",
	} {
		if g, err := m.GrantFor(bad); err == nil {
			t.Errorf("%s granted %+v", bad, g)
		}
	}
}
