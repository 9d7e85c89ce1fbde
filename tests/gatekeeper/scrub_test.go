package gatekeeper_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
)

// TestCredentialReflectionScrubbed: a service inside the granted prefix that reflects the
// request's Authorization header (jsonapi's /echo: in a header, and in a body sent in 5-byte
// chunks, raw, base64, URL-encoded and JSON-escaped) hands the probe gatekeeper none of those
// forms, neither in the result nor in its memory: each is the marker, the rest of the body is
// unchanged, and the removal is recorded as an observation of the account.
func TestCredentialReflectionScrubbed(t *testing.T) {
	svc := startService(t)
	rt := newRuntime(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	m := probeManifest(svc)
	g := install(t, rt, m, guest(t, "tests/gatekeeper/guests/probe"))
	q, con := gatekeeper.NewMemoryQueue(), &console{}
	in, s := start(t, g, "probe-carol", svc.Origin+"/notebooks/lab", carolToken, q, con)

	f, res, err := fetch(s, "GET", svc.Origin+"/api/notebooks/lab/echo?x=1", nil, "")
	if err != nil || f.Status != 200 {
		t.Fatalf("echo: %+v %v", f, err)
	}
	var forms []string
	for _, v := range []string{"Bearer " + carolToken, carolToken} {
		j, _ := json.Marshal(v)
		forms = append(forms, v, base64.StdEncoding.EncodeToString([]byte(v)), base64.RawStdEncoding.EncodeToString([]byte(v)),
			base64.URLEncoding.EncodeToString([]byte(v)), base64.RawURLEncoding.EncodeToString([]byte(v)),
			url.QueryEscape(v), url.PathEscape(v), strings.Trim(string(j), `"`))
	}
	mem := guestMemory(t, in)
	for _, form := range forms {
		if strings.Contains(res, form) || bytes.Contains(mem, []byte(form)) || strings.Contains(con.text(), form) {
			t.Errorf("the probe saw the credential as %q:\n%s", form, res)
		}
	}
	if got := f.Headers["X-Echo-Authorization"]; got != outboundhttp.CredentialMarker {
		t.Errorf("X-Echo-Authorization = %q, want the marker", got)
	}
	lines := strings.Split(strings.TrimSuffix(f.Body, "\n"), "\n")
	if len(lines) != len(forms)+1 || lines[len(lines)-1] != "plain: hello, world" {
		t.Fatalf("the body's lines changed:\n%s", f.Body)
	}
	for _, l := range lines[:len(forms)] {
		if rest := strings.Trim(strings.TrimPrefix(l, "form: "), `"`); rest != outboundhttp.CredentialMarker {
			t.Errorf("body line %q: want the marker alone", l)
		}
	}
	var seen bool
	for _, e := range q.List() {
		if e.Type == gatekeeper.Observed && e.Title == "Credential removed from a response" {
			seen = true
			want := "`GET " + svc.Origin + "/api/notebooks/lab/echo` contained this account's credential (17 times"
			if !strings.Contains(e.Description, want) || e.Origin.Gatekeeper != "probe-carol" || strings.Contains(e.Description, "x=1") {
				t.Errorf("observation %+v: want its description to contain %q", e, want)
			}
		}
	}
	if !seen {
		t.Fatalf("no observation recorded the removal: %+v", q.List())
	}

	// A response without the credential passes unchanged and records nothing more.
	before := len(q.List())
	if f, _, err := fetch(s, "GET", svc.Origin+"/api/notebooks/lab/whoami", nil, ""); err != nil || f.Body != "{\"user\":\"carol\"}\n" {
		t.Fatalf("whoami: %+v %v", f, err)
	}
	if len(q.List()) != before {
		t.Fatalf("a response without the credential was recorded: %+v", q.List())
	}
}
