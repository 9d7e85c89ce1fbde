package kernel

import (
	"fmt"
	"sync"
	"time"

	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/store"
)

// Bounds of dry runs. Held dry runs live in the memory of the node running the workspace:
// a restart, or the workspace moving to another node, drops them (commit then answers
// NOT_FOUND: run the snippet again).
const (
	// dryRunTTL is how long a dry run is held for commitDryRun.
	dryRunTTL = 15 * time.Minute
	// maxDryRunBytes bounds what one dry run holds: its writes, the committed values they
	// replace, its records of what it read and its would-be actions.
	maxDryRunBytes = 4 << 20
	// maxHeldDryRuns bounds the dry runs held per workspace, maxUserDryRuns those of one
	// user there (so that one collaborator cannot take every place).
	maxHeldDryRuns = 16
	maxUserDryRuns = 8
	// maxDryRunActions bounds the gatekeeper actions one dry run records.
	maxDryRunActions = 100
	// maxHeldDryRunBytes bounds the bytes of the dry runs held per workspace.
	maxHeldDryRunBytes = 32 << 20
	// maxHostDryRunBytes bounds the bytes of every dry run held on this node.
	maxHostDryRunBytes = 256 << 20
)

// heldDryRun is a dry run waiting for commitDryRun or discardDryRun.
type heldDryRun struct {
	id      string
	ws      store.WorkspaceID
	user    string // the user whose principal made it: only that user commits it
	expires time.Time
	bytes   int64
	forks   []heldFork // every gadget the snippet called, read-only ones included
	actions []heldAction
	info    DryRunInfo
	busy    bool // a commit or discard is under way
}

// heldFork is one gadget's fork in a held dry run.
type heldFork struct {
	id      store.GadgetID
	name    string
	version int // the gadget's version the dry run ran
	kv      *forkKV
	events  []events.Event // published to the gadget's subscribers once committed
}

// written reports whether the fork would change the gadget's state.
func (f heldFork) written() bool { return len(f.kv.writes) > 0 }

// heldOf turns a finished dry run into what is held: nil when it would change nothing.
func heldOf(dx *dryExec, now time.Time) *heldDryRun {
	d := &heldDryRun{ws: dx.w.id, user: dx.w.p.userID, expires: now.Add(dryRunTTL), actions: dx.actions}
	d.bytes, _ = dx.budget.state()
	d.info = DryRunInfo{Expires: d.expires, Gadgets: []DryRunGadget{}, Actions: make([]DryRunAction, len(dx.actions))}
	for i, a := range dx.actions {
		d.info.Actions[i] = a.info
	}
	for _, s := range dx.forks() {
		if s.loadErr != nil {
			continue
		}
		d.forks = append(d.forks, heldFork{id: s.g.ID, name: s.g.Name, version: s.g.Current, kv: s.kv, events: s.events})
		if s.kv.changes() {
			d.info.Gadgets = append(d.info.Gadgets, s.kv.diff(s.g.Name))
		}
	}
	if len(d.info.Gadgets) == 0 && len(d.actions) == 0 {
		return nil
	}
	d.id = store.NewID("dr")
	d.info.ID = d.id
	return d
}

// dryRuns are the dry runs held on this node, by workspace.
type dryRuns struct {
	mu    sync.Mutex
	byWS  map[store.WorkspaceID]map[string]*heldDryRun
	bytes int64
}

// purge drops the expired dry runs; r.mu must be held.
func (r *dryRuns) purge(now time.Time) {
	for ws, m := range r.byWS {
		for id, d := range m {
			if !d.busy && now.After(d.expires) {
				r.bytes -= d.bytes
				delete(m, id)
			}
		}
		if len(m) == 0 {
			delete(r.byWS, ws)
		}
	}
}

// hold keeps d until it is committed, discarded or expires, within the bounds.
func (r *dryRuns) hold(now time.Time, d *heldDryRun) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.purge(now)
	m := r.byWS[d.ws]
	held, mine := int64(0), 0
	for _, o := range m {
		held += o.bytes
		if o.user == d.user {
			mine++
		}
	}
	switch {
	case mine >= maxUserDryRuns:
		return fail(CodeResourceExhausted, "you hold %d dry runs in workspace %s, the most you may: commit or discard one (discardDryRun), or wait until they expire (%v after they were made)", mine, d.ws, dryRunTTL)
	case len(m) >= maxHeldDryRuns:
		return fail(CodeResourceExhausted, "workspace %s holds %d dry runs, the most it may: commit or discard one (discardDryRun), or wait until they expire (%v after they were made)", d.ws, len(m), dryRunTTL)
	case held+d.bytes > maxHeldDryRunBytes:
		return fail(CodeResourceExhausted, "the dry runs held in workspace %s would take %d bytes, over its %d: commit or discard one, or write less per snippet", d.ws, held+d.bytes, maxHeldDryRunBytes)
	case r.bytes+d.bytes > maxHostDryRunBytes:
		return fail(CodeResourceExhausted, "this server holds %d bytes of dry runs, its most: try again once some are committed, discarded or expired (%v)", r.bytes, dryRunTTL)
	}
	if r.byWS == nil {
		r.byWS = map[store.WorkspaceID]map[string]*heldDryRun{}
	}
	if m == nil {
		m = map[string]*heldDryRun{}
		r.byWS[d.ws] = m
	}
	m[d.id] = d
	r.bytes += d.bytes
	return nil
}

