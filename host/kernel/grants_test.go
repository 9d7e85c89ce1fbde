package kernel_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"atelier/host/store"
	"atelier/sdk/guesttest"
)

// refusedGrants are grants no gadget may hold, each with the part of the refusal that says why.
var refusedGrants = map[string]string{
	"wasi:sockets/tcp":                     "grant wasi:sockets/tcp: sockets are never granted to gadgets; gadgets reach the network only through a gatekeeper binding",
	"wasi:sockets/ip-name-lookup@0.2.0":    "grant wasi:sockets/ip-name-lookup@0.2.0: sockets are never granted",
	"wasi:filesystem/types":                "grant wasi:filesystem/types: the filesystem is never granted",
	"wasi:http/outgoing-handler":           "grant wasi:http/outgoing-handler: HTTP is never granted",
	"atelier:host/nonsense":                "grant atelier:host/nonsense: no such interface; the host provides atelier:host/bindings, atelier:host/clock, atelier:host/events, atelier:host/hooks, atelier:host/kv, atelier:host/log",
	"atelier:gatekeeper/outbound-http":     "grant atelier:gatekeeper/outbound-http: no such interface",
	"wasi:keyvalue/store":                  "grant wasi:keyvalue/store: no such interface",
	"atelier:host/kv@0.1.0\x00":            `grant "atelier:host/kv@0.1.0\x00": not an interface name`,
	"atelier:host/kv/../../wasi:sockets/x": "no such interface",
}

// TestGrantsTheHostCannotProvideAreRefused: createGadget, deploy, createGadgetFromBlueprint and
// importBlueprint refuse every grant the runtime does not provide with INVALID_ARGUMENT naming
// it and why, and change nothing; versioned grants the host provides work as unversioned ones.
func TestGrantsTheHostCannotProvideAreRefused(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	code := guesttest.Bytes(t, counterGo)
	counter := ws.Call(ctx, "createGadget", "counter", code, []string{"atelier:host/kv@0.1.0", "atelier:host/log", "wasi:cli/stdout"})
	if got := await(t, counter.Call(ctx, "connect").Call(ctx, "increment", 2)); got != float64(2) {
		t.Fatalf("a gadget with a versioned grant: increment(2) = %v", got)
	}
	bp := await(t, ws.Call(ctx, "publishBlueprint", "counter", "Counter", "counts")).(string)
	archive := await(t, ws.Call(ctx, "exportBlueprint", bp)).([]byte)
	for grant, why := range refusedGrants {
		grants := append(slices.Clone(counterGrants), grant)
		refused(t, ws.Call(ctx, "createGadget", "other", code, grants), "INVALID_ARGUMENT", why)
		refused(t, counter.Call(ctx, "deploy", code, grants), "INVALID_ARGUMENT", why)
		refused(t, ws.Call(ctx, "importBlueprint", withGrants(t, archive, grants)), "INVALID_ARGUMENT", why)
	}
	if gs := await(t, ws.Call(ctx, "listGadgets")).([]any); len(gs) != 1 {
		t.Fatalf("refused grants left gadgets: %v", gs)
	}
	info := await(t, counter.Call(ctx, "info")).(map[string]any)
	if info["current"] != float64(1) || len(info["grants"].([]any)) != 3 {
		t.Fatalf("refused deploys changed the gadget: %v", info)
	}
	if bps := await(t, ws.Call(ctx, "listBlueprints")).([]any); len(bps) != 1 {
		t.Fatalf("refused imports left blueprints: %v", bps)
	}
}

