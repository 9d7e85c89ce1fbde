// Package cluster tests cluster mode with real processes: three `atelier serve --cluster`
// nodes on loopback, clients on different nodes, and the failures the cluster must survive:
// kill -9 of a workspace's node, a paused node (SIGSTOP past its lease) and a drain.
package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"atelier/capnweb"
	"atelier/host/cluster"
	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/freeport"
	"atelier/tests/serveproc"
)

// leaseTTL is the nodes' --lease-ttl: short, so that failovers in the tests are quick.
const leaseTTL = 3 * time.Second

var tmpDir string

func TestMain(m *testing.M) { serveproc.Main(m, "cluster", &tmpDir) }

// testCluster is three running nodes.
type testCluster struct {
	bin   string
	nodes []*serveproc.Process
	admin string // the admin token one node printed on the first start
}

// startCluster launches n nodes routed to each other and waits until all of them listen.
func startCluster(t testing.TB, n int, extra ...string) *testCluster {
	t.Helper()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("cluster-test-secret-0123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := freeport.Take(t, n)
	c := &testCluster{bin: serveproc.Binary(t, tmpDir)}
	for i := range n {
		var routes []string
		for j := range n {
			if j != i {
				routes = append(routes, fmt.Sprintf("127.0.0.1:%d", ports[j]))
			}
		}
		args := []string{"--cluster", "--node", fmt.Sprintf("n%d", i+1), "--cluster-secret-file", secret, "--vault-key", filepath.Join(dir, "vault.key"),
			"--lease-ttl", leaseTTL.String(), "--gadget-idle", "10m", "--workspace-idle", "10m"}
		if n > 1 { // one node alone runs without routes (JetStream R1)
			args = append(args, "--cluster-addr", fmt.Sprintf("127.0.0.1:%d", ports[i]), "--routes", strings.Join(routes, ","), "--replicas", fmt.Sprint(min(n, 3)))
		}
		c.nodes = append(c.nodes, serveproc.Launch(t, c.bin, filepath.Join(dir, fmt.Sprintf("n%d.db", i+1)), filepath.Join(tmpDir, "cache"),
			append(args, extra...)...))
	}
	for _, p := range c.nodes {
		p.Wait(t)
	}
	// The token follows the listening line: wait for it a moment.
	tokenLine := regexp.MustCompile(`admin token[^\n]*:\n\s+(\S+)`)
	for deadline := time.Now().Add(10 * time.Second); c.admin == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, p := range c.nodes {
			if m := tokenLine.FindStringSubmatch(p.Output()); m != nil {
				c.admin = m[1]
			}
		}
	}
	if c.admin == "" {
		t.Fatal("no node printed the first-run admin token")
	}
	printed := 0
	for _, p := range c.nodes {
		if tokenLine.MatchString(p.Output()) {
			printed++
		}
	}
	if printed > 1 {
		t.Fatalf("%d nodes printed a first-run admin token, want one for the whole cluster", printed)
	}
	return c
}

// client is one Cap'n Web session with a node, authenticated.
type client struct {
	s    *capnweb.Session
	api  *capnweb.Stub
	todo *capnweb.Stub // ws.gadget("todo").connect(), once set up
}

func dial(t testing.TB, url, token string) *client {
	t.Helper()
	c, err := tryDial(url, token)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.s.Close() })
	return c
}

// tryDial is dial for a goroutine other than the test's: it returns the error, and the caller
// closes c.s.
func tryDial(url, token string) (*client, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := capnweb.DialWebSocket(ctx, url, capnweb.Options{})
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", url, err)
	}
	api, err := capnweb.AwaitAs[*capnweb.Stub](ctx, s.Main().Call(ctx, "authenticate", token))
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("authenticate at %s: %w", url, err)
	}
	return &client{s: s, api: api}, nil
}

// openTodo opens the workspace and connects to its to-do gadget.
func (c *client) openTodo(t testing.TB, ws string) {
	t.Helper()
	if err := c.tryOpenTodo(ws); err != nil {
		t.Fatal(err)
	}
}

