package gatekeeper_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/runtime"
	"atelier/sdk/guesttest"
	"atelier/tests/notessvc"
)

// Users, their tokens and notebooks on the test service.
const (
	aliceToken = "alice-tok-7f3c9e1d2b5a4c68"
	bobToken   = "bob-tok-1a2b3c4d5e6f7081"
	// carolToken has characters that every encoding changes.
	carolToken = `carol/t0k+en?&"<x>~ 9`
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	code := m.Run()
	for _, stop := range stops {
		stop()
	}
	os.Exit(code)
}

var (
	stops   []func()
	stopsMu sync.Mutex
)

// service is one running jsonapi process.
type service struct {
	Addr   string // 127.0.0.1:PORT
	Origin string // http://127.0.0.1:PORT

	mu      sync.Mutex
	read    *sync.Cond // signalled for each marker read and when the log ends
	log     []request
	marks   map[string]bool // marker paths read (see requests)
	ended   bool            // the service's stdout is closed
	markSeq int
}

// markPrefix starts the paths of the marker requests that requests makes.
const markPrefix = "/_marker/"

// request is one line of the service's request log.
type request struct {
	Method, Path, User string
	Status             int
}

// requests returns the log of every request the service answered before the call. The
// service writes a request's log line before the response leaves, but the line reaches the
// test through a pipe and a goroutine: a marker request, logged after every earlier one, tells
// when the log read so far is complete. Marker requests are left out of the log.
func (s *service) requests() []request {
	s.mu.Lock()
	s.markSeq++
	mark := fmt.Sprintf("%s%d", markPrefix, s.markSeq)
	s.mu.Unlock()
	resp, err := http.Get(s.Origin + mark)
	if err == nil {
		resp.Body.Close()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for err == nil && !s.marks[mark] && !s.ended {
		s.read.Wait()
	}
	return append([]request(nil), s.log...)
}

// startService builds (once) and starts a jsonapi process with alice owning "work", bob
// owning "home" and carol "lab"; it runs until the test binary exits.
func startService(t testing.TB) *service {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: builds guests and starts a service")
	}
	origin, lines, stop, err := notessvc.Launch("-token", "alice="+aliceToken, "-token", "bob="+bobToken, "-notebook", "work=alice", "-notebook", "home=bob",
		"-token", "carol="+carolToken, "-notebook", "lab=carol")
	if err != nil {
		t.Fatal(err)
	}
	stopsMu.Lock()
	stops = append(stops, stop)
	stopsMu.Unlock()
	s := &service{Origin: origin, Addr: strings.TrimPrefix(origin, "http://"), marks: map[string]bool{}}
	s.read = sync.NewCond(&s.mu)
	go func() {
		for lines.Scan() {
			var r request
			if json.Unmarshal(lines.Bytes(), &r) != nil {
				continue
			}
			s.mu.Lock()
			if strings.HasPrefix(r.Path, markPrefix) {
				s.marks[r.Path] = true
				s.read.Broadcast()
			} else {
				s.log = append(s.log, r)
			}
			s.mu.Unlock()
		}
		s.mu.Lock()
		s.ended = true
		s.read.Broadcast()
		s.mu.Unlock()
	}()
	return s
}

