package gatekeeper_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/extism"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// plugin is an Extism plugin the tests build once per test process.
type plugin struct {
	once sync.Once
	wasm []byte
	err  error
}

var notesPlugin, edgePlugin plugin

// build returns the plugin's module, building it first (once per test process) with the
// command cmd returns, which writes it to out; name names it in the file and the errors.
func (p *plugin) build(t testing.TB, name string, cmd func(out string) *exec.Cmd) []byte {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped under -short: builds the plugin")
	}
	p.once.Do(func() {
		dir, err := os.MkdirTemp("", "atelier-"+name+"-")
		if err != nil {
			p.err = err
			return
		}
		out := filepath.Join(dir, name+".wasm")
		if log, err := cmd(out).CombinedOutput(); err != nil {
			p.err = fmt.Errorf("build %s: %v\n%s", name, err, log)
			return
		}
		p.wasm, p.err = os.ReadFile(out)
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return p.wasm
}

// notesExtism builds gatekeepers/notes-extism with its build.sh.
func notesExtism(t testing.TB) []byte {
	return notesPlugin.build(t, "notes-extism", func(out string) *exec.Cmd {
		return exec.Command("bash", "../../gatekeepers/notes-extism/build.sh", out)
	})
}

// edgeExtism builds guests/edge-extism as that build.sh builds notes-extism.
func edgeExtism(t testing.TB) []byte {
	return edgePlugin.build(t, "edge-extism", func(out string) *exec.Cmd {
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-buildmode=c-shared", "-o", out, "./guests/edge-extism")
		cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm")
		return cmd
	})
}

// newEngine returns an Extism engine whose egress allows the given loopback addresses.
func newEngine(t testing.TB, opts outboundhttp.Options) *extism.Engine {
	t.Helper()
	e, err := extism.New(extism.Options{Egress: opts})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// extismManifest is gatekeepers/notes-extism/manifest.json pointed at the service's origin.
func extismManifest(t testing.TB, s *service) gatekeeper.Manifest {
	t.Helper()
	m := notesManifest(t, s)
	m.Format = gatekeeper.FormatExtism
	return m
}

// installExtism packs wasm with m, opens it and installs it on e.
func installExtism(t testing.TB, e *extism.Engine, m gatekeeper.Manifest, wasm []byte) *gatekeeper.Gatekeeper {
	t.Helper()
	p := pack(t, m, wasm)
	g, err := e.Install(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(g.Close)
	return g
}

func pack(t testing.TB, m gatekeeper.Manifest, wasm []byte) *gatekeeper.Package {
	t.Helper()
	archive, err := gatekeeper.Pack(m, wasm)
	if err != nil {
		t.Fatal(err)
	}
	p, err := gatekeeper.Open(archive)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestNotesExtism runs the TestNotes scenario on the Extism build of the notes gatekeeper:
// same manifest (format extism), same queue, same service, same results.
func TestNotesExtism(t *testing.T) {
	svc := startService(t)
	e := newEngine(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	runNotes(t, svc, installExtism(t, e, extismManifest(t, svc), notesExtism(t)))
}

// TestExtismEgress: the plugin's requests go through the same policy as a component's. A
// grant narrower than what the plugin asks for, a host outside the manifest and a loopback
// address that is not allowed are refused before anything reaches a service.
func TestExtismEgress(t *testing.T) {
	svc, other := startService(t), startService(t)
	e := newEngine(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	wasm := notesExtism(t)
	q := gatekeeper.NewMemoryQueue()

	// The grant covers /api/archive/NAME only; the plugin reads /api/notebooks/NAME.
	narrow := extismManifest(t, svc)
	narrow.Resources[0].Egress = []string{svc.Origin + "/api/archive/:notebook"}
	// The resource lives on the other service, which is loopback but not allowed.
	elsewhere := extismManifest(t, other)
	for _, c := range []struct {
		name     string
		m        gatekeeper.Manifest
		resource string
		want     string
	}{
		{"outside the grant", narrow, svc.Origin + "/notebooks/work", "denied: URL \"" + svc.Origin + "/api/notebooks/work/notes\" is outside the granted resource"},
		{"loopback not allowed", elsewhere, other.Origin + "/notebooks/work", "denied: refusing to dial " + other.Addr + ": not a public address"},
	} {
		g := installExtism(t, e, c.m, wasm)
		_, s := start(t, g, "alice", c.resource, aliceToken, q, nil)
		if _, err := callErr(s, "list"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
		// The plugin is unharmed by the refusal: it answers the next call.
		if _, err := callErr(s, "nonsense"); err == nil || !strings.Contains(err.Error(), "unknown method") {
			t.Errorf("%s: the plugin did not answer after a refusal: %v", c.name, err)
		}
	}
	if r := append(svc.requests(), other.requests()...); len(r) != 0 {
		t.Errorf("refused requests reached a service: %+v", r)
	}
	// Extism's own HTTP is out of reach: installation refuses a plugin importing it (see
	// TestExtismBadPlugins), and the host sends nothing the manifest does not allow.
}

// TestSecretNeverInExtism drives the notes plugin through authenticated reads and an applied
// write, then scans its whole memory (the plugin's own linear memory and the Extism kernel's,
// which the plugin can read) for the token. A marker the service returned must be found by the
// same scan, which shows the scan sees what the plugin received.
func TestSecretNeverInExtism(t *testing.T) {
	svc := startService(t)
	e := newEngine(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	g := installExtism(t, e, extismManifest(t, svc), notesExtism(t))
	q := gatekeeper.NewMemoryQueue()
	con := &console{}
	in, s := start(t, g, "alice-work", svc.Origin+"/notebooks/work", aliceToken, q, con)
	ctx := context.Background()
	const marker = "marker-7c4a8d09ca3762af61e59520943dc264"
	var p pending
	call(t, s, &p, "add", marker, "b")
	if err := q.Approve(ctx, p.Action); err != nil {
		t.Fatal(err)
	}
	var results []string
	for _, m := range []string{"list", "get"} {
		args := []any{}
		if m == "get" {
			args = append(args, 1)
		}
		res, err := callErr(s, m, args...)
		if err != nil || !strings.Contains(res, marker) {
			t.Fatalf("%s: %q %v", m, res, err)
		}
		results = append(results, res)
	}
	plugin, kernel := in.Guest().(*extism.Guest).Memory()
	if len(plugin) == 0 || len(kernel) == 0 {
		t.Fatalf("memory not visible: plugin %d bytes, kernel %d bytes", len(plugin), len(kernel))
	}
	for name, mem := range map[string][]byte{"plugin": plugin, "kernel": kernel} {
		if !bytes.Contains(mem, []byte(marker)) {
			t.Fatalf("the %s memory scan did not find the marker the plugin received: the scan is broken", name)
		}
		if i := bytes.Index(mem, []byte(aliceToken)); i >= 0 {
			t.Fatalf("the credential is in the %s memory at %#x", name, i)
		}
	}
	for _, r := range results {
		if strings.Contains(r, aliceToken) {
			t.Fatalf("the credential is in a result: %s", r)
		}
	}
	for _, e := range q.List() {
		if strings.Contains(e.Title+e.Description+e.Payload+e.Result, aliceToken) {
			t.Fatalf("the credential is in queue entry %+v", e)
		}
	}
	if strings.Contains(con.text(), aliceToken) {
		t.Fatal("the credential is in the console")
	}
	for _, r := range svc.requests() {
		if r.User != "alice" {
			t.Fatalf("request %+v did not carry alice's token", r)
		}
	}
}

// TestExtismLimits: the account's limits become the plugin's memory cap, call timeout and
// output bound. A plugin over its memory cap does not run; a call that waits past its deadline
// fails and retires the instance; the engine still starts working instances afterwards; an
// output past MaxResult is refused with a *wit.SizeError.
func TestExtismLimits(t *testing.T) {
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer slow.Close()
	svc := &service{Origin: slow.URL, Addr: strings.TrimPrefix(slow.URL, "http://")}
	e := newEngine(t, outboundhttp.Options{AllowAddrs: []string{svc.Addr}})
	g := installExtism(t, e, extismManifest(t, svc), notesExtism(t))
	ctx := context.Background()
	acct := gatekeeper.Account{
		Name: "alice", Resource: svc.Origin + "/notebooks/work", Credentials: map[string]string{"token": aliceToken},
		Queue: gatekeeper.NewMemoryQueue(),
	}

	// Below the module's declared minimum the plugin is refused at start; above it but below
	// what the Go runtime grows to, its first call fails.
	small := acct
	small.Limits = runtime.Limits{MaxMemory: 1 << 20}
	if in, err := g.Start(ctx, small); err == nil || !strings.Contains(err.Error(), "over limit of 16 pages") {
		if in != nil {
			in.Close()
		}
		t.Fatalf("a plugin started with 1 MiB of memory: %v", err)
	}
	tight := acct
	tight.Limits = runtime.Limits{MaxMemory: 3 << 20}
	in, err := g.Start(ctx, tight)
	if err != nil {
		t.Fatal(err)
	}
	_, err = in.OpenSession(ctx, "agent:1")
	in.Close()
	if !errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("a Go plugin ran in 3 MiB of memory: %v", err)
	}

	short := acct
	short.Limits = runtime.Limits{Timeout: 300 * time.Millisecond}
	in, err = g.Start(ctx, short)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	s, err := in.OpenSession(ctx, "agent:1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err = callErr(s, "list"); !errors.Is(err, runtime.ErrDeadline) {
		t.Fatalf("a call past its deadline: %v", err)
	}
	if _, err := callErr(s, "list"); !errors.Is(err, runtime.ErrRetired) {
		t.Fatalf("the call after a deadline: %v", err)
	}
	fresh, err := g.Start(ctx, acct)
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if ts, err := fresh.TypeScriptTypes(ctx); err != nil || !strings.Contains(ts, "interface Notebook") {
		t.Fatalf("a fresh instance after the limits: %q %v", ts, err)
	}

	terse := acct
	terse.Limits = runtime.Limits{MaxResult: 64}
	in, err = g.Start(ctx, terse)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if ts, err := in.TypeScriptTypes(ctx); !errors.Is(err, wit.ErrTooLarge) {
		t.Fatalf("an output past a 64-byte MaxResult: %q %v", ts, err)
	}
}

// TestExtismBadPlugins: installation refuses plugins that import more than Extism's kernel,
// the host functions and the WASI baseline (Extism's own HTTP included), that miss plugin
// functions, that are not core modules, or that come in the other format's installer.
func TestExtismBadPlugins(t *testing.T) {
	svc := startService(t)
	e := newEngine(t, outboundhttp.Options{})
	rt := newRuntime(t, outboundhttp.Options{})
	m := extismManifest(t, svc)
	var all []string
	for _, fn := range extism.Exports {
		all = append(all, strings.ReplaceAll(fn, "-", "_"))
	}
	for _, c := range []struct {
		name string
		wasm []byte
		want error
		text string
	}{
		{"Extism's HTTP", coreModule([][2]string{{"extism:host/env", "alloc"}, {"extism:host/env", "http_request"}}, all), gatekeeper.ErrExcessImports, "function extism:host/env.http_request"},
		{"Extism's vars", coreModule([][2]string{{"extism:host/env", "var_set"}}, all), gatekeeper.ErrExcessImports, "extism:host/env.var_set"},
		{"WASI files", coreModule([][2]string{{"wasi_snapshot_preview1", "path_open"}}, all), gatekeeper.ErrExcessImports, "wasi_snapshot_preview1.path_open"},
		{"WASI sockets", coreModule([][2]string{{"wasi_snapshot_preview1", "sock_accept"}}, all), gatekeeper.ErrExcessImports, "sock_accept"},
		{"an unknown host function", coreModule([][2]string{{"extism:host/user", "secret"}}, all), gatekeeper.ErrExcessImports, "extism:host/user.secret"},
		{"another module", coreModule([][2]string{{"env", "abort"}}, all), gatekeeper.ErrExcessImports, "env.abort"},
		{"missing plugin functions", coreModule(nil, all[:3]), gatekeeper.ErrWorldMismatch, "typescript_types"},
		{"corrupted module", coreModule(nil, all)[:30], gatekeeper.ErrNotPlugin, ""},
	} {
		g, err := e.Install(context.Background(), pack(t, m, c.wasm))
		if err == nil {
			g.Close()
			t.Errorf("%s: installed", c.name)
			continue
		}
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: got %v; want %v mentioning %q", c.name, err, c.want, c.text)
		}
	}
	// A plugin whose resource kinds differ from the manifest's.
	folders := m
	folders.Resources = []gatekeeper.ResourcePattern{{Kind: "folder", URLPattern: svc.Origin + "/folders/:f", Egress: []string{svc.Origin + "/api/folders/:f"}}}
	if _, err := e.Install(context.Background(), pack(t, folders, notesExtism(t))); !errors.Is(err, gatekeeper.ErrWorldMismatch) || !strings.Contains(err.Error(), "[notebook]") {
		t.Errorf("other resource kinds: %v", err)
	}
	// Formats do not cross: a component in an extism package, a plugin in a component
	// package, and each installer given the other's package.
	component := notesManifest(t, svc)
	for _, c := range []struct {
		m    gatekeeper.Manifest
		wasm []byte
		want error
	}{{m, guest(t, "gatekeepers/notes-go"), gatekeeper.ErrNotPlugin}, {component, notesExtism(t), gatekeeper.ErrNotComponent}} {
		archive, err := gatekeeper.Pack(c.m, c.wasm)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := gatekeeper.Open(archive); !errors.Is(err, c.want) {
			t.Errorf("format %q with the other format's wasm: %v", c.m.Format, err)
		}
	}
	if _, err := e.Install(context.Background(), pack(t, component, guest(t, "gatekeepers/notes-go"))); !errors.Is(err, gatekeeper.ErrNotPlugin) {
		t.Errorf("the extism installer took a component package: %v", err)
	}
	if _, err := gatekeeper.Install(context.Background(), rt, pack(t, m, notesExtism(t))); !errors.Is(err, gatekeeper.ErrNotComponent) {
		t.Errorf("the component installer took an extism package: %v", err)
	}
	// The engine is unharmed: the real plugin installs and answers.
	g := installExtism(t, e, m, notesExtism(t))
	if g.Vendor.DisplayName != "Notes" {
		t.Fatalf("vendor %+v", g.Vendor)
	}
}

// coreModule encodes a core module that imports the given functions (type () -> ()) and
// exports functions of type () -> i32 under the given names, each returning 0.
func coreModule(imports [][2]string, exports []string) []byte {
	uleb := func(b []byte, n int) []byte {
		for {
			c := byte(n & 0x7f)
			if n >>= 7; n != 0 {
				b = append(b, c|0x80)
				continue
			}
			return append(b, c)
		}
	}
	name := func(b []byte, s string) []byte { return append(uleb(b, len(s)), s...) }
	section := func(out []byte, id byte, body []byte) []byte {
		return append(uleb(append(out, id), len(body)), body...)
	}
	out := []byte{0, 'a', 's', 'm', 1, 0, 0, 0}
	out = section(out, 1, []byte{2, 0x60, 0, 1, 0x7f, 0x60, 0, 0}) // types: () -> i32, () -> ()
	imp := uleb(nil, len(imports))
	for _, i := range imports {
		imp = append(name(name(imp, i[0]), i[1]), 0, 1)
	}
	out = section(out, 2, imp)
	fns := uleb(nil, len(exports))
	for range exports {
		fns = append(fns, 0)
	}
	out = section(out, 3, fns)
	exp := uleb(nil, len(exports))
	for i, e := range exports {
		exp = uleb(append(name(exp, e), 0), len(imports)+i)
	}
	out = section(out, 7, exp)
	code := uleb(nil, len(exports))
	for range exports {
		code = append(code, 4, 0, 0x41, 0, 0x0b) // no locals; i32.const 0; end
	}
	return section(out, 10, code)
}
