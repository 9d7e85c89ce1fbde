package kernel_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/host/metrics"
	"atelier/sdk/guesttest"
)

// callerJS is a JS gadget that calls the gadget bound as "c", and fails on demand.
var callerJS = map[string]any{"server.js": `export class Gadget {
  bump() { return this.env.c.increment(1); }
  fail() { throw new Error("boom"); }
}`}

// gadgetMetrics returns workspace.metrics() by gadget name, and the uptime.
func gadgetMetrics(t *testing.T, ws *capnweb.Promise) (map[string]map[string]any, float64) {
	t.Helper()
	m := await(t, ws.Call(ctx, "metrics")).(map[string]any)
	out := map[string]map[string]any{}
	for _, g := range m["gadgets"].([]any) {
		gm := g.(map[string]any)
		out[gm["name"].(string)] = gm
	}
	return out, m["uptimeSeconds"].(float64)
}

// getMetrics fetches /metrics with the bearer token (none when "").
func getMetrics(t *testing.T, s *server, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.http.URL+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestMetricsCountEveryCallPath: calls through connect(), Code Mode, a gadget's binding and a
// schedule all count, failures count as errors, refusals before the gadget do not; use may
// read the workspace's metrics, strangers may not; /metrics is the admin's.
func TestMetricsCountEveryCallPath(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), fastSchedules)
	adminToken, err := s.k.Bootstrap(ctx)
	if err != nil || adminToken == "" {
		t.Fatalf("bootstrap: %q, %v", adminToken, err)
	}
	root := s.dial(t)
	adaToken := await(t, root.Call(ctx, "signup", "ada", "password-ada")).(string)
	ada := root.Call(ctx, "authenticate", adaToken)
	ws := ada.Call(ctx, "createWorkspace", "home")
	wsID := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	app := ws.Call(ctx, "createGadget", "counter", guesttest.Bytes(t, counterGo), counterGrants).Call(ctx, "connect")
	caller := ws.Call(ctx, "createGadget", "caller", callerJS, jsGrants)
	await(t, ws.Call(ctx, "bind", "caller", "c", "counter"))

	before, _ := gadgetMetrics(t, ws)
	if c := before["counter"]; c["calls"] != float64(0) || c["errors"] != float64(0) || c["p50Ms"] != float64(0) {
		t.Fatalf("metrics before any call: %v", c)
	}
	for range 3 {
		await(t, app.Call(ctx, "increment", 1)) // connect(): 3
	}
	refused(t, app.Call(ctx, "increment"), "INVALID_ARGUMENT", "takes 1 argument") // refused before the gadget
	res := await(t, ws.Call(ctx, "executeCode", "export default async (env) => env.counter.increment(1)")).(map[string]any)
	if res["value"] != float64(4) {
		t.Fatalf("executeCode: %v", res) // Code Mode: 4
	}
	capp := caller.Call(ctx, "connect")
	if got := await(t, capp.Call(ctx, "bump")); got != float64(5) { // binding: 5
		t.Fatalf("bump = %v", got)
	}
	refused(t, capp.Call(ctx, "fail"), "GADGET_ERROR", "boom")
	await(t, ws.Call(ctx, "schedule", "counter", "increment", []any{1}, map[string]any{"at": "2000-01-01T00:00:00Z"}))
	eventually(t, "the schedule ran", func() bool { return count(t, app) == 6 }) // schedule: 6 (and get() calls)

	// A call is counted once its reply is released, which may be just after another call
	// (get) already saw its write: wait for the count.
	var got map[string]map[string]any
	var uptime float64
	eventually(t, "the calls are counted", func() bool {
		got, uptime = gadgetMetrics(t, ws)
		return got["counter"]["calls"].(float64) >= 7
	})
	c, cl := got["counter"], got["caller"]
	if c["calls"].(float64) < 7 || c["errors"] != float64(0) || c["instances"] != float64(1) || c["started"] != float64(1) {
		t.Fatalf("counter metrics: %v (want at least 3 clients + 1 Code Mode + 1 binding + 1 schedule + 1 get, no errors, one instance started and live)", c)
	}
	if cl["calls"] != float64(2) || cl["errors"] != float64(1) || cl["instances"] != float64(1) {
		t.Fatalf("caller metrics: %v, want 2 calls, 1 error, live", cl)
	}
	if p50, p99 := c["p50Ms"].(float64), c["p99Ms"].(float64); p50 <= 0 || p99 < p50 || c["p90Ms"].(float64) < p50 {
		t.Fatalf("counter latency quantiles: %v", c)
	}
	if uptime <= 0 {
		t.Fatalf("uptimeSeconds = %v", uptime)
	}

	// A use collaborator reads them; a stranger does not.
	bob := s.user(t, "bob")
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	if bm, _ := gadgetMetrics(t, bob.Call(ctx, "openWorkspace", wsID)); bm["caller"]["errors"] != float64(1) {
		t.Fatalf("bob's metrics: %v", bm)
	}
	refused(t, s.user(t, "eve").Call(ctx, "openWorkspace", wsID).Call(ctx, "metrics"), "FORBIDDEN", "no access")

	// /metrics: only the admin's token.
	for _, tc := range []struct{ token, want string }{
		{"", "Authorization: Bearer <token of the user admin>"},
		{"atl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "unknown or revoked token"},
		{adaToken, "for the server's operator"},
	} {
		if code, body := getMetrics(t, s, tc.token); code != http.StatusUnauthorized || !strings.Contains(body, tc.want) || strings.Contains(body, "atelier_") {
			t.Fatalf("GET /metrics with %q: %d %q, want 401 with %q", tc.token, code, body, tc.want)
		}
	}
	agent := await(t, ada.Call(ctx, "createAgent", "helper", map[string]any{"workspaces": map[string]any{wsID: map[string]any{"role": "use", "gadgets": []any{"*"}}}})).(map[string]any)
	if code, _ := getMetrics(t, s, agent["token"].(string)); code != http.StatusUnauthorized {
		t.Fatalf("an agent's token read /metrics: %d", code)
	}
	code, body := getMetrics(t, s, adminToken)
	if code != http.StatusOK {
		t.Fatalf("GET /metrics as admin: %d %s", code, body)
	}
	parse := func(body string) metrics.Families {
		t.Helper()
		f, err := metrics.Parse(strings.NewReader(body))
		if err != nil {
			t.Fatalf("GET /metrics as admin: %v:\n%s", err, body)
		}
		return f
	}
	fams := parse(body)
	calls := func(gadget string) (float64, bool) {
		return fams.Value("atelier_gadget_calls_total", "workspace", wsID, "gadget", gadget)
	}
	if n, _ := calls("caller"); n != 2 {
		t.Fatalf("/metrics calls of caller: %v, want 2:\n%s", n, body)
	}
	if _, ok := calls("counter"); !ok {
		t.Fatalf("/metrics has no calls of counter:\n%s", body)
	}
	for _, want := range []struct {
		name   string
		gadget string // "": a series without labels
		value  float64
	}{
		{"atelier_gadget_call_errors_total", "caller", 1},
		{"atelier_gadget_instances_started_total", "caller", 1},
		{"atelier_gadget_instances_live", "", 2},
	} {
		var labels []string
		if want.gadget != "" {
			labels = []string{"workspace", wsID, "gadget", want.gadget}
		}
		if got, ok := fams.Value(want.name, labels...); !ok || got != want.value {
			t.Errorf("/metrics %s %v = %v (present: %v), want %v", want.name, labels, got, ok, want.value)
		}
	}
	h := fams.Find("atelier_gadget_call_duration_seconds", "workspace", wsID, "gadget", "caller").GetHistogram()
	if h.GetSampleCount() != 2 || len(h.GetBucket()) != len(metrics.Buckets)+1 || h.GetSampleSum() <= 0 {
		t.Errorf("/metrics latency of caller: %v, want 2 calls in %d buckets and +Inf", h, len(metrics.Buckets))
	}
	for name, typ := range map[string]dto.MetricType{
		"atelier_gadget_calls_total": dto.MetricType_COUNTER, "atelier_gadget_call_duration_seconds": dto.MetricType_HISTOGRAM,
		"atelier_subscriptions": dto.MetricType_GAUGE, "atelier_capnweb_sessions_open": dto.MetricType_GAUGE,
		"atelier_uptime_seconds": dto.MetricType_GAUGE, "go_goroutines": dto.MetricType_GAUGE, "process_cpu_seconds_total": dto.MetricType_COUNTER,
	} {
		if fams[name].GetType() != typ {
			t.Errorf("/metrics %s: type %v, want %v", name, fams[name].GetType(), typ)
		}
	}
	if n, _ := fams.Value("atelier_capnweb_sessions_open"); n == 0 {
		t.Error("/metrics counts no open session while the test holds several")
	}

	// A rename relabels the series; a delete drops them.
	await(t, ws.Call(ctx, "gadget", "counter").Call(ctx, "rename", "tally"))
	await(t, caller.Call(ctx, "delete"))
	_, body = getMetrics(t, s, adminToken)
	fams = parse(body)
	_, tally := calls("tally")
	_, counter := calls("counter")
	_, callerLeft := calls("caller")
	if !tally || counter || callerLeft {
		t.Fatalf("after rename and delete:\n%s", body)
	}
	if got, _ := gadgetMetrics(t, ws); len(got) != 1 || got["tally"] == nil {
		t.Fatalf("metrics() after rename and delete: %v", got)
	}
}