// direct calls the service from the test process, as the user with token.
func (s *service) direct(t testing.TB, method, path, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, s.Origin+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// newRuntime returns a runtime with the gatekeeper interfaces; loopback is allowed only for
// the addresses given.
func newRuntime(t testing.TB, opts outboundhttp.Options) *runtime.Runtime {
	t.Helper()
	return newRuntimeIn(t, opts, t.TempDir())
}

// newRuntimeIn is newRuntime with its compile cache in cacheDir, which a server restarted on
// the same data file keeps (as `atelier serve` does), so a restart does not compile its
// gatekeepers again within a call's deadline.
func newRuntimeIn(t testing.TB, opts outboundhttp.Options, cacheDir string) *runtime.Runtime {
	t.Helper()
	gk, err := gatekeeper.Interfaces(opts)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: cacheDir, Interfaces: gk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// notesManifest is gatekeepers/notes-go/manifest.json pointed at the service's origin.
func notesManifest(t testing.TB, s *service) gatekeeper.Manifest {
	t.Helper()
	data, err := os.ReadFile("../../gatekeepers/notes-go/manifest.json")
	if err != nil {
		t.Fatal(err)
	}
	var m gatekeeper.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m.Egress = gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{s.Addr}}
	m.Resources[0].URLPattern = s.Origin + "/notebooks/:notebook"
	m.Resources[0].Egress = []string{s.Origin + "/api/notebooks/:notebook"}
	return m
}

// install packs wasm with m, opens and installs it.
func install(t testing.TB, rt *runtime.Runtime, m gatekeeper.Manifest, wasm []byte) *gatekeeper.Gatekeeper {
	t.Helper()
	archive, err := gatekeeper.Pack(m, wasm)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gatekeeper.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gatekeeper.Install(context.Background(), rt, p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

// console collects an instance's console lines.
type console struct {
	mu    sync.Mutex
	lines []runtime.ConsoleLine
}

func (c *console) add(l runtime.ConsoleLine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lines = append(c.lines, l)
}

// text returns the lines' text, one a line.
func (c *console) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	texts := make([]string, len(c.lines))
	for i, l := range c.lines {
		texts[i] = l.Text
	}
	return strings.Join(texts, "\n")
}

// level returns the level of the first line whose text is text, or "(no line)".
func (c *console) level(text string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.lines {
		if l.Text == text {
			return l.Level
		}
	}
	return "(no line)"
}

// start starts an instance of g for the account and opens a session.
func start(t testing.TB, g *gatekeeper.Gatekeeper, name, resource, token string, q gatekeeper.Queue, con *console) (*gatekeeper.Instance, *gatekeeper.Session) {
	t.Helper()
	ctx := context.Background()
	acct := gatekeeper.Account{
		Name: name, Resource: resource, Credentials: map[string]string{"token": token}, Queue: q,
		Limits: runtime.Limits{Timeout: 10 * time.Second},
	}
	if con != nil {
		acct.Console = con.add
	}
	in, err := g.Start(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close() })
	s, err := in.OpenSession(ctx, "agent:"+name)
	if err != nil {
		t.Fatal(err)
	}
	return in, s
}

// call calls a session method and decodes the JSON result into out (when not nil).
func call(t testing.TB, s *gatekeeper.Session, out any, method string, args ...any) {
	t.Helper()
	res, err := callErr(s, method, args...)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if out != nil {
		if err := json.Unmarshal([]byte(res), out); err != nil {
			t.Fatalf("%s: result %q: %v", method, res, err)
		}
	}
}

func callErr(s *gatekeeper.Session, method string, args ...any) (string, error) {
	if args == nil {
		args = []any{}
	}
	a, err := json.Marshal(args)
	if err != nil {
		return "", err
	}
	return s.Call(context.Background(), method, string(a))
}

// guest returns the component built from a guest folder (relative to the repository root).
func guest(t testing.TB, dir string) []byte { return guesttest.Bytes(t, dir) }

// probeManifest is the manifest of the probe gatekeeper (tests/gatekeeper/guests/probe) for
// the notebooks of svc.
func probeManifest(svc *service) gatekeeper.Manifest {
	return gatekeeper.Manifest{
		Name: "probe", Version: "1", Vendor: "tests", World: gatekeeper.World,
		Egress:      gatekeeper.Egress{Schemes: []string{"http"}, Hosts: []string{svc.Addr}},
		Credentials: []gatekeeper.Credential{{Name: "token", Header: "Authorization", Template: "Bearer {secret}"}},
		Resources:   []gatekeeper.ResourcePattern{{Kind: "notebook", URLPattern: svc.Origin + "/notebooks/:notebook", Egress: []string{svc.Origin + "/api/notebooks/:notebook"}}},
	}
}

// probeWorkspace installs the probe gatekeeper on s (as the admin), connects an account of
// alice's on each of notebooks, and creates a workspace of alice's whose gadget "caller"
// (callerJS) binds each account under its notebook's name. It returns the workspace, its id
// and the account ids by notebook.
func probeWorkspace(t *testing.T, s *server, svc *service, notebooks ...string) (ws *capnweb.Promise, wsID any, accounts map[string]string) {
	t.Helper()
	ctx := context.Background()
	admin, alice := s.authed(t, s.adminToken(t)), s.user(t, "alice")
	id := installGatekeeper(t, admin, probeManifest(svc), guest(t, "tests/gatekeeper/guests/probe"))
	ws = alice.Call(ctx, "createWorkspace", "home")
	wsID = await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	grants := []any{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}
	await(t, ws.Call(ctx, "createGadget", "caller", map[string]any{"server.js": callerJS}, grants))
	accounts = map[string]string{}
	for _, nb := range notebooks {
		acct := await(t, alice.Call(ctx, "connectAccount", id, svc.Origin+"/notebooks/"+nb, map[string]any{"token": aliceToken})).(map[string]any)["id"].(string)
		await(t, ws.Call(ctx, "bindGatekeeper", "caller", nb, acct))
		accounts[nb] = acct
	}
	return ws, wsID, accounts
}

// callProbe calls method of the caller gadget's binding in ws and returns the result.
func callProbe(t *testing.T, ws *capnweb.Promise, binding, method string, args ...any) any {
	t.Helper()
	ctx := context.Background()
	if args == nil {
		args = []any{}
	}
	return await(t, ws.Call(ctx, "gadget", "caller").Call(ctx, "connect").Call(ctx, "call", binding, method, args))
}

// installGatekeeper packs wasm with m and installs the package through admin's API; it
// returns the package id.
func installGatekeeper(t *testing.T, admin *capnweb.Promise, m gatekeeper.Manifest, wasm []byte) string {
	t.Helper()
	archive, err := gatekeeper.Pack(m, wasm)
	if err != nil {
		t.Fatal(err)
	}
	return await(t, admin.Call(context.Background(), "installGatekeeper", archive)).(map[string]any)["id"].(string)
}
