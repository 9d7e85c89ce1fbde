package kernel_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// dialFrom opens an in-process session whose peer address is addr (host:port), as the
// gateway would for a client there.
func (s *server) dialFrom(t *testing.T, addr string) *capnweb.Stub {
	t.Helper()
	a, b := capnweb.Pipe()
	srv := capnweb.NewSession(a, capnweb.Options{Main: kernel.NewPublic(s.k), Peer: capnweb.PeerInfo{Transport: "pipe", RemoteAddr: addr}})
	cli := capnweb.NewSession(b, capnweb.Options{})
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return cli.Main()
}

// hashProbe counts the password hashes a kernel runs (Config.HashHook) and can hold them.
type hashProbe struct {
	started, running, peak atomic.Int64
	mu                     sync.Mutex
	gate                   chan struct{} // nil: hashes run at once
}

func (p *hashProbe) hook() {
	p.started.Add(1)
	n := p.running.Add(1)
	for peak := p.peak.Load(); n > peak && !p.peak.CompareAndSwap(peak, n); peak = p.peak.Load() {
	}
	p.mu.Lock()
	gate := p.gate
	p.mu.Unlock()
	if gate != nil {
		<-gate
	}
	p.running.Add(-1)
}

// hold makes the hashes that start from now on wait for release.
func (p *hashProbe) hold() {
	p.mu.Lock()
	p.gate = make(chan struct{})
	p.mu.Unlock()
}

func (p *hashProbe) release() {
	p.mu.Lock()
	close(p.gate)
	p.gate = nil
	p.mu.Unlock()
}

// until waits for cond, failing the test after 10 s.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// code is the error code of p's outcome ("" for a result).
func code(p *capnweb.Promise) string {
	_, err := p.Await(ctx)
	if e, ok := err.(*capnweb.Error); ok {
		return fmt.Sprint(e.Props["code"])
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

func TestPasswordHashesAreBounded(t *testing.T) {
	probe := &hashProbe{}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.HashLimit, c.HashWait, c.HashHook = 2, 20*time.Millisecond, probe.hook
	})
	probe.hold()
	var wg sync.WaitGroup
	var unavailable, unauthorized atomic.Int64
	for i := range 40 {
		root := s.dialFrom(t, fmt.Sprintf("192.0.2.%d:1000", i))
		wg.Go(func() {
			switch c := code(root.Call(ctx, "login", fmt.Sprint("nobody", i), "a password")); c {
			case "UNAVAILABLE":
				unavailable.Add(1)
			case "UNAUTHORIZED":
				unauthorized.Add(1)
			default:
				t.Errorf("login %d: %q, want UNAVAILABLE or UNAUTHORIZED", i, c)
			}
		})
	}
	// Two hashes run and are held; 8 logins wait for a slot, then give up; 30 find the queue
	// full.
	until(t, "38 busy logins", func() bool { return unavailable.Load() == 38 })
	probe.release()
	wg.Wait()
	if probe.started.Load() != 2 || probe.peak.Load() != 2 || unauthorized.Load() != 2 {
		t.Fatalf("%d hashes, at most %d at once, %d wrong passwords; want 2, 2, 2", probe.started.Load(), probe.peak.Load(), unauthorized.Load())
	}
	// The server lives on, and a busy login said so and when to come back.
	probe.hold()
	root := s.dial(t)
	held := root.Call(ctx, "login", "nobody", "a password")
	again := s.dialFrom(t, "192.0.2.200:1000").Call(ctx, "login", "nobody", "a password") // one slot per address
	until(t, "both slots held", func() bool { return probe.running.Load() == 2 })
	extra := s.dialFrom(t, "192.0.2.201:1000").Call(ctx, "login", "other", "a password")
	refused(t, extra, "UNAVAILABLE", "login: the server is busy checking other passwords; try again in a few seconds")
	probe.release()
	refused(t, held, "UNAUTHORIZED", "wrong username or password")
	refused(t, again, "UNAUTHORIZED", "wrong username or password")
	tok := await(t, root.Call(ctx, "signup", "ada", "password-ada"))
	await(t, root.Call(ctx, "authenticate", tok).Call(ctx, "whoami"))
}

