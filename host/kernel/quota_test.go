package kernel_test

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"atelier/capnweb"
	"atelier/host/quota"
	"atelier/sdk/guesttest"
)

// admin bootstraps s and returns the admin's API and token.
func admin(t *testing.T, s *server) (*capnweb.Promise, string) {
	t.Helper()
	tok, err := s.k.Bootstrap(ctx)
	if err != nil || tok == "" {
		t.Fatalf("bootstrap: %q, %v", tok, err)
	}
	return s.dial(t).Call(ctx, "authenticate", tok), tok
}

// quotaValue returns the value in force of quota name, from getQuotas.
func quotaValue(t *testing.T, admin *capnweb.Promise, name string) any {
	t.Helper()
	for _, q := range await(t, admin.Call(ctx, "getQuotas")).([]any) {
		if m := q.(map[string]any); m["name"] == name {
			return m["value"]
		}
	}
	t.Fatalf("getQuotas lists no %s", name)
	return nil
}

// TestUserQuotasRefuseAtTheirLimits: each user quota refuses the create past it with
// RESOURCE_EXHAUSTED naming the quota; gadgets and stored bytes count over all the user's
// workspaces, and a kv write past stored_bytes fails like the per-gadget quota. Another
// user's creates and data are untouched, and the refused user's data stays intact.
func TestUserQuotasRefuseAtTheirLimits(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	adm, _ := admin(t, s)
	code := probe(t)
	for name, v := range map[string]int{"workspaces": 2, "gadgets": 2, "agents": 1, "schedules": 1, "stored_bytes": 2*len(code) + 1000} {
		await(t, adm.Call(ctx, "setQuota", name, v))
	}
	ada := s.user(t, "ada")
	ws1 := ada.Call(ctx, "createWorkspace", "one")
	ws2 := ada.Call(ctx, "createWorkspace", "two")
	refused(t, ada.Call(ctx, "createWorkspace", "three"), "RESOURCE_EXHAUSTED", "quota workspaces exceeded: user ada has 2 of 2")

	p := ws1.Call(ctx, "createGadget", "a", code, probeGrants).Call(ctx, "connect")
	await(t, p.Call(ctx, "set", "k", []byte("v")))
	await(t, ws2.Call(ctx, "createGadget", "b", code, probeGrants))
	refused(t, ws2.Call(ctx, "createGadget", "c", code, probeGrants), "RESOURCE_EXHAUSTED", "quota gadgets exceeded")
	refused(t, ws1.Call(ctx, "gadget", "a").Call(ctx, "deploy", append(code, "\n;; "+strings.Repeat("x", 2000)...)), "RESOURCE_EXHAUSTED", "quota stored_bytes exceeded")
	refused(t, p.Call(ctx, "set", "big", make([]byte, 1500)), "GADGET_ERROR", "quota stored_bytes exceeded")
	await(t, p.Call(ctx, "set", "small", make([]byte, 500)))

	id := await(t, ws1.Call(ctx, "info")).(map[string]any)["id"]
	scope := map[string]any{"workspaces": map[string]any{id.(string): map[string]any{"role": "use", "gadgets": []any{"*"}}}}
	await(t, ada.Call(ctx, "createAgent", "bot", scope))
	refused(t, ada.Call(ctx, "createAgent", "bot2", scope), "RESOURCE_EXHAUSTED", "quota agents exceeded")

	counter := guesttest.Bytes(t, counterGo)
	await(t, adm.Call(ctx, "setQuota", "gadgets", 3))
	await(t, adm.Call(ctx, "setQuota", "stored_bytes", nil))
	await(t, ws1.Call(ctx, "createGadget", "counter", counter, counterGrants))
	every := map[string]any{"everyMs": 60_000}
	await(t, ws1.Call(ctx, "schedule", "counter", "increment", []any{1}, every))
	refused(t, ws1.Call(ctx, "schedule", "counter", "increment", []any{1}, every), "RESOURCE_EXHAUSTED", "quota schedules exceeded")

	// Another user is counted alone; ada's data is intact.
	bo := s.user(t, "bo")
	await(t, bo.Call(ctx, "createWorkspace", "one").Call(ctx, "createGadget", "a", code, probeGrants))
	if got := await(t, p.Call(ctx, "get", "k")); string(got.([]byte)) != "v" {
		t.Fatalf("ada's a.k = %q", got)
	}
}

// TestUserAccountQuota: connectAccount past the accounts quota is refused.
func TestUserAccountQuota(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, filepath.Join(dir, "a.db"), withGatekeepers(t, dir))
	adm, _ := admin(t, s)
	gk := await(t, adm.Call(ctx, "installGatekeeper", probeArchive(t))).(map[string]any)["id"].(string)
	await(t, adm.Call(ctx, "setQuota", "accounts", 1))
	ada := s.user(t, "ada")
	const resource = "http://127.0.0.1:9/notebooks/work"
	await(t, ada.Call(ctx, "connectAccount", gk, resource, map[string]any{"token": "1"}))
	refused(t, ada.Call(ctx, "connectAccount", gk, resource, map[string]any{"token": "2"}), "RESOURCE_EXHAUSTED", "quota accounts exceeded: user ada has 1 of 1")
	await(t, s.user(t, "bo").Call(ctx, "connectAccount", gk, resource, map[string]any{"token": "3"}))
}

