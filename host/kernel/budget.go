package kernel

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"atelier/host/quota"
	"atelier/host/runtime"
	"atelier/jsruntime"
)

// The workspace and host quotas on live instances (host/quota): live_instances, workspace_memory,
// code_runs and calls_per_second per workspace, host_memory for the whole node. Each is read
// with k.limits() when it is checked, so an admin's change applies to the next check.
//
// Memory: every instance the kernel runs (a gadget's, a JS gadget's, a Code Mode snippet's) has
// a memAccount (runtime.MemoryAccount). Before each call the instance asks its account how much
// it may hold; the account gives it its own budget (Limits.MaxMemory), or less when its
// workspace's or the host's remaining memory is smaller, and charges the workspace and the host
// that much for the duration of the call (a reservation: concurrent calls do not take the same
// bytes twice). After the call it charges what the instance really holds, which stays charged
// while the instance lives, idle or not, until it is evicted. When the remaining memory is
// smaller than the instance's budget, the least recently used idle instance holding memory is
// evicted first (of the workspace for workspace_memory; for host_memory, of the workspaces
// holding more than their fair share, the quota divided among the workspaces holding memory, so
// that one tenant filling the host never pushes a smaller tenant's instances out), then the
// next, until the budget fits or none is idle; a workspace under its fair share waits up to
// shareWait for an instance over its share to end its call. When what is left then would not let
// the instance grow at all only because other calls in flight reserved it, the call gets what
// the instances really hold leaves free instead (so that calls waiting on slow bindings do not
// lock the quota up with their reservations; concurrent calls may then pass the quota by what
// they grow into together, at most that free memory each); an instance with no room to grow
// still runs in what it holds; when even that is short (or it holds nothing yet), the call
// is refused with a quota.ExceededError (RESOURCE_EXHAUSTED). A call that fails because the
// lowered budget refused it memory reports the quota too (memAccount.explain).
//
// Lifting: while Wasmtime lifts a call's result it may allocate up to the result type's lift
// factor (wit.LiftFactor, 80 for list<bool>) times the instance's memory besides (see
// runtime.Limits.MaxLiftBytes). For such a call the account charges host_memory the allowance
// times 1+factor, so the allowance is at most the host's room divided by 1+factor (and the
// workspace's room, charged the allowance alone, as for any call); the same eviction, fair-share
// wait and sharing of what is free apply, and an instance holding more than that allowance is
// refused the call (host_memory, RESOURCE_EXHAUSTED). Release ends the transient: the instance
// is charged what it holds.

// governor keeps the memory that the node's live instances hold.
type governor struct {
	mu       sync.Mutex // guards the fields below, every wsUse's and every memAccount's
	host     int64      // bytes charged to all live instances of the node (reservations included)
	hostHeld int64      // bytes they held at the end of their latest call
}

// wsUse is one workspace's live use, kept by its overseer. A snippet that outlives its
// overseer (an idle stop while it runs) stays charged to the stopped one.
type wsUse struct {
	mem  int64        // bytes charged to the workspace's live instances (governor.mu)
	held int64        // bytes they held at the end of their latest call (governor.mu)
	runs atomic.Int64 // Code Mode snippets running
	rate rateBucket   // calls_per_second
}

// memAccount is the runtime.MemoryAccount of one instance at a time (a gadget's slot keeps one
// for its successive instances).
type memAccount struct {
	ov   *overseer
	self *actor // the gadget whose instance this is; nil for a snippet or a gatekeeper instance
	// charged is what the instance is charged (written under governor.mu; read without it to
	// find instances worth evicting).
	charged atomic.Int64
	// lifting is what host_memory is charged besides, for the call in flight, for Wasmtime
	// lifting its result (governor.mu).
	lifting int64
	// held is what the instance held at the end of its latest call (governor.mu).
	held int64
	// limitedBy is the quota that lowered the latest allowance below the instance's budget,
	// nil when none did (governor.mu).
	limitedBy *quota.ExceededError
}

// newAccount returns the memory account of an instance of self (nil: a snippet or a
// gatekeeper instance).
func (ov *overseer) newAccount(self *actor) *memAccount { return &memAccount{ov: ov, self: self} }