// tryOpenTodo is openTodo for a goroutine other than the test's: it returns the error.
func (c *client) tryOpenTodo(ws string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	w := c.api.Call(ctx, "openWorkspace", ws)
	conn, err := capnweb.AwaitAs[*capnweb.Stub](ctx, w.Call(ctx, "gadget", "todo").Call(ctx, "connect"))
	if err != nil {
		return fmt.Errorf("open workspace %s and connect to todo: %w", ws, err)
	}
	c.todo = conn
	return nil
}

// add adds an item and reports the error, if any.
func (c *client) add(title string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := c.todo.Call(ctx, "add", title).Await(ctx)
	return err
}

// titles lists the items' titles.
func (c *client) titles(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	items, err := capnweb.AwaitAs[[]struct{ Title string }](ctx, c.todo.Call(ctx, "list"))
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var out []string
	for _, it := range items {
		out = append(out, it.Title)
	}
	return out
}

// setup signs a user up at node 0, creates a workspace there with the Go to-do gadget, and
// returns the user's token and the workspace id.
func (tc *testCluster) setup(t testing.TB) (token, ws string) {
	t.Helper()
	code, err := os.ReadFile(guesttest.Path(t, "gadgets/todo-go"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := capnweb.DialWebSocket(ctx, tc.nodes[0].URL, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	user := fmt.Sprintf("u%d", time.Now().UnixNano())
	if token, err = capnweb.AwaitAs[string](ctx, s.Main().Call(ctx, "signup", user, "a long enough password")); err != nil {
		t.Fatalf("signup: %v", err)
	}
	authed := s.Main().Call(ctx, "authenticate", token)
	w := authed.Call(ctx, "createWorkspace", "busy")
	info, err := capnweb.AwaitAs[struct{ ID string }](ctx, w.Get("info"))
	if err != nil {
		t.Fatalf("create workspace: %v", err)
	}
	grants := []string{"atelier:host/kv", "atelier:host/log", "atelier:host/events"}
	if _, err := w.Call(ctx, "createGadget", "todo", code, grants).Await(ctx); err != nil {
		t.Fatalf("create gadget: %v", err)
	}
	return token, info.ID
}

// busyWorkspace sets up a workspace on node 1 and a writer adding items to it through node 2,
// and waits until the writer's first 10 items were acknowledged.
func (tc *testCluster) busyWorkspace(t testing.TB) (token, ws string, w *writer) {
	t.Helper()
	token, ws = tc.setup(t)
	c := dial(t, tc.nodes[1].URL, token)
	c.openTodo(t, ws)
	w = startWriter(c, "w")
	w.waitAcked(t, 10, 30*time.Second)
	return token, ws, w
}

// status runs `atelier cluster status` against node i as the admin.
func (tc *testCluster) status(t testing.TB, i int) string {
	t.Helper()
	return tc.runStatus(t, i)
}

// statusJSON runs `atelier cluster status --json` against node i as the admin.
func (tc *testCluster) statusJSON(t testing.TB, i int) string {
	t.Helper()
	return tc.runStatus(t, i, "--json")
}

func (tc *testCluster) runStatus(t testing.TB, i int, flags ...string) string {
	t.Helper()
	cmd := exec.Command(tc.bin, append([]string{"cluster", "status", "--server", tc.nodes[i].URL}, flags...)...)
	cmd.Env = append(os.Environ(), "ATELIER_TOKEN="+tc.admin, "XDG_CONFIG_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("atelier cluster status: %v\n%s", err, out)
	}
	return string(out)
}

// ownerOf returns the node running ws according to `atelier cluster status` at node i ("" if
// none), once the status shows one (one of want, if given) or after 20 s.
func (tc *testCluster) ownerOf(t *testing.T, i int, ws string, want ...string) string {
	t.Helper()
	// Every caller expects the workspace to run somewhere. While a stream elects a leader
	// (after a node paused or left) the status may be incomplete, or come from a replica that
	// is behind and show no live lease, or an old one, for a moment: ask again.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		st := tc.status(t, i)
		owner := ""
		sc := bufio.NewScanner(strings.NewReader(st))
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == ws {
				owner = f[1]
			}
		}
		settled := owner != "" && (len(want) == 0 || slices.Contains(want, owner))
		if (settled && !strings.Contains(st, "incomplete")) || time.Now().After(deadline) {
			return owner
		}
	}
}

// writePace spaces a writer's writes, so that the items of a test stay below the 1000 that
// the gadget's list() returns (kv's list limit).
const writePace = 25 * time.Millisecond

// writer adds items through one client until stopped, and keeps what was acknowledged.
type writer struct {
	c     *client
	name  string
	mu    sync.Mutex
	acked []string
	sent  []time.Time // when each acked write was sent
	times []time.Time // and when it was acknowledged
	fails []error
	stop  chan struct{}
	done  chan struct{}
}

func startWriter(c *client, name string) *writer {
	w := &writer{c: c, name: name, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			default:
			}
			title := fmt.Sprintf("%s-%d", name, i)
			sent := time.Now()
			err := c.add(title)
			w.mu.Lock()
			if err == nil {
				w.acked = append(w.acked, title)
				w.sent = append(w.sent, sent)
				w.times = append(w.times, time.Now())
			} else {
				w.fails = append(w.fails, err)
			}
			w.mu.Unlock()
			if err != nil {
				time.Sleep(100 * time.Millisecond)
			} else {
				time.Sleep(writePace)
			}
		}
	}()
	return w
}

