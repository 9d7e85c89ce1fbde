package kernel_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// resourcesWAT is testdata/resources.wat: it exports the resources counter and tag.
func resourcesWAT(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/resources.wat")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// take awaits a call that returns a resource and keeps its stub (the promise is disposed).
func take(t *testing.T, p *capnweb.Promise) *capnweb.Stub {
	t.Helper()
	s, ok := await(t, p).(*capnweb.Stub)
	if !ok {
		t.Fatal("the call did not return a stub")
	}
	s = s.Dup()
	p.Dispose()
	return s
}

// wantNumber wants p to resolve to n.
func wantNumber(t *testing.T, p *capnweb.Promise, n float64) {
	t.Helper()
	if got := await(t, p); got != n {
		t.Fatalf("got %v, want %v", got, n)
	}
}

// droppedReaches waits until the gadget app has run n counter destructors: a disposed stub's
// resource is dropped on the gadget's actor once the release message arrives.
func droppedReaches(t *testing.T, app *capnweb.Promise, n float64) {
	t.Helper()
	eventually(t, fmt.Sprintf("dropped() = %v", n), func() bool { return await(t, app.Call(ctx, "dropped")) == n })
}

func TestResourceStubs(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	app := ws.Call(ctx, "createGadget", "res", resourcesWAT(t), []string{}).Call(ctx, "connect")

	// A function returning own<counter>, the constructor and a static function give stubs
	// whose methods are the resource's.
	a := take(t, app.Call(ctx, "makeCounter"))
	wantNumber(t, a.Call(ctx, "increment", 5), 5)
	wantNumber(t, a.Call(ctx, "increment", 2), 7)
	b := take(t, app.Get("counter").Call(ctx, "new", 3))
	wantNumber(t, b.Call(ctx, "get"), 3)
	c := take(t, app.Get("counter").Call(ctx, "make", 4))
	wantNumber(t, c.Call(ctx, "get"), 40)
	// Pipelined: a method called on the promise of a stub.
	pm := app.Call(ctx, "makeCounter")
	wantNumber(t, pm.Call(ctx, "increment", 9), 9)
	pm.Dispose()
	refused(t, a.Call(ctx, "nope"), "NOT_FOUND", `resource counter of gadget res has no method "nope"`)
	refused(t, a.Call(ctx, "increment"), "INVALID_ARGUMENT", "counter.increment takes 1 argument")

	// Passed back as borrow<counter>: lent for the call, still usable after.
	wantNumber(t, app.Call(ctx, "sum", a, b), 10)
	wantNumber(t, a.Call(ctx, "add", b), 10)
	wantNumber(t, a.Call(ctx, "add", a), 14) // the stub whose method runs, passed to itself
	wantNumber(t, b.Call(ctx, "get"), 3)

	// Passed as own<counter>: moved into the guest, which drops it; the stub is then spent.
	wantNumber(t, app.Call(ctx, "consume", c), 40)
	droppedReaches(t, app, 2) // consume's drop, and the pipelined counter's
	refused(t, c.Call(ctx, "get"), "FAILED_PRECONDITION", "moved into the gadget")
	refused(t, app.Call(ctx, "consume", c), "FAILED_PRECONDITION", "moved into the gadget")

	// Disposing a stub drops the resource: its destructor runs once.
	b.Dispose()
	droppedReaches(t, app, 3)
	c.Dispose() // moved: nothing left to drop
	wantNumber(t, a.Call(ctx, "get"), 7)
	wantNumber(t, app.Call(ctx, "dropped"), 3)

	// Refusals: another resource type, another gadget's resource, not a resource stub.
	tag := take(t, app.Get("tag").Call(ctx, "new", 6))
	wantNumber(t, tag.Call(ctx, "value"), 6)
	refused(t, app.Call(ctx, "sum", tag, a), "INVALID_ARGUMENT", "args[0]: want a borrow<counter>, got a tag")
	other := ws.Call(ctx, "createGadget", "other", resourcesWAT(t), []string{}).Call(ctx, "connect")
	refused(t, other.Call(ctx, "sum", a, a), "INVALID_ARGUMENT", "this counter belongs to gadget res, not to other")
	refused(t, other.Call(ctx, "consume", a), "INVALID_ARGUMENT", "belongs to gadget res")
	refused(t, app.Call(ctx, "sum", 1, a), "INVALID_ARGUMENT", "want a borrow<counter> stub, got a number")
	refused(t, app.Call(ctx, "sum", func() {}, a), "INVALID_ARGUMENT", "the caller's own objects")
	refused(t, app.Call(ctx, "sum", app, a), "INVALID_ARGUMENT", "a stub of another kind of object")
	wantNumber(t, a.Call(ctx, "get"), 7) // the refusals left the resource and instance alone

	tag.Dispose()

	// The session ending drops what it held.
	sess, err := capnweb.DialWebSocket(ctx, s.url, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok := await(t, sess.Main().Call(ctx, "login", "ada", "password-ada")).(string)
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	app2 := sess.Main().Call(ctx, "authenticate", tok).Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "res").Call(ctx, "connect")
	d := take(t, app2.Call(ctx, "makeCounter"))
	wantNumber(t, d.Call(ctx, "increment", 1), 1)
	sess.Close()
	droppedReaches(t, app, 4)
	wantNumber(t, a.Call(ctx, "get"), 7)
}

func TestResourceStubsAfterTrapAndRedeploy(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	res := ws.Call(ctx, "createGadget", "res", resourcesWAT(t), []string{})
	app := res.Call(ctx, "connect")
	a := take(t, app.Call(ctx, "makeCounter"))
	wantNumber(t, a.Call(ctx, "increment", 1), 1)

	// A trap retires the instance: its resources are gone, with an error saying why.
	refused(t, app.Call(ctx, "trap"), "GADGET_ERROR", "unreachable")
	refused(t, a.Call(ctx, "get"), "FAILED_PRECONDITION", "instance that made this resource was retired")
	refused(t, app.Call(ctx, "sum", a, a), "FAILED_PRECONDITION", "was retired")
	b := take(t, app.Call(ctx, "makeCounter"))
	wantNumber(t, b.Call(ctx, "increment", 2), 2)
	refused(t, app.Call(ctx, "sum", a, b), "FAILED_PRECONDITION", "was retired")

	// A redeploy starts a new actor: the old stubs fail, new ones work.
	await(t, res.Call(ctx, "deploy", resourcesWAT(t)))
	refused(t, b.Call(ctx, "get"), "FAILED_PRECONDITION", "the gadget restarted since this resource was made")
	c := take(t, app.Call(ctx, "makeCounter"))
	refused(t, app.Call(ctx, "sum", b, c), "FAILED_PRECONDITION", "restarted")
	wantNumber(t, app.Call(ctx, "sum", c, c), 0)
	a.Dispose() // disposing dead stubs reaches nothing
	b.Dispose()
	wantNumber(t, c.Call(ctx, "increment", 3), 3)
	wantNumber(t, app.Call(ctx, "dropped"), 0)
}

func TestResourceStubsCheckAccess(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws := ada.Call(ctx, "createWorkspace", "home")
	await(t, ws.Call(ctx, "createGadget", "res", resourcesWAT(t), []string{}))
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))

	bapp := bob.Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "res").Call(ctx, "connect")
	c := take(t, bapp.Call(ctx, "makeCounter"))
	wantNumber(t, c.Call(ctx, "increment", 4), 4) // a use collaborator may call
	await(t, ws.Call(ctx, "removeCollaborator", "bob"))
	refused(t, c.Call(ctx, "get"), "FORBIDDEN", "no access")
	refused(t, bapp.Call(ctx, "sum", c, c), "FORBIDDEN", "no access")
	// Disposing still drops the resource (the stub only gives up what it holds).
	c.Dispose()
	app := ws.Call(ctx, "gadget", "res").Call(ctx, "connect")
	droppedReaches(t, app, 1)
}