// Acquire implements runtime.MemoryAccount.
func (m *memAccount) Acquire(held, budget, liftFactor int64) (int64, error) {
	g := &m.ov.k.gov
	var waitUntil time.Time // while the workspace is under its fair share: wait for room until then
	for evict := true; ; {
		g.mu.Lock()
		allow, over := m.room(held, budget, liftFactor, true)
		if over != nil && !evict && allow <= held { // reserved by calls in flight: share what is free
			allow, over = m.room(held, budget, liftFactor, false)
		}
		if over == nil || !evict {
			if over != nil && (allow <= 0 || allow < held) {
				g.mu.Unlock()
				over.Whose = m.ov.whoseOf(over)
				if liftFactor > 0 && over.Quota == "host_memory" {
					return 0, fmt.Errorf("%w; the call's result may cost the host up to %d × the instance's memory while Wasmtime lifts it: return less per call", over, liftFactor)
				}
				return 0, over
			}
			m.charge(allow, held, allow*liftFactor)
			m.limitedBy = over
			g.mu.Unlock()
			return allow, nil
		}
		g.mu.Unlock()
		if over.Quota != "host_memory" {
			evict = m.ov.k.evictLRU([]*overseer{m.ov}, true)
			continue
		}
		// The host is short: only workspaces holding more than their fair share give way, so
		// that a tenant filling the host cannot push a smaller one's instances out.
		givers, under := m.ov.k.fairShare(m.ov)
		if evict = m.ov.k.evictLRU(givers, true); evict || !under || len(givers) == 0 {
			continue
		}
		// Their instances are all busy now: a workspace under its share waits a little for
		// one of them to end its call.
		if waitUntil.IsZero() {
			waitUntil = time.Now().Add(shareWait)
		}
		if evict = time.Now().Before(waitUntil); evict {
			time.Sleep(shareWait / 50)
		}
	}
}

// shareWait is how long a call of a workspace under its fair share of host_memory waits for
// an instance of a workspace over its share to become idle (and be evicted) before it is
// refused.
const shareWait = time.Second

// fairShare returns the running workspaces that hold more than their fair share of
// host_memory (its value divided among the workspaces holding memory, ov among them), and
// whether ov holds less than its share.
func (k *Kernel) fairShare(ov *overseer) (over []*overseer, under bool) {
	ovs := k.running()
	lim := k.limits().HostMemory
	k.gov.mu.Lock()
	defer k.gov.mu.Unlock()
	n := int64(0)
	for _, o := range ovs {
		if o.use.held > 0 || o == ov {
			n++
		}
	}
	if !slices.Contains(ovs, ov) {
		n++
	}
	share := lim / max(n, 1)
	for _, o := range ovs {
		if o.use.held > share {
			over = append(over, o)
		}
	}
	return over, ov.use.held < share
}

// room returns what the instance may hold now, at most budget, and the quota that makes it
// less than budget (nil: none): counting the other instances' charges, reservations included,
// or, without reserved, only what they held after their latest call. host_memory must hold
// 1+liftFactor times it (see "Lifting" above). The caller holds governor.mu.
func (m *memAccount) room(held, budget, liftFactor int64, reserved bool) (int64, *quota.ExceededError) {
	k := m.ov.k
	lim := k.limits()
	wsOthers, hostOthers := m.ov.use.held-m.held, k.gov.hostHeld-m.held
	if reserved {
		wsOthers, hostOthers = m.ov.use.mem-m.charged.Load(), k.gov.host-m.charged.Load()-m.lifting
	}
	allow := budget
	var over *quota.ExceededError
	if others := wsOthers; lim.WorkspaceMemory >= 0 && lim.WorkspaceMemory-others < allow {
		allow = lim.WorkspaceMemory - others
		over = &quota.ExceededError{Quota: "workspace_memory", Limit: lim.WorkspaceMemory, Used: others + held} // Whose: whoseOf, once refused
	}
	if others := hostOthers; lim.HostMemory >= 0 && (lim.HostMemory-others)/(1+liftFactor) < allow {
		allow = (lim.HostMemory - others) / (1 + liftFactor)
		over = &quota.ExceededError{Quota: "host_memory", Limit: lim.HostMemory, Used: others + held, Whose: "this server"}
	}
	return allow, over
}

// Release implements runtime.MemoryAccount.
func (m *memAccount) Release(held int64) {
	g := &m.ov.k.gov
	g.mu.Lock()
	m.charge(held, held, 0)
	g.mu.Unlock()
}

// charge makes n the instance's charge, lifting what host_memory is charged besides, and held
// what it holds; the caller holds governor.mu.
func (m *memAccount) charge(n, held, lifting int64) {
	g := &m.ov.k.gov
	d := n - m.charged.Load()
	m.ov.use.mem += d
	g.host += d + lifting - m.lifting
	m.charged.Store(n)
	m.lifting = lifting
	dh := held - m.held
	m.ov.use.held += dh
	g.hostHeld += dh
	m.held = held
}

// explain adds the quota that lowered the instance's budget to a call's error when the budget
// refused the call memory (a trap past the budget, or QuickJS's out-of-memory error): the call
// failed for the quota, not for the instance's own budget.
func (m *memAccount) explain(err error) error {
	if err == nil { // before js, which errors.As moves to the heap: every call passes here
		return nil
	}
	var js *jsruntime.Error
	if !errors.Is(err, runtime.ErrMemory) && !(errors.As(err, &js) && js.Message == "out of memory") {
		return err
	}
	m.ov.k.gov.mu.Lock()
	over := m.limitedBy
	m.ov.k.gov.mu.Unlock()
	if over == nil {
		return err
	}
	named := *over
	named.Whose = m.ov.whoseOf(over)
	return fmt.Errorf("%w; the call was stopped: %w", &named, err)
}