// waitAcked waits until the writer has n acknowledged items more than it had at from.
func (w *writer) waitAcked(t testing.TB, n int, within time.Duration) {
	t.Helper()
	w.mu.Lock()
	want := len(w.acked) + n
	w.mu.Unlock()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		w.mu.Lock()
		got := len(w.acked)
		w.mu.Unlock()
		if got >= want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Fatalf("writer %s: %d acknowledged items within %v, want %d; errors: %v", w.name, len(w.acked), within, want, w.fails)
}

func (w *writer) finish() ([]string, []error) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.acked), slices.Clone(w.fails)
}

// checkAll fails unless every acknowledged title is in the list.
func checkAll(t *testing.T, list, acked []string) {
	t.Helper()
	if len(list) >= 1000 {
		t.Fatalf("the writers wrote %d items, more than the 1000 list() returns: the check cannot see them all", len(list))
	}
	have := map[string]bool{}
	for _, s := range list {
		have[s] = true
	}
	var lost []string
	for _, s := range acked {
		if !have[s] {
			lost = append(lost, s)
		}
	}
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged writes are lost: %v", len(lost), len(acked), lost)
	}
}

// TestTodoScenarioAcrossNodes runs the kernel's end-to-end scenario (tests/e2e/todo.mjs, the
// official capnweb client) with its phases on different nodes: signup, deploy and two live
// subscribers on node 1, then login, the items, a new item and its event on node 2.
func TestTodoScenarioAcrossNodes(t *testing.T) {
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	nodeDir := capnwebtests.NodeDir(root)
	if err := capnwebtests.CheckNode(nodeDir); err != nil {
		t.Fatal(err)
	}
	tc := startCluster(t, 3)
	code := guesttest.Path(t, "gadgets/todo-go")
	state := filepath.Join(t.TempDir(), "state.json")
	script := filepath.Join(root, "tests", "e2e", "todo.mjs")
	for _, run := range [][]string{{"setup", tc.nodes[0].URL, code, state}, {"check", tc.nodes[1].URL, state}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := capnwebtests.RunNode(ctx, nodeDir, script, run...)
		cancel()
		t.Logf("node todo.mjs %s (node %s):\n%s", run[0], run[1], out)
		if err != nil {
			t.Fatalf("todo scenario, phase %s: %v", run[0], err)
		}
	}
	st := tc.status(t, 2)
	for _, n := range []string{"n1", "n2", "n3"} {
		if !strings.Contains(st, n+" ") {
			t.Errorf("cluster status lacks node %s:\n%s", n, st)
		}
	}
	t.Logf("atelier cluster status:\n%s", st)
	var js cluster.Status
	if err := json.Unmarshal([]byte(tc.statusJSON(t, 2)), &js); err != nil {
		t.Fatal(err)
	}
	for _, n := range js.Nodes {
		held := 0
		for _, owner := range js.Workspaces {
			if owner == n.Name {
				held++
			}
		}
		if n.Leases != held {
			t.Errorf("cluster status: node %s runs %d workspaces, but the placement table gives it %d:\n%s", n.Name, n.Leases, held, st)
		}
	}
	for i, p := range tc.nodes {
		m := tc.metrics(t, p)
		want := "atelier_cluster_leases_held 0"
		if i == 0 {
			want = "atelier_cluster_leases_held 1" // the workspace runs where it was created
		}
		if !strings.Contains(m, want) || !strings.Contains(m, "atelier_cluster_replica_lag ") {
			t.Errorf("/metrics of node %d lacks %q or the replica lag:\n%s", i+1, want, m)
		}
	}
}

