package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"atelier/capnweb"
	"atelier/host/store"
)

// ownerAPI is the main object a node serves to a peer session in these tests.
type ownerAPI struct {
	capnweb.Target
	hello    Hello
	once     sync.Once
	disposed chan struct{}
}

// Hello returns what the dialer said.
func (a *ownerAPI) Hello() Hello { return a.hello }

// Add adds.
func (a *ownerAPI) Add(x, y int) int { return x + y }

// Echo returns its argument.
func (a *ownerAPI) Echo(b []byte) []byte { return b }

// CallMeBack calls cb with x on the caller's side and returns its result.
func (a *ownerAPI) CallMeBack(ctx context.Context, cb *capnweb.Stub, x float64) (any, error) {
	return cb.CallFunc(ctx, x).Await(ctx)
}

// Dispose records that the session released the object.
func (a *ownerAPI) Dispose() { a.once.Do(func() { close(a.disposed) }) }

// peerTest is a set of routers, one per node, serving ownerAPI (refusing token "bad",
// panicking on token "panic").
type peerTest struct {
	routers []*Router
	served  chan *ownerAPI // every object served, in order
}

// startRouters starts a router on every node, closed when the test ends.
func startRouters(t testing.TB, nodes []*Node, limits capnweb.Limits) *peerTest {
	t.Helper()
	pt := &peerTest{served: make(chan *ownerAPI, 100)}
	serve := func(_ context.Context, h Hello) (any, error) {
		switch h.TokenHash {
		case "bad":
			return nil, errors.New("unknown token")
		case "panic":
			panic("serve callback bug")
		}
		a := &ownerAPI{hello: h, disposed: make(chan struct{})}
		pt.served <- a
		return a, nil
	}
	for _, n := range nodes {
		r, err := NewRouter(n, serve, capnweb.Options{Limits: limits})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(r.Close)
		pt.routers = append(pt.routers, r)
	}
	// A router's subscriptions reach the other nodes a moment after NewRouter returns.
	for _, n := range nodes {
		for _, r := range pt.routers {
			eventually(t, fmt.Sprintf("%s reaches the router of %s", n.Name(), r.name), func() bool {
				m, err := n.Conn().Request(pingSubject(r.name), nil, time.Second)
				return err == nil && string(m.Data) == r.instance
			})
		}
	}
	return pt
}

// nextServed returns the next object served.
func (pt *peerTest) nextServed(t *testing.T) *ownerAPI {
	t.Helper()
	select {
	case a := <-pt.served:
		return a
	case <-time.After(10 * time.Second):
		t.Fatal("no session was served")
		return nil
	}
}

