package gatekeeper_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
)

// probeSetup installs the probe with a manifest that allows the allowed service (svc) and a
// second real service (other) whose address is loopback but NOT in AllowAddrs, both by IP and
// by the name localhost; the probe's instance is alice's on notebook work.
func probeSetup(t *testing.T) (svc, other *service, in *gatekeeper.Instance, s *gatekeeper.Session, q *gatekeeper.MemoryQueue, con *console) {
	svc, other = startService(t), startService(t)
	port := other.Addr[strings.LastIndex(other.Addr, ":")+1:]
	rt := newRuntime(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}, MaxResponseBody: 1 << 20, MaxRequestBody: 1 << 16})
	m := gatekeeper.Manifest{
		Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress:      gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{svc.Addr, other.Addr, "localhost:" + port}},
		Credentials: []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources: []gatekeeper.ResourcePattern{{
			Kind: "notebook", URLPattern: svc.Origin + "/notebooks/:notebook",
			Egress: []string{svc.Origin + "/api/notebooks/:notebook", other.Origin + "/api/notebooks/:notebook", "http://localhost:" + port + "/api/notebooks/:notebook"},
		}},
	}
	g := install(t, rt, m, guest(t, "tests/gatekeeper/guests/probe"))
	q, con = gatekeeper.NewMemoryQueue(), &console{}
	in, s = start(t, g, "probe-alice", svc.Origin+"/notebooks/work", aliceToken, q, con)
	return
}

type fetched struct {
	Status  int               `json:"status"`
	Body    string            `json:"body"`
	Headers map[string]string `json:"headers"`
}

func fetch(s *gatekeeper.Session, method, url string, headers map[string]string, body string) (fetched, string, error) {
	res, err := callErr(s, "fetch", method, url, headers, body)
	var f fetched
	if err == nil {
		err = json.Unmarshal([]byte(res), &f)
	}
	return f, res, err
}

// TestEgress tries every way out of the grant. Each attempt must fail with a policy error,
// and none may reach a service.
func TestEgress(t *testing.T) {
	svc, other, _, s, _, _ := probeSetup(t)
	otherPort := other.Addr[strings.LastIndex(other.Addr, ":")+1:]
	work := svc.Origin + "/api/notebooks/work"

	f, _, err := fetch(s, "GET", work+"/whoami", nil, "")
	if err != nil || f.Status != 200 || !strings.Contains(f.Body, `"alice"`) {
		t.Fatalf("allowed request: %+v %v", f, err)
	}
	before := len(svc.requests())

	for _, c := range []struct {
		name, method, url string
		headers           map[string]string
		body, want        string
	}{
		{"another user's resource", "GET", svc.Origin + "/api/notebooks/home/notes", nil, "", "outside the granted resource"},
		{"dot segments", "GET", work + "/../home/notes", nil, "", `".." segment`},
		{"encoded dots", "GET", work + "/%2e%2e/home/notes", nil, "", `"%2e"`},
		{"encoded slash", "GET", work + "%2F..%2Fhome/notes", nil, "", `"%2f"`},
		{"prefix without boundary", "GET", svc.Origin + "/api/notebooks/workshop/notes", nil, "", "outside the granted resource"},
		{"host not in the manifest", "GET", "http://localhost:" + svc.Addr[strings.LastIndex(svc.Addr, ":")+1:] + "/api/notebooks/work/notes", nil, "", "not allowed by the manifest"},
		{"public host not in the manifest", "GET", "http://example.com/api/notebooks/work/notes", nil, "", "not allowed by the manifest"},
		{"scheme not in the manifest", "GET", "https://" + svc.Addr + "/api/notebooks/work/notes", nil, "", `scheme "https"`},
		{"file URL", "GET", "file:///etc/passwd", nil, "", "not absolute"},
		{"user info", "GET", "http://alice:pw@" + svc.Addr + "/api/notebooks/work/notes", nil, "", "user information"},
		{"loopback by IP, not allowed", "GET", other.Origin + "/api/notebooks/work/whoami", nil, "", "not a public address"},
		{"loopback by name, not allowed", "GET", "http://localhost:" + otherPort + "/api/notebooks/work/whoami", nil, "", "not a public address"},
		{"redirect", "GET", work + "/redirect", nil, "", "redirect (HTTP 302)"},
		{"response too large", "GET", work + "/big?bytes=2000000", nil, "", "too large"},
		{"request too large", "POST", work + "/notes", nil, strings.Repeat("x", 70000), "too large"},
		{"own credential header", "GET", work + "/whoami", map[string]string{"Authorization": "Bearer " + bobToken}, "", "carries the credential"},
		{"own credential header, lower case", "GET", work + "/whoami", map[string]string{"authorization": "Bearer x"}, "", "carries the credential"},
		{"host header", "GET", work + "/whoami", map[string]string{"Host": "example.com"}, "", "set by the host"},
		{"header injection", "GET", work + "/whoami", map[string]string{"X-A": "1\r\nAuthorization: x"}, "", "CR, LF or NUL"},
		{"bad method", "CONNECT", work + "/whoami", nil, "", "method"},
	} {
		_, res, err := fetch(s, c.method, c.url, c.headers, c.body)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %q, %v; want an error containing %q", c.name, res, err, c.want)
		}
	}
	// Only the redirect and the oversized response reached the allowed service; nothing
	// reached the other one.
	if n := len(svc.requests()) - before; n != 2 {
		t.Errorf("%d refused requests reached the service: %+v", n, svc.requests()[before:])
	}
	if r := other.requests(); len(r) != 0 {
		t.Errorf("the non-allowed loopback service was reached: %+v", r)
	}
}

