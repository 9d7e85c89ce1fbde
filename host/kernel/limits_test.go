package kernel_test

import (
	"bytes"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

func TestWrongArityIsInvalidArgument(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _, app := home(t, s.user(t, "ada"))
	refused(t, app.Call(ctx, "increment", 1, 2), "INVALID_ARGUMENT", "increment takes 1 argument (func(by: u32) -> u64), got 2")
	refused(t, app.Call(ctx, "increment"), "INVALID_ARGUMENT", "takes 1 argument")
	refused(t, app.Call(ctx, "get", 1), "INVALID_ARGUMENT", "get takes 0 arguments")
	p := ws.Call(ctx, "createGadget", "probe", probe(t), probeGrants).Call(ctx, "connect")
	await(t, ws.Call(ctx, "bind", "probe", "c", "counter"))
	refused(t, p.Call(ctx, "call", "c", "increment", "[1, 2]"), "GADGET_ERROR", "takes 1 argument")
	if got := await(t, app.Call(ctx, "get")); got != float64(1) {
		t.Fatalf("refused calls changed the count: %v", got)
	}
}

func TestDeletionsEndSubscriptions(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	api := s.user(t, "ada")
	ws, _, _ := home(t, api)
	await(t, ws.Call(ctx, "createGadget", "other", guesttest.Bytes(t, counterGo), counterGrants))
	for _, p := range [][2]string{{"", "subscribeGadgets"}, {"", "subscribeConsole"}, {"counter", "subscribe"}, {"counter", "logs"}, {"other", "subscribe"}} {
		target := ws
		if p[0] != "" {
			target = ws.Call(ctx, "gadget", p[0])
		}
		await(t, target.Call(ctx, p[1], newCollector().fn))
	}
	if n := s.k.Stats().Subscriptions; n != 5 {
		t.Fatalf("%d subscriptions, want 5", n)
	}
	await(t, ws.Call(ctx, "gadget", "counter").Call(ctx, "delete"))
	if n := s.k.Stats().Subscriptions; n != 3 {
		t.Fatalf("after deleting a gadget %d subscriptions, want 3", n)
	}
	await(t, ws.Call(ctx, "delete"))
	if n := s.k.Stats().Subscriptions; n != 0 {
		t.Fatalf("after deleting the workspace %d subscriptions, want 0", n)
	}
}

func TestGadgetQuota(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	quota := func(c *kernel.Config) { c.GadgetQuota = 1000 }
	s := startServer(t, data, quota)
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"]
	p := ws.Call(ctx, "createGadget", "probe", probe(t), probeGrants).Call(ctx, "connect")
	await(t, p.Call(ctx, "set", "a", make([]byte, 599))) // 600 bytes
	refused(t, p.Call(ctx, "set", "bb", make([]byte, 500)), "GADGET_ERROR", "quota-exceeded")
	if got := await(t, p.Call(ctx, "get", "bb")); got != nil {
		t.Fatal("a write past the quota was stored")
	}
	await(t, p.Call(ctx, "set", "a", make([]byte, 99)))   // 100 bytes
	await(t, p.Call(ctx, "set", "bb", make([]byte, 598))) // 600 bytes: 700 in all
	// A trapped call's writes do not count.
	refused(t, p.Call(ctx, "setThenTrap", "c", make([]byte, 200)), "GADGET_ERROR", "trap")
	await(t, p.Call(ctx, "set", "c", make([]byte, 299))) // 1000 in all
	refused(t, p.Call(ctx, "set", "d", []byte{}), "GADGET_ERROR", "quota-exceeded")
	s.stop()

	// The use is durable: after a restart the quota still holds.
	s = startServer(t, data, quota)
	root := s.dial(t)
	tok := await(t, root.Call(ctx, "login", "ada", "password-ada"))
	p = root.Call(ctx, "authenticate", tok).Call(ctx, "openWorkspace", id).Call(ctx, "gadget", "probe").Call(ctx, "connect")
	refused(t, p.Call(ctx, "set", "d", []byte{}), "GADGET_ERROR", "quota-exceeded")
	await(t, p.Call(ctx, "set", "c", []byte("x"))) // shrinking is always allowed
	await(t, p.Call(ctx, "set", "d", []byte{}))
	if got := await(t, p.Call(ctx, "get", "c")); !bytes.Equal(got.([]byte), []byte("x")) {
		t.Fatalf("c = %q", got)
	}
}

// fakeClock is a settable clock for the rate limits.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestCredentialGuessingIsSlowed(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) { c.Now = clock.Now })
	root := s.dial(t)
	await(t, root.Call(ctx, "signup", "ada", "password-ada"))
	for range 5 {
		refused(t, root.Call(ctx, "login", "ada", "wrong password"), "UNAUTHORIZED", "wrong username or password")
	}
	// Now ada must wait at this address, even with the right password.
	refused(t, root.Call(ctx, "login", "ada", "password-ada"), "UNAUTHORIZED", "too many failed attempts; try again in 1s")
	clock.advance(time.Second)
	refused(t, root.Call(ctx, "login", "ada", "wrong password"), "UNAUTHORIZED", "wrong username or password")
	refused(t, root.Call(ctx, "login", "ada", "password-ada"), "UNAUTHORIZED", "try again in 2s") // doubled
	clock.advance(2 * time.Second)
	await(t, root.Call(ctx, "login", "ada", "password-ada")) // a success clears the pair
	await(t, root.Call(ctx, "login", "ada", "password-ada"))

	// Bad tokens count against the address: past 20, they get the wait.
	for i := range 20 {
		refused(t, root.Call(ctx, "authenticate", "atl_"+string(rune('A'+i))+"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), "UNAUTHORIZED", "unknown or revoked token")
	}
	refused(t, root.Call(ctx, "authenticate", "not a token"), "UNAUTHORIZED", "too many failed attempts")
	clock.advance(time.Hour)
	refused(t, root.Call(ctx, "authenticate", "not a token"), "UNAUTHORIZED", "malformed token")
}

func TestGadgetsShareCompiledCode(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.GadgetIdle, c.WorkspaceIdle = 20*time.Millisecond, time.Hour
	})
	ws, _, app := home(t, s.user(t, "ada"))
	other := ws.Call(ctx, "createGadget", "other", guesttest.Bytes(t, counterGo), counterGrants).Call(ctx, "connect")
	if got := await(t, other.Call(ctx, "increment", 5)); got != float64(5) {
		t.Fatalf("other increment = %v", got)
	}
	await(t, app.Call(ctx, "get"))
	if st := s.k.Stats(); st.Actors == 2 && st.Components != 1 {
		t.Fatalf("two live gadgets with the same code hold %d components", st.Components)
	}
	deadline := time.Now().Add(10 * time.Second)
	for st := s.k.Stats(); st.Actors != 0 || st.Components != 0; st = s.k.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("idle gadgets still hold: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