func dial(t *testing.T, r *Router, node store.NodeID, token string) *capnweb.Session {
	t.Helper()
	s, err := r.Dial(context.Background(), node, Hello{TokenHash: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// waitEnded waits until s ends and returns its error.
func waitEnded(t *testing.T, s *capnweb.Session, what string) error {
	t.Helper()
	start := time.Now()
	select {
	case <-s.Done():
		t.Logf("%s ended after %v: %v", what, time.Since(start).Round(time.Millisecond), s.Err())
		return s.Err()
	case <-time.After(15 * time.Second):
		t.Fatalf("%s did not end", what)
		return nil
	}
}

func waitDisposed(t *testing.T, a *ownerAPI, what string) {
	t.Helper()
	select {
	case <-a.disposed:
	case <-time.After(15 * time.Second):
		t.Fatalf("%s: the served object was not released", what)
	}
}

func add(ctx context.Context, st *capnweb.Stub) (any, error) {
	return st.Call(ctx, "add", 2, 3).Await(ctx)
}

// sids returns the session ids of r's transports.
func sids(r *Router) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for in := range r.transports {
		out = append(out, strings.Split(in, ".")[2])
	}
	return out
}

func TestPeerSessions(t *testing.T) {
	nodes := testNodes(t, 3, nil)
	ctx := context.Background()
	big := capnweb.Limits{MaxMessageSize: 48 << 20}

	t.Run("calls, callbacks and a large message", func(t *testing.T) {
		pt := startRouters(t, nodes, big)
		s := dial(t, pt.routers[0], "n2", "tok")
		a := pt.nextServed(t)
		if a.hello != (Hello{From: "n1", TokenHash: "tok"}) {
			t.Fatalf("serve saw %+v", a.hello)
		}
		main := s.Main()
		defer main.Dispose()
		if v, err := add(ctx, main); err != nil || v != 5.0 {
			t.Fatalf("add = %v, %v", v, err)
		}
		h, err := main.Call(ctx, "hello").Await(ctx)
		if err != nil || fmt.Sprint(h) != "map[from:n1 token:tok]" {
			t.Fatalf("hello = %v, %v", h, err)
		}
		v, err := main.Call(ctx, "callMeBack", func(x float64) float64 { return x * 2 }, 21).Await(ctx)
		if err != nil || v != 42.0 {
			t.Fatalf("callMeBack = %v, %v", v, err)
		}
		blob := make([]byte, bigEcho)
		rand.Read(blob)
		got, err := capnweb.AwaitAs[[]byte](ctx, main.Call(ctx, "echo", blob))
		if err != nil || !bytes.Equal(got, blob) {
			t.Fatalf("echo of %d bytes: %d bytes, equal %v, %v", len(blob), len(got), bytes.Equal(got, blob), err)
		}
		if a, b := pt.routers[0].Sessions(), pt.routers[1].Sessions(); a != 1 || b != 1 {
			t.Fatalf("sessions n1=%d n2=%d, want 1 each", a, b)
		}
		s.Close()
		waitDisposed(t, a, "closing the dialer's session")
		eventually(t, "both sides forget the session", func() bool {
			return pt.routers[0].Sessions() == 0 && pt.routers[1].Sessions() == 0
		})
	})

	t.Run("an edge relays a client to the owner", func(t *testing.T) {
		pt := startRouters(t, nodes, capnweb.Limits{})
		peer := dial(t, pt.routers[0], "n2", "client-token")
		owner := peer.Main()
		defer owner.Dispose()
		x, y := capnweb.Pipe()
		edge := capnweb.NewSession(x, capnweb.Options{Main: &edgeAPI{owner: owner}})
		defer edge.Close()
		client := capnweb.NewSession(y, capnweb.Options{})
		defer client.Close()
		api := client.Main()
		defer api.Dispose()
		o := api.Call(ctx, "owner")
		defer o.Dispose()
		if v, err := o.Call(ctx, "add", 2, 3).Await(ctx); err != nil || v != 5.0 {
			t.Fatalf("add through the edge = %v, %v", v, err)
		}
		// The callback travels client → n1 → n2 and is called back n2 → n1 → client.
		v, err := o.Call(ctx, "callMeBack", func(x float64) float64 { return x + 1 }, 41).Await(ctx)
		if err != nil || v != 42.0 {
			t.Fatalf("callMeBack through the edge = %v, %v", v, err)
		}
	})

	t.Run("refusals", func(t *testing.T) {
		pt := startRouters(t, nodes, capnweb.Limits{})
		_, err := pt.routers[0].Dial(ctx, "n2", Hello{TokenHash: "bad"})
		var re *RefusedError
		if !errors.As(err, &re) || re.Node != "n2" || re.Reason != "unknown token" {
			t.Fatalf("dial with a bad token: %v", err)
		}
		_, err = pt.routers[0].Dial(ctx, "n2", Hello{TokenHash: "panic"})
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "internal error") {
			t.Fatalf("dial whose serve callback panics: %v", err)
		}
		dial(t, pt.routers[0], "n2", "tok").Close() // n2 still serves
		start := time.Now()
		_, err = pt.routers[0].Dial(ctx, "n9", Hello{TokenHash: "tok"})
		if !errors.Is(err, ErrNodeUnreachable) || !strings.Contains(err.Error(), "n9") {
			t.Fatalf("dial to a node that does not exist: %v", err)
		}
		t.Logf("dial to a missing node failed after %v: %v", time.Since(start), err)
		if _, err := pt.routers[0].Dial(ctx, "n2.*", Hello{}); err == nil {
			t.Fatal("dialed a node name with subject wildcards")
		}
		eventually(t, "refused sessions are forgotten", func() bool {
			return pt.routers[0].Sessions() == 0 && pt.routers[1].Sessions() == 0
		})
	})

	t.Run("sessions per dialing node are bounded", func(t *testing.T) {
		pt := startRouters(t, nodes, capnweb.Limits{})
		r2 := pt.routers[1]
		r2.mu.Lock()
		r2.maxPerNode = 2
		r2.mu.Unlock()
		first := dial(t, pt.routers[0], "n2", "tok")
		dial(t, pt.routers[0], "n2", "tok")
		_, err := pt.routers[0].Dial(ctx, "n2", Hello{TokenHash: "tok"})
		var re *RefusedError
		if !errors.As(err, &re) || !strings.Contains(re.Reason, "node n1 already has 2 peer sessions open on node n2") {
			t.Fatalf("third session: %v", err)
		}
		dial(t, pt.routers[2], "n2", "tok") // another node has its own bound
		first.Close()
		eventually(t, "n2 forgets the closed session", func() bool { return r2.Sessions() == 2 })
		dial(t, pt.routers[0], "n2", "tok")
	})

	t.Run("closing a router ends the sessions on both sides", func(t *testing.T) {
		for _, closer := range []int{1, 0} {
			other := 1 - closer
			pt := startRouters(t, nodes[:2], capnweb.Limits{})
			rc, ro := pt.routers[closer], pt.routers[other]
			closerName := nodes[closer].Name()
			toCloser := dial(t, ro, closerName, "tok")
			servedByCloser := pt.nextServed(t)
			fromCloser := dial(t, rc, nodes[other].Name(), "tok")
			servedByOther := pt.nextServed(t)
			rc.Close()
			for _, s := range []*capnweb.Session{toCloser, fromCloser} {
				err := waitEnded(t, s, "a session with the closed router")
				if err == nil || !strings.Contains(err.Error(), "router of node "+string(closerName)+" closed") {
					t.Fatalf("session ended with %v, want the router of %s named", err, closerName)
				}
			}
			waitDisposed(t, servedByCloser, "closed router")
			waitDisposed(t, servedByOther, "peer of the closed router")
			eventually(t, "no sessions are left", func() bool { return rc.Sessions() == 0 && ro.Sessions() == 0 })
			ro.Close()
		}
	})

	t.Run("a paused node is dropped after two missed pings", func(t *testing.T) {
		pt := startRouters(t, nodes, capnweb.Limits{})
		s := dial(t, pt.routers[0], "n2", "tok")
		a := pt.nextServed(t)
		// n2's router stops answering pings as a paused process would; its sessions stay.
		if err := pt.routers[1].pingSub.Unsubscribe(); err != nil {
			t.Fatal(err)
		}
		mute, err := nodes[1].Conn().Subscribe(pingSubject("n2"), func(*nats.Msg) {})
		if err != nil {
			t.Fatal(err)
		}
		defer mute.Unsubscribe()
		err = waitEnded(t, s, "the session to the paused node")
		if err == nil || !strings.Contains(err.Error(), "node n2") || !strings.Contains(err.Error(), "did not answer 2 pings") {
			t.Fatalf("session ended with %v", err)
		}
		// n2's side is told when it "resumes" (here: at once) and releases what it served.
		waitDisposed(t, a, "paused node")
		eventually(t, "no sessions are left", func() bool {
			return pt.routers[0].Sessions() == 0 && pt.routers[1].Sessions() == 0
		})
	})

	t.Run("garbage aborts only its session", func(t *testing.T) {
		pt := startRouters(t, nodes, capnweb.Limits{MaxMessageSize: 64 << 10})
		bystander := dial(t, pt.routers[0], "n3", "tok")
		pt.nextServed(t)
		frame := func(kind byte, seq uint64, payload string) []byte {
			return append(binary.BigEndian.AppendUint64([]byte{kind}, seq), payload...)
		}
		chunk := strings.Repeat("x", 40<<10)
		for _, g := range []struct {
			name   string
			frames [][]byte
			want   string
		}{
			{"short frame", [][]byte{[]byte("hi")}, "bad frame of 2 bytes"},
			{"forged sequence", [][]byte{frame(frameMsg, 7, `["pull",1]`)}, "frame 7 arrived after frame 0"},
			{"unknown kind", [][]byte{frame('q', 1, "")}, "unknown frame kind"},
			{"bad JSON", [][]byte{frame(frameMsg, 1, `["push",`)}, "bad RPC message"},
			{"bad message", [][]byte{frame(frameMsg, 1, `["release",-5,1]`)}, "bad RPC message"},
			{"oversized", [][]byte{frame(frameChunk, 1, chunk), frame(frameMsg, 2, chunk)}, "exceeds the limit of 65536 bytes"},
		} {
			before := sids(pt.routers[0])
			victim := dial(t, pt.routers[0], "n2", "tok")
			a := pt.nextServed(t)
			sid := ""
			for _, id := range sids(pt.routers[0]) {
				if !slices.Contains(before, id) {
					sid = id
				}
			}
			for _, f := range g.frames {
				if err := nodes[0].Conn().Publish("atl.peer."+sid+".b", f); err != nil {
					t.Fatal(err)
				}
			}
			err := waitEnded(t, victim, g.name)
			if err == nil || !strings.Contains(err.Error(), g.want) {
				t.Fatalf("%s: the session ended with %v, want %q", g.name, err, g.want)
			}
			waitDisposed(t, a, g.name)
			if v, err := add(ctx, bystander.Main()); err != nil || v != 5.0 {
				t.Fatalf("after %s, the bystander session: %v, %v", g.name, v, err)
			}
		}
		// A message above the receiver's limit from a real peer ends the session the same way.
		s := dial(t, pt.routers[0], "n2", "tok")
		a := pt.nextServed(t)
		_, err := s.Main().Call(ctx, "echo", make([]byte, 100<<10)).Await(ctx)
		if err == nil || !strings.Contains(err.Error(), "exceeds the limit") {
			t.Fatalf("an oversized call: %v", err)
		}
		waitDisposed(t, a, "oversized call")
		// Junk open requests are answered with an error, and no session is made.
		for _, junk := range []string{"{", `{"hello":{"from":"n1"},"sid":"x.>","instance":"00000000000000000000000000000000"}`} {
			m, err := nodes[0].Conn().Request(openSubject("n2"), []byte(junk), 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var rep openReply
			if err := json.Unmarshal(m.Data, &rep); err != nil || !strings.Contains(rep.Error, "bad open request") {
				t.Fatalf("junk open request %q: reply %s", junk, m.Data)
			}
		}
		if v, err := add(ctx, bystander.Main()); err != nil || v != 5.0 {
			t.Fatalf("the bystander session at the end: %v, %v", v, err)
		}
		eventually(t, "only the bystander is left", func() bool {
			return pt.routers[0].Sessions() == 1 && pt.routers[1].Sessions() == 0 && pt.routers[2].Sessions() == 1
		})
	})

	t.Run("a reader that falls behind ends the session", func(t *testing.T) {
		pt := startRouters(t, nodes, capnweb.Limits{})
		r2 := pt.routers[1]
		// A transport pair on n2 whose subscription holds at most 3 frames, and a writer
		// that sends 10 while nobody reads.
		pair := func(sid string) (w, rd *transport) {
			w, err := r2.newTransport("n1", "atl.peer."+sid+".a", "atl.peer."+sid+".b", "")
			if err != nil {
				t.Fatal(err)
			}
			rd, err = r2.newTransport("n1", "atl.peer."+sid+".b", "atl.peer."+sid+".a", "n1")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Close(nil); rd.Close(nil) })
			if err := rd.sub.SetPendingLimits(3, -1); err != nil {
				t.Fatal(err)
			}
			for range 10 {
				if err := w.WriteMessage([]byte("[]")); err != nil {
					t.Fatal(err)
				}
			}
			// The subscription keeps 3 (the one its callback holds counts) until read.
			eventually(t, "7 frames are dropped", func() bool { n, _ := rd.sub.Dropped(); return n == 7 })
			return w, rd
		}
		// The reader finds out at the next frame after the dropped ones.
		w, rd := pair("00000000000000000000000000000001")
		for range 2 {
			if _, err := rd.ReadMessage(); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.WriteMessage([]byte("[]")); err != nil {
			t.Fatal(err)
		}
		var err error
		for range 3 {
			if _, err = rd.ReadMessage(); err != nil {
				break
			}
		}
		if err == nil || !strings.Contains(err.Error(), "frame 11 arrived after frame 3") {
			t.Fatalf("reading after dropped frames: %v", err)
		}
		// The watcher finds out when no frame follows the dropped ones.
		_, rd = pair("00000000000000000000000000000002")
		r2.attach(rd, linkKey{"n1", pt.routers[0].instance})
		eventually(t, "the watcher fails the transport", func() bool { return rd.failed() != nil })
		if _, err := rd.ReadMessage(); err == nil || !strings.Contains(err.Error(), "frames were dropped") {
			t.Fatalf("reading a transport with dropped frames: %v", err)
		}
	})

	// Last: it stops n3.
	t.Run("a node that stops ends its sessions", func(t *testing.T) {
		pt := startRouters(t, nodes, capnweb.Limits{})
		toN3 := dial(t, pt.routers[0], "n3", "tok")
		pt.nextServed(t)
		dial(t, pt.routers[2], "n1", "tok")
		fromN3 := pt.nextServed(t)
		nodes[2].Close()
		err := waitEnded(t, toN3, "the session to the stopped node")
		if err == nil || !strings.Contains(err.Error(), "node n3") {
			t.Fatalf("session ended with %v, want n3 named", err)
		}
		waitDisposed(t, fromN3, "stopped node")
		eventually(t, "n1 has no sessions left", func() bool { return pt.routers[0].Sessions() == 0 })
		eventually(t, "n3 has no sessions left", func() bool { return pt.routers[2].Sessions() == 0 })
	})
}

// edgeAPI is what an edge node serves its client: the owner's stub from a peer session.
type edgeAPI struct {
	capnweb.Target
	owner *capnweb.Stub
}

// Owner returns the owner's main object.
func (e *edgeAPI) Owner() *capnweb.Stub { return e.owner.Dup() }

// FuzzAssembler feeds frames (each prefixed by its length byte) to an assembler: it must
// never panic nor return a message above its limit.
func FuzzAssembler(f *testing.F) {
	f.Add([]byte("\x0am\x00\x00\x00\x00\x00\x00\x00\x01[]"))
	f.Add([]byte("\x0ac\x00\x00\x00\x00\x00\x00\x00\x01ab\x0am\x00\x00\x00\x00\x00\x00\x00\x02cd"))
	f.Add([]byte("\x0cx\x00\x00\x00\x00\x00\x00\x00\x01bye"))
	f.Fuzz(func(t *testing.T, data []byte) {
		a := assembler{max: 16}
		for len(data) > 0 {
			n := min(int(data[0]), len(data)-1)
			msg, done, err := a.add(data[1 : 1+n])
			data = data[1+n:]
			if err != nil {
				return
			}
			if done && len(msg) > a.max {
				t.Fatalf("a message of %d bytes passed a limit of %d", len(msg), a.max)
			}
		}
	})
}

// BenchmarkPeerCall measures a small call's round trip n1 → n2 over a peer session, and the
// same call over an in-process pipe (the extra hop is the difference).
func BenchmarkPeerCall(b *testing.B) {
	b.Run("peer", func(b *testing.B) {
		nodes := testNodes(b, 2, nil)
		rs := startRouters(b, nodes, capnweb.Limits{}).routers
		s, err := rs[0].Dial(context.Background(), nodes[1].Name(), Hello{})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		benchCalls(b, s.Main())
	})
	b.Run("pipe", func(b *testing.B) {
		x, y := capnweb.Pipe()
		srv := capnweb.NewSession(x, capnweb.Options{Main: &ownerAPI{disposed: make(chan struct{})}})
		defer srv.Close()
		s := capnweb.NewSession(y, capnweb.Options{})
		defer s.Close()
		benchCalls(b, s.Main())
	})
}

// benchCalls makes b.N sequential calls and reports the p50 and p99 round trips.
func benchCalls(b *testing.B, main *capnweb.Stub) {
	ctx := context.Background()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if _, err := add(ctx, main); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