// metrics reads a node's /metrics as the admin.
func (tc *testCluster) metrics(t testing.TB, p *serveproc.Process) string {
	t.Helper()
	u := strings.Replace(strings.TrimSuffix(p.URL, "/api"), "ws://", "http://", 1) + "/metrics"
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+tc.admin)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", u, resp.Status, err)
	}
	return string(b)
}

// TestKillOwnerLosesNoAcknowledgedWrite kills (-9) the node running a busy workspace while a
// client on another node writes to it: the workspace moves, the client carries on, and every
// write that was acknowledged is still there; a client subscribed through the third node
// hears of the writes made after the move. It reports the stall.
func TestKillOwnerLosesNoAcknowledgedWrite(t *testing.T) {
	tc := startCluster(t, 3)
	token, ws, w := tc.busyWorkspace(t)
	if owner := tc.ownerOf(t, 1, ws); owner != "n1" {
		t.Fatalf("workspace runs on %q, want n1 (where it was created)", owner)
	}
	heard := subscribeTitles(t, tc.nodes[2].URL, token, ws)
	killed := time.Now()
	tc.nodes[0].Kill(t)
	stall := w.waitStall(t, killed, 60*time.Second)
	w.waitAcked(t, 20, 60*time.Second)
	acked, fails := w.finish()
	heard.hearsNext(t, w.c, 30*time.Second)
	t.Logf("kill -9 of the owner: %d writes acknowledged, %d failed during the failover; stall %v (lease TTL %v)",
		len(acked), len(fails), stall.Round(time.Millisecond), leaseTTL)
	// A write in flight on the killed node fails (its outcome is unknown); the writes after it
	// wait for the new owner instead of failing with MOVED while the old lease runs out.
	for _, err := range fails {
		if strings.Contains(err.Error(), "MOVED") || strings.Contains(err.Error(), "keeps moving") {
			t.Errorf("a write during the failover failed instead of waiting for the new owner: %v", err)
		}
	}
	reader := dial(t, tc.nodes[2].URL, token)
	reader.openTodo(t, ws)
	checkAll(t, reader.titles(t), acked)
	if owner := tc.ownerOf(t, 2, ws); owner != "n2" && owner != "n3" {
		t.Fatalf("after the kill the workspace runs on %q, want n2 or n3", owner)
	}
}

// titleSet collects the titles of the items a subscription to the to-do gadget's events heard of.
type titleSet struct {
	mu     sync.Mutex
	titles map[string]bool
}

// subscribeTitles subscribes, through the node at url, to the events of workspace ws's to-do
// gadget.
func subscribeTitles(t testing.TB, url, token, ws string) *titleSet {
	t.Helper()
	c := dial(t, url, token)
	h := &titleSet{titles: map[string]bool{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g := c.api.Call(ctx, "openWorkspace", ws).Call(ctx, "gadget", "todo")
	_, err := g.Call(ctx, "subscribe", func(ev map[string]any) {
		payload, _ := ev["payload"].(map[string]any)
		todo, _ := payload["todo"].(map[string]any)
		title, _ := todo["title"].(string)
		h.mu.Lock()
		h.titles[title] = true
		h.mu.Unlock()
	}).Await(ctx)
	if err != nil {
		t.Fatalf("subscribe at %s: %v", url, err)
	}
	return h
}

// hearsNext adds items through c until the subscriber hears of one: what is published while a
// subscription moves to the workspace's new node is not replayed, what follows must arrive.
func (h *titleSet) hearsNext(t testing.TB, c *client, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for i := 0; time.Now().Before(deadline); i++ {
		title := fmt.Sprintf("probe-%d", i)
		if err := c.add(title); err != nil {
			t.Fatalf("add %s: %v", title, err)
		}
		for wait := time.Now().Add(500 * time.Millisecond); time.Now().Before(wait); time.Sleep(20 * time.Millisecond) {
			h.mu.Lock()
			ok := h.titles[title]
			h.mu.Unlock()
			if ok {
				return
			}
		}
	}
	t.Fatalf("the subscriber heard of no item added within %v after the move", within)
}

// stallAfter is the time from t to the acknowledgement of the first write sent after it (-1:
// none yet).
func (w *writer) stallAfter(t time.Time) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, at := range w.sent {
		if at.After(t) {
			return w.times[i].Sub(t)
		}
	}
	return -1
}

// waitStall waits until a write sent after t was acknowledged and returns stallAfter(t).
func (w *writer) waitStall(tb testing.TB, t time.Time, within time.Duration) time.Duration {
	tb.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if d := w.stallAfter(t); d >= 0 {
			return d
		}
	}
	tb.Fatalf("writer %s: no write sent after the failure was acknowledged within %v", w.name, within)
	return 0
}

