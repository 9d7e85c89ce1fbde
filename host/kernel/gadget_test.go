package kernel_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/agent/agenttest"
	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

var probeGrants = []string{"atelier:host/kv", "atelier:host/bindings"}

func probe(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/probe.wat")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestBadUploadsChangeNothing(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	code := guesttest.Bytes(t, counterGo)
	refused(t, ws.Call(ctx, "createGadget", "counter", []byte("not a component"), counterGrants), "INVALID_ARGUMENT", "not a usable component")
	refused(t, ws.Call(ctx, "createGadget", "counter", code, []string{"atelier:host/log"}), "INVALID_ARGUMENT", `grant "atelier:host/kv" would allow it`)
	refused(t, ws.Call(ctx, "createGadget", "counter", code, []string{"nonsense"}), "INVALID_ARGUMENT", "grant nonsense: no such interface")
	refused(t, ws.Call(ctx, "createGadget", "../etc", code, counterGrants), "INVALID_ARGUMENT", "lowercase letters")
	refused(t, ws.Call(ctx, "createGadget", "counter", []byte{}, counterGrants), "INVALID_ARGUMENT", "want 1 to")
	if gs := await(t, ws.Call(ctx, "listGadgets")).([]any); len(gs) != 0 {
		t.Fatalf("refused uploads left gadgets: %v", gs)
	}
	counter := ws.Call(ctx, "createGadget", "counter", code, counterGrants)
	await(t, counter)
	refused(t, ws.Call(ctx, "createGadget", "counter", code, counterGrants), "CONFLICT", "already has a gadget")
	refused(t, counter.Call(ctx, "deploy", []byte("junk")), "INVALID_ARGUMENT", "not a usable component")
	refused(t, counter.Call(ctx, "deploy", code, []string{}), "INVALID_ARGUMENT", "would allow it")
	refused(t, ws.Call(ctx, "gadget", "nope").Call(ctx, "connect"), "NOT_FOUND", `no gadget "nope"`)

	app := counter.Call(ctx, "connect")
	refused(t, app.Call(ctx, "format", "/"), "NOT_FOUND", `no exported function "format"`)
	refused(t, app.Call(ctx, "increment", "five"), "INVALID_ARGUMENT", "args[0]")
	if got := await(t, app.Call(ctx, "increment", 1)); got != float64(1) {
		t.Fatalf("increment after refused calls = %v", got)
	}
	if v := await(t, counter.Call(ctx, "versions")).([]any); len(v) != 1 {
		t.Fatalf("refused deploys left versions: %v", v)
	}
}

func TestStateLimitsAndTraps(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	p := ws.Call(ctx, "createGadget", "probe", probe(t), probeGrants).Call(ctx, "connect")
	await(t, p.Call(ctx, "set", "k", []byte("v1")))

	// An oversize value is refused by kv; nothing is stored.
	refused(t, p.Call(ctx, "set", "big", make([]byte, 1<<20+1)), "GADGET_ERROR", "quota-exceeded")
	if got := await(t, p.Call(ctx, "get", "big")); got != nil {
		t.Fatalf("an oversize value was stored: %d bytes", len(got.([]byte)))
	}
	// A call that traps after writing leaves the state as it was; the next call gets a fresh
	// instance with the state intact.
	refused(t, p.Call(ctx, "setThenTrap", "k", []byte("v2")), "GADGET_ERROR", "trap")
	if got := await(t, p.Call(ctx, "get", "k")); !bytes.Equal(got.([]byte), []byte("v1")) {
		t.Fatalf("after a trapped call k = %q, want v1", got)
	}
}

func TestVersionsAndRollbackKeepState(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	code := guesttest.Bytes(t, counterGo)
	counter := ws.Call(ctx, "createGadget", "counter", code, counterGrants)
	app := counter.Call(ctx, "connect")
	await(t, app.Call(ctx, "increment", 3))
	info := await(t, counter.Call(ctx, "deploy", code)).(map[string]any)
	if info["current"] != float64(2) || len(info["versions"].([]any)) != 2 || len(info["grants"].([]any)) != 2 {
		t.Fatalf("deploy without grants: %v", info)
	}
	if got := await(t, app.Call(ctx, "get")); got != float64(3) {
		t.Fatalf("after deploy get() = %v, want 3", got)
	}
	info = await(t, counter.Call(ctx, "rollback", 1)).(map[string]any)
	if info["current"] != float64(1) {
		t.Fatalf("rollback: %v", info)
	}
	refused(t, counter.Call(ctx, "rollback", 9), "NOT_FOUND", "no version 9")
	await(t, counter.Call(ctx, "rename", "tally"))
	if got := await(t, ws.Call(ctx, "gadget", "tally").Call(ctx, "connect").Call(ctx, "get")); got != float64(3) {
		t.Fatalf("after rollback and rename get() = %v, want 3", got)
	}
	lines := await(t, counter.Call(ctx, "inspect")).([]any)
	if !strings.Contains(strings.Join(anyStrings(lines), "\n"), "export increment") {
		t.Fatalf("inspect = %v", lines)
	}
	await(t, counter.Call(ctx, "delete"))
	refused(t, app.Call(ctx, "get"), "NOT_FOUND", "deleted")
	await(t, ws.Call(ctx, "createGadget", "tally", code, counterGrants))
	if got := await(t, ws.Call(ctx, "gadget", "tally").Call(ctx, "connect").Call(ctx, "get")); got != float64(0) {
		t.Fatalf("a re-created gadget sees old state: %v", got)
	}
}

