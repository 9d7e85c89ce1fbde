package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/host/store"
	"atelier/sdk/guesttest"
)

// gatedStore is a real store whose gadget commits (CommitChain submissions) wait behind a
// gate the test opens, and can be made to fail.
type gatedStore struct {
	store.Store
	mu        sync.Mutex
	open      chan struct{} // closed while commits may proceed
	fail      error         // the next commit fails with this instead of being written
	submitted chan struct{} // one value per submission
	reads     chan struct{} // one value per kv read that reached the store
}

func newGatedStore(s store.Store) *gatedStore {
	g := &gatedStore{Store: s, open: make(chan struct{}), submitted: make(chan struct{}, 1000), reads: make(chan struct{}, 1000)}
	close(g.open)
	return g
}

// hold makes later commits wait until release; waitSubmitted counts from here.
func (g *gatedStore) hold() {
	g.mu.Lock()
	g.open = make(chan struct{})
	g.mu.Unlock()
	for len(g.submitted) > 0 {
		<-g.submitted
	}
}

// release lets the waiting commits go on; fail (when not nil) fails the first of them.
func (g *gatedStore) release(fail error) {
	g.mu.Lock()
	g.fail = fail
	close(g.open)
	g.mu.Unlock()
}

func (g *gatedStore) gate() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.open
}

func (g *gatedStore) takeFail() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	err := g.fail
	g.fail = nil
	return err
}

// waitSubmitted waits until n more commits were submitted.
func (g *gatedStore) waitSubmitted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-g.submitted:
		case <-time.After(10 * time.Second):
			t.Fatal("the calls did not submit their commits")
		}
	}
}

func (g *gatedStore) Open(ctx context.Context, ws store.WorkspaceID, l store.Lease) (store.WorkspaceStore, error) {
	w, err := g.Store.Open(ctx, ws, l)
	if err != nil {
		return nil, err
	}
	return &gatedWS{WorkspaceStore: w, g: g}, nil
}

type gatedWS struct {
	store.WorkspaceStore
	g *gatedStore
}

func (w *gatedWS) Get(g store.GadgetID, key []byte) ([]byte, bool, error) {
	w.g.reads <- struct{}{}
	return w.WorkspaceStore.Get(g, key)
}

func (w *gatedWS) Chain() store.CommitChain {
	return &gatedChain{inner: w.WorkspaceStore.Chain(), g: w.g}
}

// gatedChain forwards submissions in order, each once the gate is open and the previous one
// is done, keeping the chain rule: after a failure every later submission fails.
type gatedChain struct {
	inner store.CommitChain
	g     *gatedStore
	last  *store.Pending
}

func (c *gatedChain) Submit(muts []store.Mutation) *store.Pending {
	p, prev, gate := store.NewPending(), c.last, c.g.gate()
	c.last = p
	c.g.submitted <- struct{}{}
	go func() {
		if prev != nil {
			if err := prev.Wait(); err != nil {
				p.Resolve(fmt.Errorf("%w: %w", store.ErrChainBroken, err))
				return
			}
		}
		<-gate
		if err := c.g.takeFail(); err != nil {
			p.Resolve(err)
			return
		}
		p.Resolve(c.inner.Submit(muts).Wait())
	}()
	return p
}

// outcome is an awaited promise's result.
type outcome struct {
	v   any
	err error
}

// pending awaits p in the background.
func pending(p *capnweb.Promise) chan outcome {
	out := make(chan outcome, 1)
	go func() {
		v, err := p.Await(ctx)
		out <- outcome{v, err}
	}()
	return out
}

// noneYet fails when any of outs already has a result.
func noneYet(t *testing.T, outs ...chan outcome) {
	t.Helper()
	time.Sleep(50 * time.Millisecond) // room for a wrongly released reply to arrive
	for i, o := range outs {
		select {
		case r := <-o:
			t.Fatalf("reply %d arrived before its commit was durable: %v %v", i, r.v, r.err)
		default:
		}
	}
}

func gatedServer(t *testing.T) (*server, *gatedStore) {
	var g *gatedStore
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		g = newGatedStore(c.Store)
		c.Store = g
	})
	return s, g
}