func TestResourcesStayOutOfJSONCallers(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	await(t, ws.Call(ctx, "createGadget", "res", resourcesWAT(t), []string{}))
	p := ws.Call(ctx, "createGadget", "probe", probe(t), probeGrants).Call(ctx, "connect")
	await(t, ws.Call(ctx, "bind", "probe", "r", "res"))
	refused(t, p.Call(ctx, "call", "r", "makeCounter", "[]"), "GADGET_ERROR", "which only a connect() stub can hold")
	refused(t, p.Call(ctx, "call", "r", "counter.new", "[1]"), "GADGET_ERROR", "carry JSON only")
	refused(t, p.Call(ctx, "call", "r", "sum", "[1, 2]"), "GADGET_ERROR", "carry JSON only")
	if got := await(t, p.Call(ctx, "call", "r", "dropped", "[]")); got != "0" {
		t.Fatalf("dropped through a binding = %v", got)
	}
}

func TestResourceStubsPinTheirInstance(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.GadgetIdle, c.WorkspaceIdle = 20*time.Millisecond, time.Hour
	})
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	app := ws.Call(ctx, "createGadget", "res", resourcesWAT(t), []string{}).Call(ctx, "connect")
	c := take(t, app.Call(ctx, "makeCounter"))
	wantNumber(t, c.Call(ctx, "increment", 1), 1)
	time.Sleep(200 * time.Millisecond) // ten idle periods: an unpinned instance would be evicted
	if st := s.k.Stats(); st.Actors != 1 {
		t.Fatalf("an instance holding a live resource was evicted: %+v", st)
	}
	wantNumber(t, c.Call(ctx, "increment", 1), 2)

	// Once the stub is disposed, the instance is idle like any other.
	c.Dispose()
	eventually(t, "the instance is evicted once its resources are dropped", func() bool { return s.k.Stats().Actors == 0 })
	wantNumber(t, app.Call(ctx, "dropped"), 0) // a fresh instance
}

func TestResourceCallsAreCounted(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	app := ws.Call(ctx, "createGadget", "res", resourcesWAT(t), []string{}).Call(ctx, "connect")
	c := take(t, app.Call(ctx, "makeCounter"))
	wantNumber(t, c.Call(ctx, "increment", 2), 2)
	wantNumber(t, c.Call(ctx, "get"), 2)
	refused(t, c.Call(ctx, "nope"), "NOT_FOUND", "no method") // refused before the actor
	wantNumber(t, app.Call(ctx, "consume", c), 2)
	refused(t, c.Call(ctx, "get"), "FAILED_PRECONDITION", "moved") // refused on the actor
	c.Dispose()                                                    // a drop is not a call
	m, _ := gadgetMetrics(t, ws)
	if r := m["res"]; r["calls"] != float64(5) || r["errors"] != float64(1) {
		t.Fatalf("metrics = %v, want 5 calls and 1 error", r)
	}
}