func anyStrings(l []any) []string {
	out := make([]string, len(l))
	for i, x := range l {
		out[i], _ = x.(string)
	}
	return out
}

// collector records what a subscription callback receives (fn); it never blocks the delivery.
type collector struct{ *agenttest.Events }

func newCollector() collector { return collector{agenttest.NewEvents()} }

// fn is the subscription's callback.
func (c collector) fn(v map[string]any) { c.Fn(v) }

// wait waits up to 10 seconds for n values and returns those received.
func (c collector) wait(t *testing.T, n int) []map[string]any {
	t.Helper()
	var got []map[string]any
	c.Await(t, 10*time.Second, fmt.Sprintf("%d values", n), func(g []map[string]any) bool {
		got = g
		return len(g) >= n
	})
	return got
}

// waitFor returns the first value for which match holds, waiting up to 10 seconds for it.
func (c collector) waitFor(t *testing.T, what string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	return c.WaitFor(t, 10*time.Second, what, match)
}

func TestEventsReachEverySubscriber(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada := s.user(t, "ada")
	ws := ada.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	gadgets := newCollector()
	await(t, ws.Call(ctx, "subscribeGadgets", gadgets.fn))
	todo := ws.Call(ctx, "createGadget", "todo", guesttest.Bytes(t, todoJS), todoGrants)
	if g := gadgets.wait(t, 1)[0]; g["type"] != "added" || g["gadget"].(map[string]any)["name"] != "todo" {
		t.Fatalf("gadget list event = %v", g)
	}

	one, two, logs := newCollector(), newCollector(), newCollector()
	sub1 := await(t, todo.Call(ctx, "subscribe", one.fn)).(*capnweb.Stub)
	other := s.dial(t).Call(ctx, "login", "ada", "password-ada")
	tws := s.dial(t).Call(ctx, "authenticate", other).Call(ctx, "openWorkspace", id)
	await(t, tws.Call(ctx, "gadget", "todo").Call(ctx, "subscribe", two.fn))
	await(t, ws.Call(ctx, "subscribeConsole", logs.fn))

	app := todo.Call(ctx, "connect")
	await(t, app.Call(ctx, "add", "buy milk"))
	for _, c := range []collector{one, two} {
		ev := c.wait(t, 1)[0]
		if ev["topic"] != "todos" || ev["payload"].(map[string]any)["kind"] != "added" {
			t.Fatalf("event = %v", ev)
		}
	}
	if l := logs.wait(t, 1)[0]; l["gadget"] != "todo" || !strings.Contains(l["text"].(string), "buy milk") {
		t.Fatalf("console line = %v", l)
	}
	await(t, sub1.Call(ctx, "cancel"))
	await(t, app.Call(ctx, "add", "walk dog"))
	two.wait(t, 2)
	if n := len(one.wait(t, 1)); n != 1 {
		t.Fatalf("a cancelled subscription got %d events", n)
	}
	// A trapped or refused call publishes nothing: toggle of a missing id fails.
	refused(t, app.Call(ctx, "toggle", 99), "GADGET_ERROR", "no todo with id 99")
}