// TestOutputGate: pipelined calls run while the earlier commits are not yet durable, see each
// other's writes, and reply only once their commits are durable.
func TestOutputGate(t *testing.T) {
	s, g := gatedServer(t)
	_, _, app := home(t, s.user(t, "ada")) // count = 1
	g.hold()
	outs := []chan outcome{pending(app.Call(ctx, "increment", 1)), pending(app.Call(ctx, "increment", 10)), pending(app.Call(ctx, "get"))}
	g.waitSubmitted(t, 2) // both increments ran and submitted; get waits for the second
	noneYet(t, outs...)
	g.release(nil)
	for i, want := range []float64{2, 12, 12} {
		if r := <-outs[i]; r.err != nil || r.v != want {
			t.Fatalf("reply %d = %v, %v; want %v", i, r.v, r.err, want)
		}
	}
}

// TestOutputGateHoldsEvents: a call's events are published only after its commit.
func TestOutputGateHoldsEvents(t *testing.T) {
	s, g := gatedServer(t)
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	todo := ws.Call(ctx, "createGadget", "todo", guesttest.Bytes(t, todoJS), todoGrants)
	evs := newCollector()
	await(t, todo.Call(ctx, "subscribe", evs.fn))
	app := todo.Call(ctx, "connect")
	await(t, app.Call(ctx, "noop"))
	g.hold()
	out := pending(app.Call(ctx, "add", "buy milk"))
	g.waitSubmitted(t, 1)
	noneYet(t, out)
	if early := evs.Got(); len(early) != 0 {
		t.Fatalf("an event was published before its commit: %v", early)
	}
	g.release(nil)
	if r := <-out; r.err != nil {
		t.Fatal(r.err)
	}
	evs.wait(t, 1)
}

// TestFailedCommitFailsHeldReplies: when a commit fails, the replies held behind it fail too,
// and the next call sees only what was durable.
func TestFailedCommitFailsHeldReplies(t *testing.T) {
	s, g := gatedServer(t)
	_, _, app := home(t, s.user(t, "ada")) // count = 1, durable
	g.hold()
	outs := []chan outcome{pending(app.Call(ctx, "increment", 1)), pending(app.Call(ctx, "increment", 10)), pending(app.Call(ctx, "increment", 100))}
	g.waitSubmitted(t, 3)
	g.release(errors.New("injected disk failure"))
	for i, o := range outs {
		r := <-o
		var e *capnweb.Error
		if !errors.As(r.err, &e) || e.Props["code"] != "INTERNAL" {
			t.Fatalf("reply %d = %v, %v; want an INTERNAL error", i, r.v, r.err)
		}
	}
	if got := await(t, app.Call(ctx, "get")); got != float64(1) {
		t.Fatalf("after a failed commit get() = %v, want the durable 1", got)
	}
	if got := await(t, app.Call(ctx, "increment", 2)); got != float64(3) {
		t.Fatalf("after a failed commit increment(2) = %v, want 3", got)
	}
}

// TestFencedCommitFailsHeldReplies: a workspace taken over by a newer lease while commits are
// in flight fails them (nothing is written) and the workspace restarts on the next call.
func TestFencedCommitFailsHeldReplies(t *testing.T) {
	s, g := gatedServer(t)
	_, id, app := home(t, s.user(t, "ada"))
	g.hold()
	outs := []chan outcome{pending(app.Call(ctx, "increment", 1)), pending(app.Call(ctx, "increment", 10))}
	g.waitSubmitted(t, 2)
	if _, err := s.db.Acquire(ctx, store.WorkspaceID(id)); err != nil {
		t.Fatal(err)
	}
	g.release(nil)
	for i, o := range outs {
		r := <-o
		var e *capnweb.Error
		if !errors.As(r.err, &e) || e.Props["code"] != "FAILED_PRECONDITION" {
			t.Fatalf("reply %d = %v, %v; want a FAILED_PRECONDITION error", i, r.v, r.err)
		}
	}
	if got := await(t, app.Call(ctx, "get")); got != float64(1) {
		t.Fatalf("after a fenced commit get() = %v, want the durable 1", got)
	}
}

