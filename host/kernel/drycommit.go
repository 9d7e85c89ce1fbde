package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"atelier/host/store"
)

// DryRunCommit is what commitDryRun did: the numbers of the gatekeeper actions it queued for
// approval, in the order the snippet made them.
type DryRunCommit struct {
	Actions []uint64 `json:"actions"`
}

// CommitDryRun applies dry run id (executeCode with dryRun): all its writes in one atomic
// commit, if none of the keys it read or wrote changed since (else CONFLICT, and nothing is
// applied: run the snippet again), and queues its gatekeeper actions for approval as usual.
// Only the user who made the dry run may commit it, with the access they have now.
func (w *Workspace) CommitDryRun(ctx context.Context, id string) (DryRunCommit, error) {
	return w.commitDryRun(ctx, id, "capnweb")
}

// DiscardDryRun drops dry run id; only the user who made it may.
func (w *Workspace) DiscardDryRun(ctx context.Context, id string) error {
	return w.discardDryRun(ctx, id, "capnweb")
}

// commitDryRun is CommitDryRun through the front end via.
func (w *Workspace) commitDryRun(ctx context.Context, id, via string) (DryRunCommit, error) {
	out := DryRunCommit{Actions: []uint64{}}
	d, err := w.k.dryRuns.claim(w.k.cfg.Now(), w.id, id, w.p.userID)
	if err != nil {
		return out, wrapErr(err, "commitDryRun")
	}
	err = w.enter(ctx, store.RoleUse, "commitDryRun", func(ov *overseer) error {
		if err := w.mayCommit(ctx, d); err != nil {
			return err
		}
		ids, err := ov.commitDry(ctx, w.p, d, via)
		out.Actions = ids
		return err
	})
	var ke *Error
	w.k.dryRuns.release(d, err == nil || errors.As(err, &ke) && ke.Code == CodeConflict)
	if err != nil {
		return DryRunCommit{Actions: []uint64{}}, wrapErr(err, "commitDryRun %s", id)
	}
	return out, nil
}

// mayCommit checks that each action of d still has an account of the user's (applyDry checks
// an agent's scope against every gadget d touched).
func (w *Workspace) mayCommit(ctx context.Context, d *heldDryRun) error {
	for _, a := range d.actions {
		if _, ok := w.k.userAccount(ctx, w.p.userID, a.entry.Account); !ok {
			return fail(CodeFailedPrecondition, "gatekeeper account %s of binding %q was disconnected since the dry run; discard it and run the snippet again", a.entry.Account, a.info.Binding)
		}
	}
	return nil
}

// discardDryRun is DiscardDryRun through the front end via.
func (w *Workspace) discardDryRun(ctx context.Context, id, via string) error {
	d, err := w.k.dryRuns.claim(w.k.cfg.Now(), w.id, id, w.p.userID)
	if err != nil {
		return wrapErr(err, "discardDryRun")
	}
	err = w.enter(ctx, store.RoleUse, "discardDryRun", func(ov *overseer) error {
		return ov.audit(ctx, w.p, "code.discard_dry_run", "executeCode", fmt.Sprintf("via %s; %s", via, d.summary()))
	})
	w.k.dryRuns.release(d, err == nil)
	return wrapErr(err, "discardDryRun %s", id)
}

// commitDry applies held dry run d for p: it freezes the gadgets d touched, checks that
// nothing d saw moved, then commits d's writes, its actions and the audit line at once, and
// publishes the events its calls made.
func (ov *overseer) commitDry(ctx context.Context, p *principal, d *heldDryRun, via string) ([]uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, ov.k.callTimeout())
	defer cancel()
	ids := make([]store.GadgetID, len(d.forks))
	restart := map[store.GadgetID]bool{}
	for i, f := range d.forks {
		ids[i] = f.id
		restart[f.id] = f.written()
	}
	fz, err := ov.freeze(ctx, ids)
	if err != nil {
		return nil, err
	}
	queued, err := ov.applyDry(ctx, p, d, via)
	if err != nil {
		fz.release(nil)
		return nil, err
	}
	fz.release(restart)
	for _, f := range d.forks {
		ov.k.hub.publishEvents(eventsTopic(ov.id, f.id), f.events)
	}
	accounts := map[string]bool{}
	for _, a := range d.actions {
		if !accounts[a.entry.Account] {
			accounts[a.entry.Account] = true
			if err := ov.queue.Drain(ctx, a.entry.Account); err != nil { // the actions are queued: a rule's failure is the action's
				ov.k.log.Warn("commitDryRun: auto-approving queued actions failed", "workspace", ov.id, "account", a.entry.Account, "err", err)
			}
		}
	}
	return queued, nil
}