func TestParallelGuessesCountAsTheyStart(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	probe := &hashProbe{}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.Now, c.HashLimit, c.HashHook = clock.Now, 40, probe.hook
	})
	await(t, s.dial(t).Call(ctx, "signup", "ada", "password-ada"))
	probe.started.Store(0)
	// Five guesses start and are held in their hashes; 25 more from the same address, the
	// right password among them, wait for their outcome and are refused without a hash.
	probe.hold()
	var first []*capnweb.Promise
	for range 5 {
		first = append(first, s.dial(t).Call(ctx, "login", "ada", "wrong password"))
	}
	until(t, "5 hashes", func() bool { return probe.started.Load() == 5 })
	var later []*capnweb.Promise
	for i := range 25 {
		password := "wrong password"
		if i == 20 {
			password = "password-ada"
		}
		later = append(later, s.dial(t).Call(ctx, "login", "ada", password))
	}
	probe.release()
	for _, p := range first {
		refused(t, p, "UNAUTHORIZED", "wrong username or password")
	}
	for _, p := range later {
		refused(t, p, "UNAUTHORIZED", "login: too many failed attempts; try again in 1s")
	}
	if n := probe.started.Load(); n != 5 {
		t.Fatalf("30 parallel guesses ran %d hashes, want 5", n)
	}
	refused(t, s.dial(t).Call(ctx, "login", "ada", "password-ada"), "UNAUTHORIZED", "too many failed attempts; try again in 1s")
	clock.advance(time.Second)
	await(t, s.dial(t).Call(ctx, "login", "ada", "password-ada"))
}

func TestUnknownUserCostsOneHash(t *testing.T) {
	probe := &hashProbe{}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.HashHook, c.SignupsDisabled = probe.hook, true
	})
	admin, err := s.k.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	root := s.dial(t)
	// The admin has no password yet: a login as admin costs one hash too.
	refused(t, root.Call(ctx, "login", "admin", "a password"), "UNAUTHORIZED", "wrong username or password")
	await(t, root.Call(ctx, "authenticate", admin).Call(ctx, "changePassword", "", "password-admin"))
	for _, c := range []struct{ user, password, code string }{
		{"nobody", "a password", "UNAUTHORIZED"},
		{"admin", "wrong password", "UNAUTHORIZED"},
		{"admin", "password-admin", ""},
	} {
		probe.started.Store(0)
		if got := code(root.Call(ctx, "login", c.user, c.password)); got != c.code || probe.started.Load() != 1 {
			t.Fatalf("login(%q, %q): %q after %d hashes, want %q after 1", c.user, c.password, got, probe.started.Load(), c.code)
		}
	}
}

func TestSignupsAreLimitedPerAddress(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) { c.Now = clock.Now })
	here, there := s.dialFrom(t, "192.0.2.1:1000"), s.dialFrom(t, "192.0.2.2:1000")
	for i := range 10 {
		await(t, here.Call(ctx, "signup", fmt.Sprint("user", i), "a long password"))
	}
	refused(t, here.Call(ctx, "signup", "more", "a long password"), "UNAVAILABLE", "signup: too many signups from your address; try again in 6m0s")
	await(t, there.Call(ctx, "signup", "elsewhere", "a long password"))
	clock.advance(6 * time.Minute)
	await(t, here.Call(ctx, "signup", "more", "a long password"))
	refused(t, here.Call(ctx, "signup", "most", "a long password"), "UNAVAILABLE", "too many signups")
	tok := await(t, here.Call(ctx, "login", "user0", "a long password"))
	await(t, here.Call(ctx, "authenticate", tok).Call(ctx, "whoami"))
}