// TestPausedOwnerIsFenced pauses (SIGSTOP) the node running a workspace past its lease: a
// client on another node carries on with a new owner; after SIGCONT the old owner's lease is
// lost, it stops the workspace, and the writes acknowledged by the new owner are all there.
func TestPausedOwnerIsFenced(t *testing.T) {
	tc := startCluster(t, 3)
	token, ws, w := tc.busyWorkspace(t)
	tc.nodes[0].Signal(t, syscall.SIGSTOP)
	w.waitAcked(t, 20, 60*time.Second) // moved to n2 or n3 once the lease expired
	owner := tc.ownerOf(t, 1, ws)
	if owner != "n2" && owner != "n3" {
		t.Fatalf("while n1 is paused the workspace runs on %q, want n2 or n3", owner)
	}
	// A client of the paused node: its call waits in the socket and runs after SIGCONT.
	late := make(chan error, 1)
	go func() { // not the test's goroutine: it must not stop the test, and must always answer
		old, err := tryDial(tc.nodes[0].URL, token)
		if err != nil {
			late <- err
			return
		}
		defer old.s.Close()
		if err := old.tryOpenTodo(ws); err != nil {
			late <- err
			return
		}
		late <- old.add("late-via-n1")
	}()
	time.Sleep(200 * time.Millisecond)
	tc.nodes[0].Signal(t, syscall.SIGCONT)
	w.waitAcked(t, 10, 30*time.Second)
	acked, _ := w.finish()
	if err := <-late; err != nil {
		t.Logf("the call sent to the paused node failed (allowed): %v", err)
	} else {
		acked = append(acked, "late-via-n1")
	}
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(tc.nodes[0].Output(), "workspace lease lost") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(tc.nodes[0].Output(), "workspace lease lost") {
		t.Errorf("the resumed node did not stop the workspace whose lease it lost")
	}
	reader := dial(t, tc.nodes[2].URL, token)
	reader.openTodo(t, ws)
	checkAll(t, reader.titles(t), acked)
	// The resumed node may lead a stream again for a moment and answer from its state before
	// the pause: the owner must be the new one once the streams settle.
	if now := tc.ownerOf(t, 2, ws, owner); now != owner {
		t.Fatalf("after SIGCONT the workspace runs on %q, want it to stay on %s", now, owner)
	}
}