// applyDry checks and commits d with its gadgets frozen.
func (ov *overseer) applyDry(ctx context.Context, p *principal, d *heldDryRun, via string) ([]uint64, error) {
	meta, err := ov.snapshot()
	if err != nil {
		return nil, err
	}
	var muts []store.Mutation
	var grow, freed int64
	for _, f := range d.forks {
		g, err := ov.gadget(f.id)
		if err != nil {
			return nil, fail(CodeConflict, "gadget %s was deleted since the dry run; nothing was applied: run the snippet again", f.name)
		}
		if err := p.checkGadget(ov.id, g.Name); err != nil {
			return nil, err
		}
		if g.Current != f.version {
			return nil, fail(CodeConflict, "gadget %s is at version %d now, the dry run ran version %d; nothing was applied: run the snippet again", g.Name, g.Current, f.version)
		}
		f.kv.base = gadgetBase{ws: ov.ws, g: f.id}
		what, err := f.kv.moved(ctx)
		if err != nil {
			return nil, wrapErr(err, "read gadget %s", g.Name)
		}
		if what != "" {
			return nil, fail(CodeConflict, "%s of gadget %s changed since the dry run; nothing was applied: run the snippet again (with dryRun) and commit its new dry run", what, g.Name)
		}
		n := f.kv.growth()
		if n > 0 {
			used, err := ov.ws.Usage(f.id)
			if err != nil {
				return nil, wrapErr(err, "read gadget %s's storage use", g.Name)
			}
			if used+n > ov.k.cfg.GadgetQuota {
				return nil, fail(CodeResourceExhausted, "gadget %s would store %d bytes, over its %d; nothing was applied: write less", g.Name, used+n, ov.k.cfg.GadgetQuota)
			}
			grow += n
		} else {
			freed -= n
		}
		muts = append(muts, f.kv.mutations(f.id)...)
	}
	if grow > 0 {
		if err := ov.k.addStored(ctx, meta.Owner, grow); err != nil {
			return nil, err
		}
	}
	muts = append(muts, auditEntry(p, "code.commit_dry_run", "executeCode", fmt.Sprintf("via %s; %s", via, d.summary())))
	entries := make([]store.QueuedAction, len(d.actions))
	for i, a := range d.actions {
		entries[i] = a.entry
	}
	queued, err := ov.queue.addAll(ctx, entries, muts)
	if err != nil {
		ov.k.freeStored(meta.Owner, grow)
		return nil, err
	}
	ov.k.freeStored(meta.Owner, freed)
	return queued, nil
}

// addAll commits new entries under the next IDs together with muts, in one commit, and keeps
// them; it returns their IDs.
func (q *queue) addAll(ctx context.Context, entries []store.QueuedAction, muts []store.Mutation) ([]uint64, error) {
	ids := make([]uint64, len(entries))
	err := q.locked(func() error {
		now := time.Now().UTC()
		all := slices.Clip(muts)
		for i := range entries {
			e := &entries[i]
			e.ID, e.Created = q.lastID+1+uint64(i), now
			ids[i] = e.ID
			caller := e.Caller
			if caller == "" {
				caller = "gatekeeper:" + e.Account
			}
			all = append(all, store.PutAction(*e), auditLine(caller, "gatekeeper.submit", e.Resource, fmt.Sprintf("#%d %s: %s", e.ID, e.KindTag, e.Title)))
		}
		if err := q.ov.write(ctx, all...); err != nil {
			return err
		}
		for _, e := range entries {
			q.keep(e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(entries) > 0 {
		q.changed()
	}
	return ids, nil
}