func TestBadTokensNeverHoldBackValidCredentials(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	admin, err := s.k.Bootstrap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const addr = "192.0.2.7"
	root := s.dialFrom(t, addr+":1000")
	tok := await(t, root.Call(ctx, "signup", "ada", "password-ada"))
	for range 25 {
		root.Call(ctx, "authenticate", "atl_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA").Await(ctx)
	}
	refused(t, root.Call(ctx, "authenticate", "junk"), "UNAUTHORIZED", "authenticate: too many failed attempts")
	// The address is braked for bad tokens only.
	await(t, root.Call(ctx, "authenticate", tok).Call(ctx, "whoami"))
	await(t, root.Call(ctx, "login", "ada", "password-ada"))
	if err := s.k.AuthorizeMetrics(ctx, admin, addr); err != nil {
		t.Fatalf("the admin's token at a braked address: %v", err)
	}
	refused(t, root.Call(ctx, "authenticate", "junk"), "UNAUTHORIZED", "too many failed attempts")
}

func TestGuessesElsewhereNeverLockOutTheOwner(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1e9, 0)}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) { c.Now = clock.Now })
	owner := s.dialFrom(t, "198.51.100.1:1000")
	await(t, owner.Call(ctx, "signup", "ada", "password-ada"))
	// Guesses from many addresses, 5 from each: past 20 for the account, every address that
	// has failed for ada waits, the owner's address, without failures, does not.
	for a := range 6 {
		guesser := s.dialFrom(t, fmt.Sprintf("203.0.113.%d:1000", a))
		for range 5 {
			guesser.Call(ctx, "login", "ada", "wrong password").Await(ctx)
		}
		refused(t, guesser.Call(ctx, "login", "ada", "wrong password"), "UNAUTHORIZED", "too many failed attempts")
	}
	fresh := s.dialFrom(t, "203.0.113.99:1000")
	refused(t, fresh.Call(ctx, "login", "ada", "wrong password"), "UNAUTHORIZED", "wrong username or password")
	refused(t, fresh.Call(ctx, "login", "ada", "password-ada"), "UNAUTHORIZED", "login: too many failed attempts; try again in")
	await(t, owner.Call(ctx, "login", "ada", "password-ada"))
	// An owner who mistyped waits while the account does, and no longer than the window.
	refused(t, owner.Call(ctx, "login", "ada", "typo"), "UNAUTHORIZED", "wrong username or password")
	refused(t, owner.Call(ctx, "login", "ada", "password-ada"), "UNAUTHORIZED", "too many failed attempts")
	clock.advance(15 * time.Minute)
	await(t, owner.Call(ctx, "login", "ada", "password-ada"))
}

func TestUnknownUsernamesAreLimitedAlike(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	root := s.dial(t)
	await(t, root.Call(ctx, "signup", "ada", "password-ada"))
	for _, user := range []string{"ada", "nobody"} {
		for range 5 {
			refused(t, root.Call(ctx, "login", user, "wrong password"), "UNAUTHORIZED", "wrong username or password")
		}
		refused(t, root.Call(ctx, "login", user, "wrong password"), "UNAUTHORIZED", "too many failed attempts; try again in 1s")
	}
}

func TestBusySignupsSpendNothing(t *testing.T) {
	probe := &hashProbe{}
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) {
		c.HashLimit, c.HashWait, c.HashHook, c.SignupBurst = 1, time.Millisecond, probe.hook, 2
	})
	root := s.dial(t)
	probe.hold()
	held := root.Call(ctx, "signup", "ada", "password-ada")
	until(t, "a hash", func() bool { return probe.started.Load() == 1 })
	for i := range 5 {
		refused(t, root.Call(ctx, "signup", fmt.Sprint("busy", i), "a long password"), "UNAVAILABLE", "busy checking other passwords")
	}
	probe.release()
	await(t, held)
	await(t, root.Call(ctx, "signup", "bob", "password-bob")) // the burst's second signup
	refused(t, root.Call(ctx, "signup", "carol", "password-carol"), "UNAVAILABLE", "too many signups")
}