// evictLRU evicts the least recently used idle gadget instance of the workspaces ovs; with
// memory set, only one that holds memory. It reports whether it evicted one.
func (k *Kernel) evictLRU(ovs []*overseer, memory bool) bool {
	type candidate struct {
		ov   *overseer
		a    *actor
		used int64
	}
	var cs []candidate
	for _, ov := range ovs {
		ov.mu.RLock()
		for _, a := range ov.actors {
			if !memory || a.mem.charged.Load() > 0 {
				cs = append(cs, candidate{ov, a, a.lastUsed.Load()})
			}
		}
		ov.mu.RUnlock()
	}
	slices.SortFunc(cs, func(a, b candidate) int { return cmp.Compare(a.used, b.used) })
	for _, c := range cs {
		c.ov.mu.Lock()
		taken := c.ov.actors[c.a.id] == c.a && c.ov.takeIdleLocked(c.a)
		c.ov.mu.Unlock()
		if taken {
			c.a.closeLocked()
			return true
		}
	}
	return false
}

// admitActor makes room for one more gadget instance in the workspace under live_instances,
// evicting its least recently used idle one when it is at the limit. The caller holds ov.mu,
// which admitActor releases while it evicts; it returns with ov.mu held, and false when it
// evicted one (the caller checks again).
func (ov *overseer) admitActor() (bool, error) {
	lim := ov.k.limits().LiveInstances
	live := int64(len(ov.actors))
	if lim < 0 || live < lim {
		return true, nil
	}
	ov.mu.Unlock()
	evicted := ov.k.evictLRU([]*overseer{ov}, false)
	ov.mu.Lock()
	if !evicted {
		return false, &quota.ExceededError{Quota: "live_instances", Limit: lim, Used: live, Whose: ov.whoseLocked()}
	}
	return false, nil
}

// startRun counts a Code Mode snippet against code_runs, refusing it at once past the quota;
// the returned func ends it.
func (ov *overseer) startRun() (func(), error) {
	lim := ov.k.limits().CodeRuns
	n := ov.use.runs.Add(1)
	if lim >= 0 && n > lim {
		ov.use.runs.Add(-1)
		return nil, &quota.ExceededError{Quota: "code_runs", Limit: lim, Used: n - 1, Whose: ov.whose()}
	}
	return func() { ov.use.runs.Add(-1) }, nil
}

// admitCall takes one of the workspace's calls_per_second at now (unix nanoseconds).
func (ov *overseer) admitCall(now int64) error {
	lim := ov.k.limits().CallsPerSecond
	if ov.use.rate.take(lim, now) {
		return nil
	}
	return &quota.ExceededError{Quota: "calls_per_second", Limit: lim, Used: lim, Whose: ov.whose()}
}

// whoseOf names who a memory refusal is about: the workspace, unless it is the host's (room
// leaves Whose of workspace_memory empty so that no lock is taken and no string made under
// governor.mu for a refusal that eviction may still avoid).
func (ov *overseer) whoseOf(over *quota.ExceededError) string {
	if over.Whose != "" {
		return over.Whose
	}
	return ov.whose()
}

// whose names the workspace in quota refusals.
func (ov *overseer) whose() string {
	ov.mu.RLock()
	defer ov.mu.RUnlock()
	return ov.whoseLocked()
}

// whoseLocked is whose for a caller that holds ov.mu.
func (ov *overseer) whoseLocked() string {
	if ov.meta.Name == "" {
		return "workspace " + string(ov.id)
	}
	return "workspace " + ov.meta.Name
}

// rateBucket is a token bucket: rate tokens a second, holding at most one second's worth.
type rateBucket struct {
	mu     sync.Mutex
	tokens float64
	last   int64 // unix nanoseconds of the latest take; 0: never (the bucket is full)
}

// take takes a token at now, refilling first; false when none is left. A negative rate
// (quota.Unlimited) always allows.
func (b *rateBucket) take(rate, now int64) bool {
	if rate < 0 {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == 0 {
		b.tokens = float64(rate)
	} else {
		b.tokens = min(float64(rate), b.tokens+float64(now-b.last)*float64(rate)/1e9)
	}
	b.last = now
	if b.tokens < 1 {
		return false
	}
	b.tokens--
	return true
}

// hostUsage returns what the node uses of each host quota (host_memory: bytes its live
// instances hold, as of the end of their latest call).
func (k *Kernel) hostUsage() map[string]int64 {
	k.gov.mu.Lock()
	defer k.gov.mu.Unlock()
	return map[string]int64{"host_memory": k.gov.hostHeld}
}

// workspaceUsage returns what the workspace uses of each workspace quota that bounds live use
// (live_instances: gadget instances loaded or loading; workspace_memory: bytes its live
// instances hold, as of the end of their latest call; code_runs: snippets running).
// calls_per_second is a rate, not reported.
func (ov *overseer) workspaceUsage() map[string]int64 {
	ov.mu.RLock()
	live := int64(len(ov.actors))
	ov.mu.RUnlock()
	ov.k.gov.mu.Lock()
	mem := ov.use.held
	ov.k.gov.mu.Unlock()
	return map[string]int64{"live_instances": live, "workspace_memory": mem, "code_runs": ov.use.runs.Load()}
}
