package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"atelier/host/gateway"
)

// TestConnLimits: the open HTTP connections are bounded per client address and in all; a
// connection past a bound is closed on arrival and counted in the metric, a closed one frees
// its place, and a trusted proxy's address is bounded only by the total.
func TestConnLimits(t *testing.T) {
	reg := prometheus.NewRegistry()
	limits := gateway.NewConnLimits(gateway.ConnLimitsConfig{PerAddress: 2, Total: 4, Metrics: reg,
		TrustedProxy: gateway.TrustedProxy{Header: "X-Forwarded-For", Proxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.9/32")}}})
	hs := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	hs.Config.ConnState = limits.ConnState
	hs.Start()
	defer hs.Close()
	// dial opens a connection from local address from (loopback takes any 127.x.y.z) and
	// reports whether the server serves it.
	dial := func(from string) (net.Conn, bool) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", hs.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			return c, false
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return c, false
		}
		resp.Body.Close()
		return c, resp.StatusCode == http.StatusOK
	}
	first, ok := dial("127.0.0.2")
	if !ok {
		t.Fatal("the first connection was not served")
	}
	if _, ok := dial("127.0.0.2"); !ok {
		t.Fatal("the second connection of an address was not served")
	}
	if _, ok := dial("127.0.0.2"); ok {
		t.Fatal("the third connection of an address (limit 2) was served")
	}
	for range 2 { // the trusted proxy is not bounded per address: the third and fourth in all
		if _, ok := dial("127.0.0.9"); !ok {
			t.Fatal("a connection of the trusted proxy was not served")
		}
	}
	if _, ok := dial("127.0.0.3"); ok {
		t.Fatal("the fifth connection in all (limit 4) was served")
	}
	if got := refusedConns(t, reg, "address") + refusedConns(t, reg, "server"); got != 2 {
		t.Fatalf("refused connections counted: %v, want 2", got)
	}
	first.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok := dial("127.0.0.3"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a closed connection did not free its place")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// refusedConns returns the count of connections refused for limit, from reg.
func refusedConns(t *testing.T, reg *prometheus.Registry, limit string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "atelier_http_connections_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "limit" && lp.GetValue() == limit {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}