// TestMetricsLiveFollowsEviction: the live instances drop to 0 when the instance is evicted;
// the counts stay, and the next call starts a second instance.
func TestMetricsLiveFollowsEviction(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.GadgetIdle, c.WorkspaceIdle = 20*time.Millisecond, time.Hour
	})
	ws, _, app := home(t, s.user(t, "ada"))
	await(t, app.Call(ctx, "increment", 1))
	eventually(t, "the idle instance is evicted", func() bool {
		m, _ := gadgetMetrics(t, ws)
		return m["counter"]["instances"] == float64(0)
	})
	// On a slow machine the instance may also have been evicted between the two calls (20 ms
	// idle), so the starts so far are 1 or 2; each later start is counted once.
	m, _ := gadgetMetrics(t, ws)
	started, _ := m["counter"]["started"].(float64)
	if m["counter"]["calls"] != float64(2) || started < 1 || started > 2 {
		t.Fatalf("after eviction: %v, want the 2 calls and their 1 or 2 starts kept", m["counter"])
	}
	await(t, app.Call(ctx, "increment", 1))
	if m, _ := gadgetMetrics(t, ws); m["counter"]["started"] != started+1 {
		t.Fatalf("after a call of the evicted gadget: %v, want one more instance started than %v", m["counter"], started)
	}
}
