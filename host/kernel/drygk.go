package kernel

import (
	"context"
	"encoding/json"
	"fmt"

	"atelier/host/gatekeeper"
	"atelier/host/store"
)

// A dry run's gatekeeper sessions: an instance of the account's gatekeeper whose state is a
// fork of the account's (dropped with the dry run) and whose queue records actions instead
// of queuing them.

// link returns the dry run's gatekeeper session of key, opening it on first use: an instance
// of the account's gatekeeper whose state is a fork of the account's (dropped with the dry
// run) and whose actions the dry run records.
func (dx *dryExec) link(ctx context.Context, ov *overseer, key linkKey, caller string, acct store.GatekeeperAccount) (*link, error) {
	dx.linkMu.Lock() // not dx.mu: the guest may submit actions while its session opens
	defer dx.linkMu.Unlock()
	if dx.ended() {
		return nil, fail(CodeFailedPrecondition, "the dry run's snippet has ended")
	}
	if l := dx.links[key]; l != nil && l.account == acct.ID {
		return l, nil
	} else if l != nil {
		l.inst.Close()
		delete(dx.links, key)
	}
	gk, err := ov.k.gatekeeper(ctx, acct.Gatekeeper)
	if err != nil {
		return nil, err
	}
	q := &dryQueue{dx: dx, ov: ov, gatekeeper: gk.Package.Manifest.Name}
	inst, err := ov.startInstanceWith(ctx, acct, q, newForkKV(accountBase{ov.accountState(acct)}, dx.budget))
	if err != nil {
		return nil, err
	}
	l, err := openSession(ctx, inst, caller, acct)
	if err != nil {
		return nil, err
	}
	dx.links[key] = l
	return l, nil
}

// dryCallKey carries the binding call a gatekeeper serves in a dry run, for the record of the
// actions it submits.
type dryCallKey struct{}

// dryCall is a binding call of a dry run.
type dryCall struct {
	binding, method, args string
}

// tag marks ctx with the binding call it serves (dx nil: ctx unchanged).
func (dx *dryExec) tag(ctx context.Context, binding, method string, args []any) context.Context {
	if dx == nil {
		return ctx
	}
	js, _ := json.Marshal(args) // the session marshals them again and reports a failure
	return context.WithValue(ctx, dryCallKey{}, dryCall{binding: binding, method: method, args: string(js)})
}

// dryQueue is the gatekeeper.Queue of a dry run's session: observations go to the
// workspace's queue as usual; actions are recorded, not queued.
type dryQueue struct {
	dx         *dryExec
	ov         *overseer
	gatekeeper string // the gatekeeper's name
}

// Observe implements gatekeeper.Queue.
func (q *dryQueue) Observe(ctx context.Context, o gatekeeper.ObservationRecord) error {
	return q.ov.queue.Observe(ctx, o)
}

// Submit implements gatekeeper.Queue: the action is recorded for the dry run's commit; its
// number is 0 (it has none until it is queued).
func (q *dryQueue) Submit(ctx context.Context, a gatekeeper.ActionRecord) (uint64, error) {
	call, _ := ctx.Value(dryCallKey{}).(dryCall)
	e := entryOf(a.Origin, gatekeeper.Acted, gatekeeper.Pending, a.Title, a.Description)
	e.KindTag, e.KindLabel, e.AutoApprovable, e.ImplementsRevert, e.Payload = a.Kind.Tag, a.Kind.Label, a.AutoApprovable, a.ImplementsRevert, a.Payload
	info := DryRunAction{Binding: call.binding, Gatekeeper: q.gatekeeper, Account: a.Origin.Gatekeeper, Method: call.method, Args: call.args,
		Title: a.Title, Description: a.Description, Kind: a.Kind.Tag}
	size := len(e.Payload) + len(e.Title) + len(e.Description) + len(call.args) + forkEntry
	if err := q.dx.budget.charge(int64(size)); err != nil {
		return 0, err
	}
	q.dx.mu.Lock()
	defer q.dx.mu.Unlock()
	if len(q.dx.actions) >= maxDryRunActions {
		q.dx.budget.refuse(fmt.Sprintf("the dry run would record more than %d gatekeeper actions", maxDryRunActions))
		return 0, fmt.Errorf("a dry run records at most %d gatekeeper actions; submit fewer per snippet", maxDryRunActions)
	}
	q.dx.actions = append(q.dx.actions, heldAction{entry: e, info: info})
	return 0, nil
}

// Drain implements gatekeeper.Queue: a dry run queues nothing to apply.
func (*dryQueue) Drain(context.Context, string) error { return nil }
