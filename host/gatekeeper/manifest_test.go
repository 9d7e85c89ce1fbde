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

func TestManifestOAuth(t *testing.T) {
	valid := func() Manifest {
		m := manifest()
		m.Component.SHA256 = strings.Repeat("a", 64)
		m.Credentials = nil
		m.OAuth = &OAuth{AuthorizationEndpoint: "https://auth.example/authorize?prompt=consent", TokenEndpoint: "https://auth.example/token",
			Scopes: []string{"notes:read", "offline_access"}, PKCE: "S256", Header: "Authorization", Template: "Bearer {secret}"}
		return m
	}
	m := valid()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	m.OAuth.TokenEndpoint = "http://127.0.0.1:9000/token" // an IP the operator may allow
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		edit func(*Manifest)
		want string
	}{
		{"credentials too", func(m *Manifest) { m.Credentials = manifest().Credentials }, "declares no credentials"},
		{"plain http to a name", func(m *Manifest) { m.OAuth.AuthorizationEndpoint = "http://auth.example/authorize" }, "want https"},
		{"other scheme", func(m *Manifest) { m.OAuth.TokenEndpoint = "javascript:alert(1)" }, "tokenEndpoint"},
		{"relative", func(m *Manifest) { m.OAuth.TokenEndpoint = "/token" }, "tokenEndpoint"},
		{"user info", func(m *Manifest) { m.OAuth.TokenEndpoint = "https://u:p@auth.example/token" }, "user info"},
		{"fragment", func(m *Manifest) { m.OAuth.AuthorizationEndpoint = "https://auth.example/a#x" }, "fragment"},
		{"preset state", func(m *Manifest) { m.OAuth.AuthorizationEndpoint = "https://auth.example/a?state=x" }, "sets state"},
		{"preset redirect", func(m *Manifest) {
			m.OAuth.AuthorizationEndpoint = "https://auth.example/a?redirect_uri=https://evil.example"
		}, "redirect_uri"},
		{"no pkce", func(m *Manifest) { m.OAuth.PKCE = "" }, "PKCE is required"},
		{"plain pkce", func(m *Manifest) { m.OAuth.PKCE = "plain" }, "oauth.pkce"},
		{"scope with a space", func(m *Manifest) { m.OAuth.Scopes = []string{"a b"} }, "oauth.scopes"},
		{"scope with a quote", func(m *Manifest) { m.OAuth.Scopes = []string{`a"b`} }, "oauth.scopes"},
		{"header", func(m *Manifest) { m.OAuth.Header = "Host" }, "oauth.header"},
		{"template", func(m *Manifest) { m.OAuth.Template = "Bearer" }, "oauth.template"},
		{"template newline", func(m *Manifest) { m.OAuth.Template = "{secret}\nX: y" }, "oauth.template"},
	} {
		m := valid()
		c.edit(&m)
		err := m.Validate()
		if !errors.Is(err, ErrBadManifest) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want a manifest error about %q", c.name, err, c.want)
		}
	}
}