// TestStoredBadGrantIsIgnored: a gadget stored with a grant the host cannot provide (accepted
// before grants were checked) still loads and runs with the grant ignored; its info lists the
// grant; a deploy that keeps the grants works, a rollback too, and a blueprint published from it
// leaves the grant out. A blueprint stored with such a grant cannot be instantiated.
func TestStoredBadGrantIsIgnored(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	s := startServer(t, data)
	api := s.user(t, "ada")
	ws, id, app := home(t, api)
	bp := await(t, ws.Call(ctx, "publishBlueprint", "counter", "Counter", "counts")).(string)
	s.stop()
	bp = addGrant(t, data, store.WorkspaceID(id), bp, "wasi:sockets/tcp")

	s = startServer(t, data)
	root := s.dial(t)
	tok := await(t, root.Call(ctx, "login", "ada", "password-ada")).(string)
	ws = root.Call(ctx, "authenticate", tok).Call(ctx, "openWorkspace", id)
	counter := ws.Call(ctx, "gadget", "counter")
	app = counter.Call(ctx, "connect")
	if got := await(t, app.Call(ctx, "increment", 2)); got != float64(3) {
		t.Fatalf("a gadget stored with a bad grant: increment(2) = %v, want 3", got)
	}
	info := await(t, counter.Call(ctx, "info")).(map[string]any)
	if !slices.Contains(anyStrings(info["grants"].([]any)), "wasi:sockets/tcp") {
		t.Fatalf("info no longer lists the stored grant: %v", info)
	}
	await(t, counter.Call(ctx, "deploy", guesttest.Bytes(t, counterGo)))
	await(t, counter.Call(ctx, "rollback", 1))
	if got := await(t, app.Call(ctx, "get")); got != float64(3) {
		t.Fatalf("after deploy and rollback get() = %v, want 3", got)
	}
	refused(t, ws.Call(ctx, "createGadgetFromBlueprint", bp, "again"), "INVALID_ARGUMENT", "grant wasi:sockets/tcp: sockets are never granted")
	fresh := await(t, ws.Call(ctx, "publishBlueprint", "counter", "Counter", "counts")).(string)
	if got := await(t, ws.Call(ctx, "createGadgetFromBlueprint", fresh, "again").Call(ctx, "info")).(map[string]any); len(got["grants"].([]any)) != 2 {
		t.Fatalf("a blueprint of a gadget with a bad grant kept it: %v", got)
	}
	refused(t, counter.Call(ctx, "deploy", guesttest.Bytes(t, counterGo), anyStrings(info["grants"].([]any))), "INVALID_ARGUMENT", "grant wasi:sockets/tcp")
}

// addGrant adds grant to every gadget of workspace ws and to a copy of blueprint bp, whose id it
// returns, directly in the data file, as a server that did not check grants would have stored
// them.
func addGrant(t *testing.T, data string, ws store.WorkspaceID, bp, grant string) string {
	t.Helper()
	db, err := store.Open(data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l, err := db.Acquire(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	w, err := db.Open(ctx, ws, l)
	if err != nil {
		t.Fatal(err)
	}
	gs, err := w.Gadgets()
	if err != nil {
		t.Fatal(err)
	}
	var muts []store.Mutation
	for _, g := range gs {
		g.Grants = append(g.Grants, grant)
		muts = append(muts, store.PutGadget(g))
	}
	if err := w.Commit(ctx, muts); err != nil {
		t.Fatal(err)
	}
	b, err := db.Blueprint(ctx, bp)
	if err != nil {
		t.Fatal(err)
	}
	code, err := db.Code(ctx, b.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	b.ID, b.Grants = store.NewID("bp"), append(b.Grants, grant)
	if err := db.PutBlueprint(ctx, b, code); err != nil {
		t.Fatal(err)
	}
	return b.ID
}

// withGrants returns a blueprint archive (a gzip'd tar) with the grants of its blueprint.json
// replaced.
func withGrants(t *testing.T, archive []byte, grants []string) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	zw := gzip.NewWriter(&out)
	tr, tw := tar.NewReader(zr), tar.NewWriter(zw)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if h.Name == "blueprint.json" {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			m["grants"] = grants
			if data, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
			h.Size = int64(len(data))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
