package authoring

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/gatekeeper/extism"
	"atelier/host/runtime"
	"atelier/tests/serveproc"
)

// exampleOrigin is the service the gatekeeper templates are written for.
const exampleOrigin = "https://api.example.com"

// TestGatekeeperTemplateEgress makes a gatekeeper from each template, points it at
// a loopback service (the edit its README asks for: the origin in manifest.json and in the
// code), builds it and runs the package in-process on a runtime that allows that one address
// (`atelier serve` dials public addresses only). status() goes out through the host, which
// adds the user's token (the service answers 401 without it); its answer comes back as JSON
// and is recorded as an observation; a refused request's error (a response body over the
// host's limit) reaches the caller with its kind. The session API also round-trips escaped and non-ASCII
// text (invoke's JSON arguments, the action's payload, the kv state) and refuses an unknown
// method and malformed arguments with an error.
func TestGatekeeperTemplateEgress(t *testing.T) {
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer s3cret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		board, ok := strings.CutSuffix(strings.TrimPrefix(r.URL.Path, "/api/boards/"), "/status")
		if !ok || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if board == "huge" { // over the host's 4 MiB limit on response bodies
			io.WriteString(w, `{"board":"huge","notes":"`+strings.Repeat("x", 5<<20)+`"}`)
			return
		}
		io.WriteString(w, `{"board":"`+board+`","open":true,"notes":3}`)
	}))
	defer svc.Close()
	bin := cli{t: t, bin: serveproc.Binary(t, tmpDir)}
	cache, extra := toolCache(t)
	bin.env = append(append(os.Environ(), "ATELIER_CACHE="+cache), extra...)
	ifaces, err := gatekeeper.Interfaces(outboundhttp.Options{AllowAddrs: []string{svc.Listener.Addr().String()}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{CacheDir: filepath.Join(tmpDir, "egress-artifacts"), Interfaces: ifaces})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	eng, err := extism.New(extism.Options{Egress: outboundhttp.Options{AllowAddrs: []string{svc.Listener.Addr().String()}}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	install := func(ctx context.Context, pkg *gatekeeper.Package) (*gatekeeper.Gatekeeper, error) {
		if pkg.Manifest.PackageFormat() == gatekeeper.FormatExtism {
			return eng.Install(ctx, pkg)
		}
		return gatekeeper.Install(ctx, rt, pkg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for _, tmpl := range gatekeeperTemplates() {
		t.Run(tmpl.name, func(t *testing.T) {
			work := t.TempDir()
			name := tmpl.name + "-egress"
			bin.run(work, tmpl.newArgs(name)...)
			pointAt(t, filepath.Join(work, name), svc.URL)
			bin.run(work, "build", name)
			archive, err := os.ReadFile(filepath.Join(work, name, "build", name+".gkp"))
			if err != nil {
				t.Fatal(err)
			}
			pkg, err := gatekeeper.Open(archive)
			if err != nil {
				t.Fatal(err)
			}
			gk, err := install(ctx, pkg)
			if err != nil {
				t.Fatal(err)
			}
			defer gk.Close()
			queue := gatekeeper.NewMemoryQueue()
			in, err := gk.Start(ctx, gatekeeper.Account{Name: name, Resource: svc.URL + "/boards/main",
				Credentials: map[string]string{"token": "s3cret"}, Queue: queue})
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			s, err := in.OpenSession(ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			out, err := s.Call(ctx, "status", "[]")
			if err != nil {
				t.Fatalf("status: %v", err)
			}
			var got any
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatalf("status = %q, not JSON: %v", out, err)
			}
			if want := map[string]any{"board": "main", "open": true, "notes": float64(3)}; !reflect.DeepEqual(got, want) {
				t.Fatalf("status = %v, want %v", got, want)
			}
			entries := queue.List()
			if len(entries) != 1 || entries[0].Type != gatekeeper.Observed || entries[0].Title != "Read the status of main" {
				t.Fatalf("queue after status = %+v, want one observation of main's status", entries)
			}
			text := "Zoë \"quoted\"\n\\"
			arg, _ := json.Marshal([]string{text})
			if out := call(t, s, "hello", string(arg)); out != "hello "+text+" from board main" {
				t.Fatalf("hello = %q", out)
			}
			action := call(t, s, "pin", string(arg)).(map[string]any)["action"].(float64)
			if err := queue.Approve(ctx, uint64(action)); err != nil {
				t.Fatal(err)
			}
			if out := call(t, s, "pinned", "[]"); !reflect.DeepEqual(out, []any{text}) {
				t.Fatalf("pinned = %q, want [%q]", out, text)
			}
			huge, err := gk.Start(ctx, gatekeeper.Account{Name: name + "-huge", Resource: svc.URL + "/boards/huge",
				Credentials: map[string]string{"token": "s3cret"}, Queue: queue})
			if err != nil {
				t.Fatal(err)
			}
			defer huge.Close()
			hs, err := huge.OpenSession(ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			if out, err := hs.Call(ctx, "status", "[]"); err == nil || !tooLarge.MatchString(err.Error()) {
				t.Fatalf("status of a board whose answer is over the limit = %q, %v; want the host's too-large error", out, err)
			}
			if _, err := s.Call(ctx, "unpin", `["x"]`); err == nil || !strings.Contains(err.Error(), "unknown method") {
				t.Fatalf("unpin = %v, want an unknown method error", err)
			}
			if out, err := s.Call(ctx, "hello", `["ada"`); err == nil {
				t.Fatalf("hello with truncated JSON arguments = %q, want an error", out)
			}
		})
	}
}

// tooLarge is the host's too-large error as a template reports it (the WIT variant's case, or
// the SDK's rendering of it), with the host's reason.
var tooLarge = regexp.MustCompile(`too[- ]large: .*response body exceeds`)

// pointAt replaces the example service's origin with origin in the project's manifest and
// code, as its README says to do for a real service.
func pointAt(t *testing.T, dir, origin string) {
	t.Helper()
	host := strings.TrimPrefix(origin, "http://")
	for _, f := range []string{"manifest.json", "main.go", "app.js", "app.ts", "main.c"} {
		path := filepath.Join(dir, f)
		data, err := os.ReadFile(path)
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		s := strings.ReplaceAll(string(data), exampleOrigin, origin)
		if f == "manifest.json" {
			s = strings.NewReplacer(`["https"]`, `["http"]`, `"api.example.com"`, `"`+host+`"`).Replace(s)
		}
		if s == string(data) {
			t.Fatalf("%s does not name %s", f, exampleOrigin)
		}
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// call calls method on s and returns its decoded JSON result, failing the test on an error.
func call(t *testing.T, s *gatekeeper.Session, method, args string) any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	out, err := s.Call(ctx, method, args)
	if err != nil {
		t.Fatalf("%s(%s): %v", method, args, err)
	}
	var v any
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("%s(%s) = %q, not JSON: %v", method, args, out, err)
	}
	return v
}