func TestIdleGadgetsAndWorkspacesStop(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		// Long enough that the check right after the first call sees them running, also under
		// the race detector on a loaded machine; short enough to wait for.
		c.GadgetIdle, c.WorkspaceIdle = 400*time.Millisecond, 800*time.Millisecond
	})
	_, _, app := home(t, s.user(t, "ada"))
	if st := s.k.Stats(); st.Workspaces != 1 || st.Actors != 1 {
		t.Fatalf("stats while busy: %+v", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st := s.k.Stats(); st.Workspaces != 0 || st.Actors != 0; st = s.k.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("nothing was stopped: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The old stubs restart the overseer and the gadget, with the state intact.
	if got := await(t, app.Call(ctx, "increment", 1)); got != float64(2) {
		t.Fatalf("after an idle stop increment = %v, want 2", got)
	}
}

func TestBindings(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _, _ := home(t, s.user(t, "ada"))
	p := ws.Call(ctx, "createGadget", "probe", probe(t), probeGrants).Call(ctx, "connect")
	refused(t, p.Call(ctx, "call", "c", "increment", "[3]"), "GADGET_ERROR", `no binding "c"`)
	await(t, ws.Call(ctx, "bind", "probe", "c", "counter"))
	if got := await(t, p.Call(ctx, "call", "c", "increment", "[3]")); got != "4" {
		t.Fatalf("call through a binding = %v, want 4", got)
	}
	refused(t, p.Call(ctx, "call", "c", "increment", "not json"), "GADGET_ERROR", "JSON array")
	refused(t, p.Call(ctx, "call", "c", "nope", "[]"), "GADGET_ERROR", `no exported function "nope"`)
	// A gadget calling itself would wait for itself: refused.
	await(t, ws.Call(ctx, "bind", "probe", "self", "probe"))
	refused(t, p.Call(ctx, "call", "self", "get", `["k"]`), "GADGET_ERROR", "call chain")
	info := await(t, ws.Call(ctx, "gadget", "probe").Call(ctx, "info")).(map[string]any)
	if b := info["bindings"].(map[string]any); b["c"] != "counter" || b["self"] != "probe" {
		t.Fatalf("bindings = %v", b)
	}
	await(t, ws.Call(ctx, "unbind", "probe", "c"))
	refused(t, p.Call(ctx, "call", "c", "get", "[]"), "GADGET_ERROR", `no binding "c"`)
}

func TestBlueprints(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws, _, _ := home(t, ada)
	bp := await(t, ws.Call(ctx, "publishBlueprint", "counter", "Counter", "counts")).(string)
	list := await(t, ws.Call(ctx, "listBlueprints")).([]any)
	if len(list) != 1 || list[0].(map[string]any)["title"] != "Counter" {
		t.Fatalf("listBlueprints = %v", list)
	}
	c2 := ws.Call(ctx, "createGadgetFromBlueprint", bp, "counter2").Call(ctx, "connect")
	if got := await(t, c2.Call(ctx, "get")); got != float64(0) {
		t.Fatalf("a blueprint carried data: get() = %v", got)
	}
	archive := await(t, ws.Call(ctx, "exportBlueprint", bp)).([]byte)

	bws := bob.Call(ctx, "createWorkspace", "bobs")
	refused(t, bws.Call(ctx, "createGadgetFromBlueprint", bp, "stolen"), "NOT_FOUND", "no blueprint")
	refused(t, bws.Call(ctx, "exportBlueprint", bp), "NOT_FOUND", "no blueprint")
	refused(t, bws.Call(ctx, "importBlueprint", []byte("junk")), "INVALID_ARGUMENT", "not a gzip'd tar")
	imported := await(t, bws.Call(ctx, "importBlueprint", archive)).(string)
	if got := await(t, bws.Call(ctx, "createGadgetFromBlueprint", imported, "mine").Call(ctx, "connect").Call(ctx, "increment", 2)); got != float64(2) {
		t.Fatalf("gadget from an imported blueprint: increment = %v", got)
	}
}

// TestIdleInstancesTrimmed checks that the instances of gadgets idle for GadgetTrim, a
// component's and a JS gadget's, are trimmed once per idle period and stay live, and that
// their next calls answer with the state intact.
func TestIdleInstancesTrimmed(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.GadgetTrim, c.GadgetIdle = 20*time.Millisecond, time.Hour
	})
	ws, _, counter := home(t, s.user(t, "ada")) // the count is 1
	todo := ws.Call(ctx, "createGadget", "todo", jsFiles(t, todoJSGadget), jsGrants).Call(ctx, "connect")
	await(t, todo.Call(ctx, "add", "buy milk"))
	waitTrimmed := func(round int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for st := s.k.Stats(); st.Trimmed != 2; st = s.k.Stats() {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: instances not trimmed: %+v", round, st)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if st := s.k.Stats(); st.Actors != 2 {
			t.Fatalf("round %d: trimmed instances were evicted: %+v", round, st)
		}
	}
	for round := 1; round <= 2; round++ {
		waitTrimmed(round)
		if got := await(t, counter.Call(ctx, "increment", 1)); got != float64(1+round) {
			t.Fatalf("round %d: increment after the trim = %v, want %d", round, got, 1+round)
		}
		if got := await(t, todo.Call(ctx, "list")); !reflect.DeepEqual(got, []any{todoItem(1, "buy milk", false)}) {
			t.Fatalf("round %d: list after the trim = %v", round, got)
		}
	}
}