// claim marks dry run id of workspace ws, made by user, as being committed or discarded.
func (r *dryRuns) claim(now time.Time, ws store.WorkspaceID, id, user string) (*heldDryRun, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.purge(now)
	d := r.byWS[ws][id]
	switch {
	case d == nil:
		return nil, fail(CodeNotFound, "no dry run %.40q in workspace %s: it expired (dry runs are held %v), was committed or discarded, or the server restarted; run the snippet again with dryRun", id, ws, dryRunTTL)
	case d.user != user:
		return nil, fail(CodeForbidden, "dry run %s was made by another user: only they may commit or discard it", id)
	case d.busy:
		return nil, fail(CodeFailedPrecondition, "dry run %s is being committed or discarded", id)
	}
	d.busy = true
	return d, nil
}

// release ends a claim on d: drop forgets it, else it is held again as it was.
func (r *dryRuns) release(d *heldDryRun, drop bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d.busy = false
	if !drop {
		return
	}
	if m := r.byWS[d.ws]; m[d.id] == d {
		delete(m, d.id)
		r.bytes -= d.bytes
		if len(m) == 0 {
			delete(r.byWS, d.ws)
		}
	}
}

// summary describes d for audit lines.
func (d *heldDryRun) summary() string { return dryRunSummary(&d.info) }

// dryRunSummary describes a dry run for audit lines.
func dryRunSummary(info *DryRunInfo) string {
	if info.ID == "" {
		return "dry run: changes nothing, nothing held"
	}
	keys := 0
	for _, g := range info.Gadgets {
		keys += len(g.Added) + len(g.Changed) + len(g.Removed)
	}
	return fmt.Sprintf("dry run %s: %d keys in %d gadgets, %d actions", info.ID, keys, len(info.Gadgets), len(info.Actions))
}

// holdDryRun ends a dry run's snippet and holds what it recorded. A dry run that went over
// its bound is refused as a whole.
func (w *Workspace) holdDryRun(dx *dryExec) (*DryRunInfo, error) {
	dx.close()
	used, refusal := dx.budget.state()
	if refusal != "" {
		return nil, fail(CodeResourceExhausted, "%s (it held %d bytes when refused); nothing is held: do less per snippet, or run it without dryRun", refusal, used)
	}
	now := w.k.cfg.Now()
	d := heldOf(dx, now)
	if d == nil {
		return &DryRunInfo{Gadgets: []DryRunGadget{}, Actions: []DryRunAction{}}, nil
	}
	if err := w.k.dryRuns.hold(now, d); err != nil {
		return nil, err
	}
	info := d.info
	return &info, nil
}

// dryBudget bounds the bytes one dry run holds (its forks' writes, the committed values
// they replace, its records and would-be actions). Once a charge (or another bound, refuse)
// is refused the dry run is over its bounds for good: executeCode then refuses it as a whole.
type dryBudget struct {
	mu      sync.Mutex
	used    int64
	max     int64
	refusal string // why the dry run went over its bounds ("": it did not)
}

// charge adds n bytes (n < 0 gives them back), refusing a growth past the bound.
func (b *dryBudget) charge(n int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > 0 && b.used+n > b.max {
		if b.refusal == "" {
			b.refusal = fmt.Sprintf("the dry run would hold more than %d bytes of writes and records", b.max)
		}
		return fmt.Errorf("%w: a dry run holds at most %d bytes of writes and records; write less per snippet, or run it without dryRun", kv.ErrQuota, b.max)
	}
	b.used += n
	return nil
}

// refuse marks the dry run as over another of its bounds, saying which.
func (b *dryBudget) refuse(why string) {
	b.mu.Lock()
	if b.refusal == "" {
		b.refusal = why
	}
	b.mu.Unlock()
}

// state returns the bytes held and why the dry run went over its bounds ("": it did not).
func (b *dryBudget) state() (int64, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used, b.refusal
}
