package gatekeeper_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
)

// edgeManifest is the manifest of guests/edge-extism.
const edgeManifest = `{
  "name": "edge", "version": "0.1.0", "vendor": "Atelier tests",
  "world": "atelier:gatekeeper/gatekeeper@0.1.0", "format": "extism",
  "egress": {"schemes": ["https"], "hosts": ["edge.example.com"]},
  "credentials": [{"name": "token", "description": "A token", "header": "Authorization", "template": "Bearer {secret}"}],
  "resources": [{"kind": "thing", "urlPattern": "https://edge.example.com/things/:thing",
    "egress": ["https://edge.example.com/api/things/:thing"]}],
  "session": {"methods": ["empty", "notJSON", "silent", "log", "fetch"], "type": "Thing"}
}`

// TestExtismSDKEdges runs the Extism gatekeeper SDK (atelier/sdk/go/extism and its gatekeeper
// and host packages, in guests/edge-extism) in Atelier's Extism host and checks its edges: a
// result that is not JSON and an error without a message fail the call with a clear error
// instead of reaching the host as garbage, a refused fetch is the shared
// *gatekeeper.FetchError, a log level out of range is logged as error.
func TestExtismSDKEdges(t *testing.T) {
	var m gatekeeper.Manifest
	if err := json.Unmarshal([]byte(edgeManifest), &m); err != nil {
		t.Fatal(err)
	}
	g := installExtism(t, newEngine(t, outboundhttp.Options{}), m, edgeExtism(t))
	con := &console{}
	_, s := start(t, g, "alice", "https://edge.example.com/things/one", "s3cret", gatekeeper.NewMemoryQueue(), con)
	ctx := context.Background()
	for _, c := range []struct{ method, want string }{
		{"empty", "the result is not JSON (0 bytes)"},
		{"notJSON", "the result is not JSON (9 bytes)"},
		{"silent", "an error without a message (*errors.errorString)"},
	} {
		if out, err := s.Call(ctx, c.method, "[]"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s = %q, %v; want an error containing %q", c.method, out, err, c.want)
		}
	}
	// A refused fetch is a *gatekeeper.FetchError of kind Denied, with the host's reason.
	out, err := s.Call(ctx, "fetch", `["https://elsewhere.example.com/x"]`)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	var fe struct {
		Kind    string
		Denied  bool
		Message string
	}
	if err := json.Unmarshal([]byte(out), &fe); err != nil || fe.Kind != "denied" || !fe.Denied || !strings.Contains(fe.Message, "elsewhere.example.com") {
		t.Errorf("fetch outside the manifest = %s (%v); want kind denied naming the host", out, err)
	}
	// A level above Error is logged as error, not refused; the other levels are kept.
	if out, err := s.Call(ctx, "log", "[]"); err != nil || out != "null" {
		t.Fatalf("log = %q, %v", out, err)
	}
	if got := con.level("level 7"); got != "error" {
		t.Errorf("level 7 was logged as %q, want error", got)
	}
	if got := con.level("level warn"); got != "warn" {
		t.Errorf("warn was logged as %q", got)
	}
	// The plugin is unharmed by the failed calls.
	if out, err := s.Call(ctx, "log", "[]"); err != nil || out != "null" {
		t.Errorf("log after the failed calls = %q, %v", out, err)
	}
}
