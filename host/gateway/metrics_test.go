package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"

	"atelier/capnweb"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/metrics"
	"atelier/host/store"
)

// serve starts a gateway over a kernel without a runtime (enough for sign-ins and metrics),
// its metrics public or not, and returns its URL and the admin's token.
func serve(t *testing.T, public bool) (string, string) {
	t.Helper()
	return serveConfig(t, func(c *gateway.Config) { c.MetricsPublic = public })
}

// serveConfig is serve with the gateway's configuration changed by edit.
func serveConfig(t *testing.T, edit func(*gateway.Config)) (string, string) {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "a.db"))
	if err != nil {
		t.Fatal(err)
	}
	reg := metrics.NewRegistry() // the server's, as atelier serve passes it to both
	k := kernel.New(kernel.Config{Store: db, Metrics: reg})
	admin, err := k.Bootstrap(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cfg := gateway.Config{Kernel: k, Metrics: reg}
	edit(&cfg)
	srv := httptest.NewServer(gateway.New(cfg))
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		k.Close()
		db.Close()
	})
	return srv.URL, admin
}

func get(t *testing.T, url, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
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
	return resp, string(body)
}

func TestMetricsNeedTheAdminToken(t *testing.T) {
	url, admin := serve(t, false)
	for _, auth := range []string{"", "Basic YWRtaW46eA==", "Bearer ", "Bearer not-a-token", admin} {
		resp, body := get(t, url, auth)
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" || strings.Contains(body, "atelier_") {
			t.Fatalf("Authorization %q: %d %q, want 401 without metrics", auth, resp.StatusCode, body)
		}
		if !strings.HasPrefix(body, "metrics: ") {
			t.Fatalf("Authorization %q: body %q does not say what is wrong", auth, body)
		}
	}
	resp, body := get(t, url, "Bearer "+admin)
	if resp.StatusCode != http.StatusOK || expfmt.ResponseFormat(resp.Header).FormatType() != expfmt.TypeTextPlain {
		t.Fatalf("admin: %d %s %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	families, err := metrics.Parse(strings.NewReader(body))
	if err != nil {
		t.Fatalf("admin's /metrics: %v:\n%s", err, body)
	}
	for name, want := range map[string]float64{"atelier_gadget_instances_live": 0, "atelier_capnweb_sessions_open": 0, "atelier_subscriptions": 0} {
		if got, ok := families.Value(name); !ok || got != want {
			t.Errorf("admin's /metrics: %s = %v (present: %v), want %v:\n%s", name, got, ok, want, body)
		}
	}
	// The standard series of the Go runtime and the process are there too.
	for _, name := range []string{"atelier_uptime_seconds", "go_goroutines", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if _, ok := families.Value(name); !ok {
			t.Errorf("admin's /metrics lacks %s:\n%s", name, body)
		}
	}
	if v, _ := families.Value("go_goroutines"); v < 1 {
		t.Errorf("go_goroutines = %v", v)
	}
}

func TestMetricsPublicCountsSessions(t *testing.T) {
	url, _ := serve(t, true)
	sess, err := capnweb.DialWebSocket(context.Background(), "ws"+strings.TrimPrefix(url, "http")+"/api", capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sess.Main().Call(context.Background(), "ping").Await(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The session is counted once the server ran its OnSession hook (it may answer first).
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		resp, body := get(t, url, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("public /metrics: %d %q", resp.StatusCode, body)
		}
		if families, err := metrics.Parse(strings.NewReader(body)); err != nil {
			t.Fatalf("public /metrics: %v:\n%s", err, body)
		} else if n, _ := families.Value("atelier_capnweb_sessions_open"); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("public /metrics does not count the open session:\n%s", body)
		}
	}
	sess.Close()
	<-sess.Done()
}
