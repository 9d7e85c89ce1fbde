// Package notessvc runs the loopback notes service of the gatekeeper tests
// (tests/gatekeeper/jsonapi) for tests that drive a real `atelier serve` with the real notes
// gatekeeper (gatekeepers/notes-go): the hook tests of tests/e2e, tests/cluster and
// tests/bench. The service runs as its own process, sends its webhooks to the server over
// loopback, and stops when the test ends.
package notessvc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/gatekeeper"
	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
)

// Token is the API token of the service's user alice, who owns the notebook "work".
const Token = "alice-tok-7f3c9e1d2b5a4c68"

var (
	buildOnce sync.Once
	bin       string
	buildErr  error
)

// Service is one running notes service.
type Service struct {
	Addr   string // 127.0.0.1:PORT
	Origin string // http://127.0.0.1:PORT
}

// Start builds (once per test process) and starts the service with alice owning the notebook
// "work"; it is killed when tb ends.
func Start(tb testing.TB) *Service {
	tb.Helper()
	if testing.Short() {
		tb.Skip("skipped under -short: builds and starts the notes service")
	}
	origin, lines, stop, err := Launch("-token", "alice="+Token, "-notebook", "work=alice")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(stop)
	go func() { // drain the request log
		for lines.Scan() {
		}
	}()
	return &Service{Origin: origin, Addr: strings.TrimPrefix(origin, "http://")}
}

// Launch builds the service (once per test process) and starts it with args (its -token and
// -notebook flags). It returns the origin it listens on, the scanner of its request log (one
// JSON line per request answered, which the caller must read or drain) and stop, which kills it.
func Launch(args ...string) (origin string, log *bufio.Scanner, stop func(), err error) {
	buildOnce.Do(func() {
		root, err := capnwebtests.ModuleRoot()
		if err != nil {
			buildErr = err
			return
		}
		dir, err := os.MkdirTemp("", "atelier-notessvc-")
		if err != nil {
			buildErr = err
			return
		}
		bin = filepath.Join(dir, "jsonapi")
		cmd := exec.Command("go", "build", "-o", bin, "./tests/gatekeeper/jsonapi")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build jsonapi: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		return "", nil, nil, buildErr
	}
	cmd := exec.Command(bin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return "", nil, nil, fmt.Errorf("start the notes service: %w", err)
	}
	stop = func() { cmd.Process.Kill(); cmd.Wait() }
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		stop()
		return "", nil, nil, fmt.Errorf("the notes service did not start: %v", lines.Err())
	}
	origin, ok := strings.CutPrefix(lines.Text(), "listening ")
	if !ok {
		stop()
		return "", nil, nil, fmt.Errorf("the notes service said %q", lines.Text())
	}
	return origin, lines, stop, nil
}

// Notebook is the resource URL of the notebook "work", to connect an account to.
func (s *Service) Notebook() string { return s.Origin + "/notebooks/work" }

// Manifest is the notes gatekeeper's manifest with its egress and resources on the service's
// loopback address, and the digest event's minimum period lowered to pollEveryMs (0 keeps the
// manifest's).
func (s *Service) Manifest(tb testing.TB, pollEveryMs int64) gatekeeper.Manifest {
	tb.Helper()
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		tb.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "gatekeepers/notes-go/manifest.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var m gatekeeper.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		tb.Fatal(err)
	}
	m.Egress = gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{s.Addr}}
	m.Resources[0].URLPattern = s.Origin + "/notebooks/:notebook"
	m.Resources[0].Egress = []string{s.Origin + "/api/notebooks/:notebook"}
	for i := range m.Hooks {
		if m.Hooks[i].Source == gatekeeper.HookPoll && pollEveryMs > 0 {
			m.Hooks[i].MinEveryMs = pollEveryMs
		}
	}
	return m
}

// Archive packs the manifest with the notes gatekeeper built from source.
func (s *Service) Archive(tb testing.TB, m gatekeeper.Manifest) []byte {
	tb.Helper()
	archive, err := gatekeeper.Pack(m, guesttest.Bytes(tb, "gatekeepers/notes-go"))
	if err != nil {
		tb.Fatal(err)
	}
	return archive
}

// AddNote adds a note to the notebook "work" as alice; the service then sends the
// note-added webhooks.
func (s *Service) AddNote(tb testing.TB, title string) {
	tb.Helper()
	body, _ := json.Marshal(map[string]string{"title": title, "body": "body of " + title})
	req, err := http.NewRequest("POST", s.Origin+"/api/notebooks/work/notes", bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		tb.Fatalf("add note: status %d", resp.StatusCode)
	}
}

// Webhooks lists the URLs of the notebook's webhooks at the service.
func (s *Service) Webhooks(tb testing.TB) []string {
	tb.Helper()
	req, _ := http.NewRequest("GET", s.Origin+"/api/notebooks/work/webhooks", nil)
	req.Header.Set("Authorization", "Bearer "+Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Webhooks []struct {
			URL string `json:"url"`
		} `json:"webhooks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		tb.Fatal(err)
	}
	urls := []string{}
	for _, w := range out.Webhooks {
		urls = append(urls, w.URL)
	}
	return urls
}

// Post sends a webhook request as the service does: body signed with secret at ts (Unix
// seconds) under the manifest's headers; it returns the status and the response's JSON.
func Post(tb testing.TB, url string, body, secret []byte, ts time.Time) (int, map[string]any, http.Header) {
	tb.Helper()
	sig := (&gatekeeper.HookSignature{Scheme: gatekeeper.SchemeHMACSHA256, Header: "X-Notes-Signature", Prefix: "sha256=", Encoding: gatekeeper.EncodingHex, TimestampHeader: "X-Notes-Timestamp"})
	value, stamp := sig.Sign(secret, body, ts)
	req, err := http.NewRequest("POST", url, bytes.NewReader(body))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Notes-Signature", value)
	req.Header.Set("X-Notes-Timestamp", stamp)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out, resp.Header
}

// NoteEvent is the body the service sends for a note added.
func NoteEvent(id int, title string) []byte {
	b, _ := json.Marshal(map[string]any{"event": "note-added", "notebook": "work", "note": map[string]any{"id": id, "title": title, "body": "body of " + title}})
	return b
}

// Await awaits p within a minute and fails tb on an error.
func Await(tb testing.TB, p *capnweb.Promise) any {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	v, err := p.Await(ctx)
	if err != nil {
		tb.Fatalf("call failed: %v", err)
	}
	return v
}