// TestSetQuotaHoldsAtOnceAndAfterARestart: a change holds from the next create, null restores
// the default, and the data file keeps the change.
func TestSetQuotaHoldsAtOnceAndAfterARestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	s := startServer(t, data)
	adm, tok := admin(t, s)
	if got := quotaValue(t, adm, "workspaces"); got != float64(50) {
		t.Fatalf("default workspaces quota %v, want 50", got)
	}
	ada := s.user(t, "ada")
	await(t, ada.Call(ctx, "createWorkspace", "one"))
	await(t, adm.Call(ctx, "setQuota", "workspaces", 1))
	refused(t, ada.Call(ctx, "createWorkspace", "two"), "RESOURCE_EXHAUSTED", "quota workspaces")
	await(t, adm.Call(ctx, "setQuota", "workspaces", nil))
	await(t, ada.Call(ctx, "createWorkspace", "two"))
	await(t, adm.Call(ctx, "setQuota", "workspaces", 2))
	await(t, adm.Call(ctx, "setQuota", "host_memory", -1))
	s.stop()

	s = startServer(t, data)
	root := s.dial(t)
	ada = await(t, root.Call(ctx, "authenticate", await(t, root.Call(ctx, "login", "ada", "password-ada")))).(*capnweb.Stub)
	refused(t, ada.Call(ctx, "createWorkspace", "three"), "RESOURCE_EXHAUSTED", "quota workspaces exceeded: user ada has 2 of 2")
	adm = root.Call(ctx, "authenticate", tok)
	if got := quotaValue(t, adm, "host_memory"); got != float64(-1) {
		t.Fatalf("host_memory after the restart: %v, want -1 (unlimited)", got)
	}
}

// TestSetQuotaIsForTheAdmin: others are FORBIDDEN; unknown names and bad values are
// INVALID_ARGUMENT with the valid names or values.
func TestSetQuotaIsForTheAdmin(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	adm, _ := admin(t, s)
	ada := s.user(t, "ada")
	refused(t, ada.Call(ctx, "setQuota", "workspaces", 1000), "FORBIDDEN", "only the server's admin")
	refused(t, ada.Call(ctx, "getQuotas"), "FORBIDDEN", "only the server's admin")
	refused(t, adm.Call(ctx, "setQuota", "workspace", 3), "INVALID_ARGUMENT", "the quotas are workspaces, gadgets")
	for _, bad := range []int{0, -2} {
		refused(t, adm.Call(ctx, "setQuota", "gadgets", bad), "INVALID_ARGUMENT", "give a positive number, -1 for unlimited, or null for the default")
	}
	if got := quotaValue(t, adm, "gadgets"); got != float64(200) {
		t.Fatalf("gadgets quota after refused changes: %v", got)
	}
}

// TestParallelCreatesDoNotOvershoot: creates racing in two workspaces of one user stop at the
// gadgets quota exactly.
func TestParallelCreatesDoNotOvershoot(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	adm, _ := admin(t, s)
	await(t, adm.Call(ctx, "setQuota", "gadgets", 5))
	ada := s.user(t, "ada")
	wss := []*capnweb.Promise{ada.Call(ctx, "createWorkspace", "one"), ada.Call(ctx, "createWorkspace", "two")}
	code := probe(t)
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			ws := wss[i%2]
			_, _ = ws.Call(ctx, "createGadget", "g"+string(rune('a'+i)), code, probeGrants).Await(ctx)
		})
	}
	wg.Wait()
	n := 0
	for _, ws := range wss {
		n += len(await(t, ws.Call(ctx, "listGadgets")).([]any))
	}
	if n != 5 {
		t.Fatalf("%d gadgets after 16 parallel creates, want the quota's 5", n)
	}
}

// TestQuotaUsageIsReported: workspace.metrics() gives the calling user's use of each user
// quota against its limit, and /metrics the host quotas' limits (as set) and use.
func TestQuotaUsageIsReported(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	adm, tok := admin(t, s)
	await(t, adm.Call(ctx, "setQuota", "gadgets", 7))
	await(t, adm.Call(ctx, "setQuota", "host_memory", 1<<30))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	code := probe(t)
	await(t, ws.Call(ctx, "createGadget", "a", code, probeGrants))
	got := map[string][2]float64{}
	for _, q := range await(t, ws.Call(ctx, "metrics")).(map[string]any)["quotas"].([]any) {
		m := q.(map[string]any)
		if m["scope"] == "user" {
			got[m["name"].(string)] = [2]float64{m["used"].(float64), m["limit"].(float64)}
		}
	}
	want := map[string][2]float64{"workspaces": {1, 50}, "gadgets": {1, 7}, "accounts": {0, 50}, "agents": {0, 50}, "models": {0, 32}, "schedules": {0, 100}, "stored_bytes": {float64(len(code)), 1 << 30}}
	if len(got) != len(want) {
		t.Fatalf("metrics().quotas of the user quotas: %v, want %v", got, want)
	}
	for name, w := range want {
		if got[name] != w {
			t.Errorf("metrics().quotas %s: used, limit %v, want %v", name, got[name], w)
		}
	}
	_, body := getMetrics(t, s, tok)
	for _, line := range []string{`atelier_quota_limit{quota="host_memory"} 1.073741824e+09`, `atelier_quota_used{quota="host_memory"} 0`} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("/metrics has no line %q", line)
		}
	}
}

// TestNoteQuotasReloadsThem: a change written to the store by another node holds once the
// kernel is told of it (the cluster store's OnQuotas calls NoteQuotas).
func TestNoteQuotasReloadsThem(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada := s.user(t, "ada")
	await(t, ada.Call(ctx, "createWorkspace", "one"))
	if err := s.db.PutQuotas(ctx, quota.Limits{Workspaces: 1}); err != nil {
		t.Fatal(err)
	}
	s.k.NoteQuotas()
	refused(t, ada.Call(ctx, "createWorkspace", "two"), "RESOURCE_EXHAUSTED", "quota workspaces exceeded: user ada has 1 of 1")
}