// TestSecretNeverInGuest checks that the user's token never enters the gatekeeper: the probe
// makes authenticated requests, then the test reads its whole linear memory through the
// probe's debug exports and searches it, the results, the queue and the console for the token.
// A marker the service returned in a response body must be found by the same scan, which
// shows the scan sees what the guest received.
func TestSecretNeverInGuest(t *testing.T) {
	svc, _, in, s, q, con := probeSetup(t)
	ctx := context.Background()
	const marker = "marker-5d41402abc4b2a76b9719d911017c592"
	var results []string
	for _, path := range []string{"/whoami", "/notes"} {
		_, res, err := fetch(s, "GET", svc.Origin+"/api/notebooks/work"+path, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		results = append(results, res)
	}
	_, res, err := fetch(s, "POST", svc.Origin+"/api/notebooks/work/notes", map[string]string{"Content-Type": "application/json"}, `{"title":"`+marker+`","body":"b"}`)
	if err != nil || !strings.Contains(res, marker) {
		t.Fatalf("post: %q %v", res, err)
	}
	results = append(results, res)
	if _, err := callErr(s, "observe", "read"); err != nil {
		t.Fatal(err)
	}
	id, err := callErr(s, "submit", "poke", false)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	json.Unmarshal([]byte(id), &n)
	if err := q.Approve(ctx, n); err != nil {
		t.Fatal(err)
	}

	mem := guestMemory(t, in)
	if !bytes.Contains(mem, []byte(marker)) {
		t.Fatal("the memory scan did not find the marker the guest received: the scan is broken")
	}
	for _, secret := range []string{aliceToken, "Bearer " + aliceToken} {
		if i := bytes.Index(mem, []byte(secret)); i >= 0 {
			t.Fatalf("the credential is in guest memory at %#x", i)
		}
		for _, r := range results {
			if strings.Contains(r, secret) {
				t.Fatalf("the credential is in a result: %s", r)
			}
		}
		for _, e := range q.List() {
			if strings.Contains(e.Title+e.Description+e.Payload+e.Result, secret) {
				t.Fatalf("the credential is in queue entry %+v", e)
			}
		}
		if strings.Contains(con.text(), secret) {
			t.Fatalf("the credential is in the console")
		}
	}
}

// guestMemory reads the probe's whole linear memory (from address 1) in chunks.
func guestMemory(t *testing.T, in *gatekeeper.Instance) []byte {
	t.Helper()
	raw := in.Runtime()
	ctx := context.Background()
	v, err := raw.Call(ctx, "debug-memory-size")
	if err != nil {
		t.Fatal(err)
	}
	size := v.(uint32)
	const chunk = 1 << 20
	var mem []byte
	for off := uint32(1); off < size; off += chunk {
		n := min(chunk, size-off)
		b, err := raw.Call(ctx, "debug-memory", off, n)
		if err != nil {
			t.Fatalf("read memory at %#x: %v", off, err)
		}
		mem = append(mem, b.([]byte)...)
	}
	if uint32(len(mem)) != size-1 {
		t.Fatalf("read %d bytes of %d", len(mem), size)
	}
	return mem
}

// TestActionChecks: the host refuses malformed actions, and a guest's auto-approvable claim
// counts only for kinds its manifest lists (the probe's lists none).
func TestActionChecks(t *testing.T) {
	_, _, _, s, q, _ := probeSetup(t)
	if _, err := callErr(s, "submit", "Bad Tag", false); err == nil || !strings.Contains(err.Error(), "kind tag") {
		t.Fatalf("bad tag: %v", err)
	}
	q.AutoApprove("probe-alice", "poke")
	id, err := callErr(s, "submit", "poke", true)
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	json.Unmarshal([]byte(id), &n)
	for _, e := range q.List() {
		if e.ID == n && (e.State != gatekeeper.Pending || e.AutoApprovable) {
			t.Fatalf("an action the manifest does not let users auto-approve: %+v", e)
		}
	}
}