// TestFailedCommitFailsHeldReads: a call that wrote nothing but ran behind a commit that then
// failed fails too (it may have read the lost writes).
func TestFailedCommitFailsHeldReads(t *testing.T) {
	s, g := gatedServer(t)
	ws, _, _ := home(t, s.user(t, "ada"))
	p := ws.Call(ctx, "createGadget", "probe", probe(t), probeGrants).Call(ctx, "connect")
	await(t, p.Call(ctx, "set", "k", []byte("v1")))
	g.hold()
	set := pending(p.Call(ctx, "set", "k", []byte("v2")))
	g.waitSubmitted(t, 1)
	for len(g.reads) > 0 { // the reads of the calls so far (set looks up the old size)
		<-g.reads
	}
	read := pending(p.Call(ctx, "get", "other"))
	select {
	case <-g.reads: // the read ran, behind the held commit
	case <-time.After(10 * time.Second):
		t.Fatal("the read did not run")
	}
	noneYet(t, set, read)
	g.release(errors.New("injected disk failure"))
	for i, o := range []chan outcome{set, read} {
		if r := <-o; r.err == nil {
			t.Fatalf("reply %d = %v; want an error", i, r.v)
		}
	}
	if got := await(t, p.Call(ctx, "get", "k")); string(got.([]byte)) != "v1" {
		t.Fatalf("after a failed commit k = %q, want v1", got)
	}
}

// TestKVReadCache: the actor serves the values it wrote or read from its cache (no store read
// transaction), and a failed commit drops the cache with the actor.
func TestKVReadCache(t *testing.T) {
	s, g := gatedServer(t)
	ws, _, _ := home(t, s.user(t, "ada"))
	p := ws.Call(ctx, "createGadget", "probe", probe(t), probeGrants).Call(ctx, "connect")
	await(t, p.Call(ctx, "set", "k", []byte("v1")))
	for len(g.reads) > 0 {
		<-g.reads
	}
	for range 3 {
		if got := await(t, p.Call(ctx, "get", "k")); string(got.([]byte)) != "v1" {
			t.Fatalf("get k = %q, want v1", got)
		}
	}
	if await(t, p.Call(ctx, "get", "absent")) != nil || await(t, p.Call(ctx, "get", "absent")) != nil {
		t.Fatal("an absent key has a value")
	}
	if n := len(g.reads); n != 1 {
		t.Fatalf("%d store reads for cached keys and one absent key read twice; want 1", n)
	}

	// A failed commit resets the actor: its next read goes to the store and sees v1, not the
	// failed write that the cache held.
	g.hold()
	set := pending(p.Call(ctx, "set", "k", []byte("v2")))
	g.waitSubmitted(t, 1)
	g.release(errors.New("injected disk failure"))
	if r := <-set; r.err == nil {
		t.Fatal("a set whose commit failed succeeded")
	}
	for len(g.reads) > 0 {
		<-g.reads
	}
	if got := await(t, p.Call(ctx, "get", "k")); string(got.([]byte)) != "v1" {
		t.Fatalf("after a failed commit k = %q, want v1", got)
	}
	if len(g.reads) == 0 {
		t.Fatal("the read after a failed commit did not reach the store")
	}
}

// TestShutdownDrainsHeldReply: a gadget call whose reply waits for its commit when the
// gateway shuts down still gets its reply (the session closes after it), and the next call on
// that session is refused.
func TestShutdownDrainsHeldReply(t *testing.T) {
	s, g := gatedServer(t)
	_, _, app := home(t, s.user(t, "ada")) // count = 1
	g.hold()
	out := pending(app.Call(ctx, "increment", 1))
	g.waitSubmitted(t, 1)
	shutCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- s.gw.Shutdown(shutCtx) }()
	noneYet(t, out)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned while a reply was held: %v", err)
	default:
	}
	g.release(nil)
	if r := <-out; r.err != nil || r.v != float64(2) {
		t.Fatalf("the call in flight = %v, %v; want its reply 2", r.v, r.err)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := app.Call(ctx, "get").Await(ctx); err == nil {
		t.Fatal("a call after the shutdown succeeded")
	}
}