// TestDrainFailsNoCall drains the node running a workspace while clients on the two other
// nodes write to it: the workspace moves, no call fails, and a subscriber through another node
// goes on hearing of the writes. The drained node then stops and rejoins, rebuilding its
// replica from a snapshot: the nodes snapshot the state and compact the log every 25 entries.
func TestDrainFailsNoCall(t *testing.T) {
	tc := startCluster(t, 3, "--snapshot-every", "25")
	token, ws := tc.setup(t)
	var ws2 []*writer
	for i := 1; i <= 2; i++ {
		c := dial(t, tc.nodes[i].URL, token)
		c.openTodo(t, ws)
		ws2 = append(ws2, startWriter(c, fmt.Sprintf("n%d", i+1)))
	}
	for _, w := range ws2 {
		w.waitAcked(t, 10, 30*time.Second)
	}
	heard := subscribeTitles(t, tc.nodes[1].URL, token, ws)
	cmd := exec.Command(tc.bin, "cluster", "drain", "--server", tc.nodes[0].URL)
	cmd.Env = append(os.Environ(), "ATELIER_TOKEN="+tc.admin, "XDG_CONFIG_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("atelier cluster drain: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}
	for _, w := range ws2 {
		w.waitAcked(t, 10, 30*time.Second)
	}
	var acked []string
	for _, w := range ws2 {
		a, fails := w.finish()
		if len(fails) > 0 {
			t.Errorf("writer %s: %d calls failed during the drain: %v", w.name, len(fails), fails)
		}
		acked = append(acked, a...)
	}
	heard.hearsNext(t, ws2[0].c, 30*time.Second)
	if owner := tc.ownerOf(t, 1, ws); owner != "n2" && owner != "n3" {
		t.Fatalf("after the drain the workspace runs on %q, want n2 or n3", owner)
	}
	reader := dial(t, tc.nodes[2].URL, token)
	reader.openTodo(t, ws)
	checkAll(t, reader.titles(t), acked)

	// The log was compacted meanwhile (its oldest entries are gone).
	logLine := regexp.MustCompile(`log: \d+ entries, [^;]+; newest snapshot at entry (\d+)`)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(250 * time.Millisecond) {
		st := tc.status(t, 1)
		if logLine.MatchString(st) {
			t.Logf("%s", logLine.FindString(st))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no snapshot after %d acknowledged writes with --snapshot-every 25:\n%s", len(acked), st)
		}
	}
	// An operator compacts at once; a user who is not the admin may not.
	cmd = exec.Command(tc.bin, "cluster", "compact", "--server", tc.nodes[2].URL)
	cmd.Env = append(os.Environ(), "ATELIER_TOKEN="+tc.admin, "XDG_CONFIG_HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil || !regexp.MustCompile(`snapshot at entry \d+|nothing to do`).Match(out) {
		t.Fatalf("atelier cluster compact: %v\n%s", err, out)
	} else {
		t.Logf("%s", out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := reader.api.Call(ctx, "compactLog").Await(ctx); errCode(err) != "FORBIDDEN" {
		t.Fatalf("compactLog by a user who is not the admin: %v, want FORBIDDEN", err)
	}
	// The drained node stops on SIGTERM (status 0), starts again, rebuilds its replica from
	// the newest snapshot and the log after it, and serves the workspace's items to a client
	// of its own.
	tc.nodes[0].Terminate(t)
	tc.nodes[0] = tc.nodes[0].Restart(t)
	again := dial(t, tc.nodes[0].URL, token)
	again.openTodo(t, ws)
	checkAll(t, again.titles(t), acked)
}

// TestBoundariesHoldAcrossNodes checks that routing to another node keeps every check: a
// stranger cannot open someone's workspace through any node, and a token revoked on one node
// stops a session on another node at its next call, including calls it routes to the owner.
func TestBoundariesHoldAcrossNodes(t *testing.T) {
	tc := startCluster(t, 3)
	token, ws := tc.setup(t) // workspace on n1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// A stranger signs up on n3 and tries the workspace through n2 and n3.
	s, err := capnweb.DialWebSocket(ctx, tc.nodes[2].URL, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	strangerToken, err := capnweb.AwaitAs[string](ctx, s.Main().Call(ctx, "signup", "stranger", "a long enough password"))
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		c := dial(t, tc.nodes[i].URL, strangerToken)
		_, err := c.api.Call(ctx, "openWorkspace", ws).Call(ctx, "gadget", "todo").Call(ctx, "connect").Call(ctx, "list").Await(ctx)
		if code := errCode(err); code != "FORBIDDEN" {
			t.Fatalf("a stranger opened another user's workspace through node %d: err %v (code %q), want FORBIDDEN", i+1, err, code)
		}
	}

	// The owner's second session (a login of its own) on n2 reaches the workspace on n1; the
	// token is revoked through n3; the n2 session's next routed call is refused.
	var user struct{ Username string }
	if user, err = capnweb.AwaitAs[struct{ Username string }](ctx, dial(t, tc.nodes[0].URL, token).api.Get("whoami")); err != nil {
		t.Fatal(err)
	}
	second, err := capnweb.AwaitAs[string](ctx, s.Main().Call(ctx, "login", user.Username, "a long enough password"))
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, tc.nodes[1].URL, second)
	c.openTodo(t, ws)
	if err := c.add("before logout"); err != nil {
		t.Fatal(err)
	}
	if _, err := dial(t, tc.nodes[2].URL, second).api.Call(ctx, "logout").Await(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	landed := false // a call may land while the revocation is still reaching n2 and n1
	for {
		err := c.add("after logout")
		if errCode(err) == "UNAUTHORIZED" {
			break
		}
		landed = landed || err == nil
		if time.Now().After(deadline) {
			t.Fatalf("a session on n2 still calls the workspace 10 s after its token was revoked on n3: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The first token still works, and only calls that were acknowledged landed.
	reader := dial(t, tc.nodes[0].URL, token)
	reader.openTodo(t, ws)
	if titles := reader.titles(t); slices.Contains(titles, "after logout") != landed {
		t.Fatalf("items %v after the logout, though the calls after it were %s", titles, map[bool]string{true: "acknowledged", false: "refused"}[landed])
	}
}

// errCode is the code property of a refused call's error ("" for none).
func errCode(err error) string {
	var ce *capnweb.Error
	if errors.As(err, &ce) {
		if code, ok := ce.Props["code"].(string); ok {
			return code
		}
	}
	return ""
}

// TestCodeModeOverMCPOnAnotherNode runs Code Mode through the MCP endpoint of a node that does
// not run the workspace: the call is carried out on the node that does, as the same agent, and
// audited there as made via MCP.
func TestCodeModeOverMCPOnAnotherNode(t *testing.T) {
	tc := startCluster(t, 3)
	token, ws := tc.setup(t) // workspace on n1
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := dial(t, tc.nodes[0].URL, token)
	scope := map[string]any{"workspaces": map[string]any{ws: map[string]any{"role": "use", "gadgets": []string{"*"}}}}
	agent, err := capnweb.AwaitAs[struct{ Token string }](ctx, owner.api.Call(ctx, "createAgent", "helper", scope))
	if err != nil {
		t.Fatal(err)
	}
	endpoint := strings.Replace(strings.TrimSuffix(tc.nodes[2].URL, "/api"), "ws://", "http://", 1) + "/mcp"
	c := gomcp.NewClient(&gomcp.Implementation{Name: "cluster-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &gomcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: bearer(agent.Token)}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"workspace": ws,
		"code": `export default async function (env) { return (await env.todo.add("via mcp on n3")).title }`}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	for _, ct := range res.Content {
		if tx, ok := ct.(*gomcp.TextContent); ok {
			text.WriteString(tx.Text)
		}
	}
	if res.IsError || !strings.Contains(text.String(), "via mcp on n3") {
		t.Fatalf("execute_code through n3: %s", text.String())
	}
	reader := dial(t, tc.nodes[1].URL, token)
	reader.openTodo(t, ws)
	if !slices.Contains(reader.titles(t), "via mcp on n3") {
		t.Fatal("the snippet's item is not in the workspace")
	}
	if got := tc.ownerOf(t, 1, ws); got != "n1" {
		t.Fatalf("the workspace moved to %q; MCP on n3 should have reached it on n1", got)
	}

	// A dry run through n3 is held on n1, where commit_dry_run and discard_dry_run through n3
	// reach it.
	dry := func() string {
		res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: "execute_code", Arguments: map[string]any{"workspace": ws, "dry_run": true,
			"code": `export default async function (env) { return (await env.todo.add("dry on n3")).title }`}})
		if err != nil || res.IsError {
			t.Fatalf("execute_code with dry_run through n3: %v %v", err, res)
		}
		sc, _ := res.StructuredContent.(map[string]any)
		d, _ := sc["dryRun"].(map[string]any)
		id, _ := d["id"].(string)
		if id == "" {
			t.Fatalf("execute_code with dry_run through n3: %v", sc)
		}
		return id
	}
	if slices.Contains(reader.titles(t), "dry on n3") {
		t.Fatal("a dry run changed the workspace")
	}
	for _, tool := range []string{"discard_dry_run", "commit_dry_run"} {
		res, err := cs.CallTool(ctx, &gomcp.CallToolParams{Name: tool, Arguments: map[string]any{"workspace": ws, "id": dry()}})
		if err != nil || res.IsError {
			t.Fatalf("%s through n3: %v %v", tool, err, res)
		}
	}
	n := 0
	for _, title := range reader.titles(t) {
		if title == "dry on n3" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("after one discarded and one committed dry run the list holds %d items \"dry on n3\", want 1", n)
	}
}

// bearer adds an Authorization header with its token to every request.
type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}
