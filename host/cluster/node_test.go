package cluster

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"atelier/tests/freeport"
)

// testNodes starts n nodes in this process, routed to each other when n > 1 (Replicas n), and
// closes them when the test ends.
func testNodes(t testing.TB, n int, tweak func(*Config)) []*Node {
	t.Helper()
	ports := freeport.Take(t, n)
	cfgs := make([]Config, n)
	for i := range n {
		cfgs[i] = Config{Name: fmt.Sprintf("n%d", i+1), Dir: t.TempDir(), Replicas: n, LeaseTTL: 2 * time.Second}
		if n > 1 {
			cfgs[i].Listen = fmt.Sprintf("127.0.0.1:%d", ports[i])
			cfgs[i].Secret = "test-secret"
			for j := range n {
				if j != i {
					cfgs[i].Routes = append(cfgs[i].Routes, fmt.Sprintf("127.0.0.1:%d", ports[j]))
				}
			}
		}
		if tweak != nil {
			tweak(&cfgs[i])
		}
	}
	nodes := make([]*Node, n)
	errs := make(chan error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range n {
		go func() {
			var err error
			nodes[i], err = Start(ctx, cfgs[i])
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, nd := range nodes {
			if nd != nil {
				nd.Close()
			}
		}
	})
	return nodes
}

func TestNodesFormACluster(t *testing.T) {
	nodes := testNodes(t, 3, nil)
	for _, nd := range nodes {
		if p := nd.Peers(); len(p) != 2 {
			t.Errorf("node %s has peers %v, want 2", nd.Name(), p)
		}
	}
}

func TestSingleNodeNeedsNoRoutes(t *testing.T) {
	nodes := testNodes(t, 1, nil)
	if _, err := nodes[0].JetStream().AccountInfo(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestAClusterNeedsASecret(t *testing.T) {
	_, err := Start(context.Background(), Config{Name: "x", Dir: t.TempDir(), Listen: "127.0.0.1:0"})
	if err == nil {
		t.Fatal("a routed node started without a secret")
	}
}

func TestANodeWithAnotherSecretCannotJoin(t *testing.T) {
	nodes := testNodes(t, 3, nil)
	port := freeport.Take(t, 1)[0]
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var routes []string
	for _, nd := range nodes {
		routes = append(routes, nd.Config().Listen)
	}
	intruder, err := Start(ctx, Config{Name: "intruder", Dir: t.TempDir(), Listen: fmt.Sprintf("127.0.0.1:%d", port), Secret: "wrong", Routes: routes})
	if err == nil {
		defer intruder.Close()
		if p := intruder.Peers(); len(p) > 0 {
			t.Fatalf("a node with the wrong secret joined %v", p)
		}
	}
	for _, nd := range nodes {
		if p := nd.Peers(); len(p) != 2 {
			t.Errorf("node %s has peers %v after the intruder, want 2", nd.Name(), p)
		}
	}
}

// TestRoutesAreTLS: a node's route port speaks TLS, completes a handshake only with a
// certificate of the cluster's authority (derived from the secret), and refuses a client
// without one or with another secret's.
func TestRoutesAreTLS(t *testing.T) {
	nodes := testNodes(t, 2, nil)
	handshake := func(conf *tls.Config) error {
		c, err := net.DialTimeout("tcp", nodes[0].Config().Listen, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		tc := tls.Client(c, conf)
		if err := tc.Handshake(); err != nil {
			return err
		}
		// TLS 1.3 reports a refused client certificate at the first read; the server's
		// INFO line follows a good handshake.
		line, err := bufio.NewReader(tc).ReadString('\n')
		if err == nil && !strings.HasPrefix(line, "INFO ") {
			return fmt.Errorf("unexpected greeting %q", line)
		}
		return err
	}
	member, err := routeTLS("test-secret", "probe")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(member); err != nil {
		t.Fatalf("a holder of the secret: %v", err)
	}
	member.Certificates = nil
	if err := handshake(member); err == nil {
		t.Fatal("a route handshake without a client certificate succeeded")
	}
	other, err := routeTLS("another-secret-0123456789", "probe")
	if err != nil {
		t.Fatal(err)
	}
	if err := handshake(other); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a node verified with another secret's authority: %v", err)
	}
}

// TestAPortInUseFailsAtOnce: a node whose cluster address is taken says so when it starts,
// instead of waiting for a server that cannot become ready.
func TestAPortInUseFailsAtOnce(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nd, err := Start(ctx, Config{Name: "n1", Dir: t.TempDir(), Listen: l.Addr().String(), Secret: "test-secret", Routes: []string{"127.0.0.1:1"}})
	if err == nil {
		nd.Close()
		t.Fatal("a node started on a cluster address another listener holds")
	}
	if ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") || !strings.Contains(err.Error(), "--cluster-addr") {
		t.Fatalf("got %v, want an immediate error naming the address in use and the flag", err)
	}
}
