package kernel

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"atelier/capnweb"

	"atelier/host/gatekeeper"
	"atelier/host/store"
)

// queue is a workspace's approval queue for the gatekeepers its gadgets are bound to. Every
// observation, action, decision and auto-approval rule is committed to the workspace's store
// (together with its audit line, naming the caller the session was opened for,
// "gadget:NAME") before the call that made it returns, so pending actions and rules survive a
// restart. A decision starts a fresh instance of the account's gatekeeper and hands it the
// stored payload, so it needs nothing the submitting instance kept.
type queue struct {
	ov *overseer

	// mu guards the fields below and is held across each commit, so that entries reach the
	// store in ID order and memory never runs ahead of it.
	mu       sync.Mutex
	loaded   bool
	entries  []store.QueuedAction // in ID order
	rules    map[store.ApprovalRule]bool
	deciding map[uint64]bool // actions being applied or rejected
}

func newQueue(ov *overseer) *queue {
	return &queue{ov: ov, rules: map[store.ApprovalRule]bool{}, deciding: map[uint64]bool{}}
}

// load reads the stored queue on first use; q.mu must be held.
func (q *queue) load() error {
	if q.loaded {
		return nil
	}
	entries, err := q.ov.ws.Actions()
	if err != nil {
		return fmt.Errorf("load approval queue: %w", err)
	}
	rules, err := q.ov.ws.Rules()
	if err != nil {
		return fmt.Errorf("load approval queue: %w", err)
	}
	for _, r := range rules {
		q.rules[r] = true
	}
	q.entries, q.loaded = entries, true
	return nil
}

// locked runs fn with q.mu held and the queue loaded.
func (q *queue) locked(fn func() error) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.load(); err != nil {
		return err
	}
	return fn()
}

// add commits a new entry under the next ID together with muts, then keeps it.
func (q *queue) add(ctx context.Context, e store.QueuedAction, muts func(id uint64) []store.Mutation) (uint64, error) {
	err := q.locked(func() error {
		e.ID = 1
		if n := len(q.entries); n > 0 {
			e.ID = q.entries[n-1].ID + 1
		}
		e.Created = time.Now().UTC()
		if err := q.ov.write(ctx, append(muts(e.ID), store.PutAction(e))...); err != nil {
			return err
		}
		q.entries = append(q.entries, e)
		return nil
	})
	if err != nil {
		return 0, err
	}
	q.changed()
	return e.ID, nil
}

// index returns the position of entry id; q.mu must be held.
func (q *queue) index(id uint64) int {
	i, ok := slices.BinarySearchFunc(q.entries, id, func(e store.QueuedAction, id uint64) int { return cmp.Compare(e.ID, id) })
	if !ok {
		return -1
	}
	return i
}

// take marks pending action id as being decided and returns a copy of it.
func (q *queue) take(id uint64) (store.QueuedAction, error) {
	var e store.QueuedAction
	err := q.locked(func() error {
		i := q.index(id)
		switch {
		case i < 0:
			return fmt.Errorf("no entry %d", id)
		case q.entries[i].Type != string(gatekeeper.Acted):
			return fmt.Errorf("entry %d is an observation", id)
		case q.deciding[id]:
			return fmt.Errorf("action %d is being decided", id)
		case q.entries[i].State != string(gatekeeper.Pending):
			return fmt.Errorf("action %d is %s, not pending", id, q.entries[i].State)
		}
		q.deciding[id] = true
		e = q.entries[i]
		return nil
	})
	return e, err
}

// settle commits the decided entry e with muts, keeps it and ends the decision.
func (q *queue) settle(ctx context.Context, e store.QueuedAction, muts []store.Mutation) error {
	defer q.changed()
	return q.locked(func() error {
		delete(q.deciding, e.ID)
		if err := q.ov.write(ctx, append(muts, store.PutAction(e))...); err != nil {
			return fmt.Errorf("record decision on action %d: %w", e.ID, err)
		}
		q.entries[q.index(e.ID)] = e
		return nil
	})
}

// decide takes pending action id, runs fn with a fresh instance of its account's gatekeeper
// and settles the outcome fn wrote into the entry, committed together with muts.
func (q *queue) decide(ctx context.Context, id uint64, muts []store.Mutation, fn func(inst *gatekeeper.Instance, e *store.QueuedAction) error) error {
	e, err := q.take(id)
	if err != nil {
		return err
	}
	inst, err := q.instance(ctx, e.Account)
	if err != nil {
		q.mu.Lock()
		delete(q.deciding, id)
		q.mu.Unlock()
		return fmt.Errorf("decide action %d: %w", id, err)
	}
	defer inst.Close()
	ferr := fn(inst, &e)
	if err := q.settle(ctx, e, muts); err != nil {
		return err
	}
	return ferr
}

// instance starts an instance of account's gatekeeper, as the account stands now.
func (q *queue) instance(ctx context.Context, account string) (*gatekeeper.Instance, error) {
	acct, err := q.ov.k.st.Account(ctx, account)
	if err != nil {
		return nil, err
	}
	return q.ov.startInstance(ctx, acct)
}

// apply applies pending action id (auto: a rule approved it) and commits the outcome with muts.
func (q *queue) apply(ctx context.Context, id uint64, auto bool, muts ...store.Mutation) error {
	return q.decide(ctx, id, muts, func(inst *gatekeeper.Instance, e *store.QueuedAction) error {
		msg, err := inst.ApplyAction(ctx, id, e.Payload)
		e.State, e.Result, e.AutoApproved = string(gatekeeper.Applied), msg, auto
		if err != nil {
			e.State, e.Result = string(gatekeeper.Failed), err.Error()
			return fmt.Errorf("apply action %d: %w", id, err)
		}
		return nil
	})
}

// reject rejects pending action id, tells its gatekeeper and commits that with muts.
func (q *queue) reject(ctx context.Context, id uint64, muts ...store.Mutation) error {
	return q.decide(ctx, id, muts, func(inst *gatekeeper.Instance, e *store.QueuedAction) error {
		e.State = string(gatekeeper.Rejected)
		if err := inst.RejectAction(ctx, id, e.Payload); err != nil {
			return fmt.Errorf("reject action %d: %w", id, err)
		}
		return nil
	})
}

// actionsTopic is the hub topic of a workspace's queue changes.
func actionsTopic(ws store.WorkspaceID) string { return "actions/" + string(ws) }

// changed publishes the action log to the workspace's subscribeActions subscribers.
func (q *queue) changed() {
	topic := actionsTopic(q.ov.id)
	if !q.ov.k.hub.watched(topic) {
		return
	}
	if list, err := q.list(); err == nil {
		q.ov.k.hub.publish(topic, map[string]any{"actions": list})
	}
}

// list returns the action log.
func (q *queue) list() ([]ActionInfo, error) {
	out := []ActionInfo{}
	err := q.locked(func() error {
		for _, e := range q.entries {
			out = append(out, ActionInfo{ID: e.ID, Type: e.Type, State: e.State, Account: e.Account, Resource: e.Resource,
				Caller: e.Caller, Title: e.Title, Description: e.Description, Kind: e.KindTag, AutoApproved: e.AutoApproved, Result: e.Result})
		}
		return nil
	})
	return out, err
}

// accountOf returns the account action id would act with ("" when there is no such action).
func (q *queue) accountOf(id uint64) (string, error) {
	var account string
	err := q.locked(func() error {
		if i := q.index(id); i >= 0 && q.entries[i].Type == string(gatekeeper.Acted) {
			account = q.entries[i].Account
		}
		return nil
	})
	return account, err
}

// callerOf names who caused an entry: the session's caller, or the gatekeeper itself for work
// outside a session (applying an action).
func callerOf(o gatekeeper.Origin) string {
	if o.Caller != "" {
		return o.Caller
	}
	return "gatekeeper:" + o.Gatekeeper
}

// entryOf starts a log entry for o.
func entryOf(o gatekeeper.Origin, typ gatekeeper.EntryType, state gatekeeper.State, title, description string) store.QueuedAction {
	return store.QueuedAction{Type: string(typ), State: string(state), Account: o.Gatekeeper, Package: o.Package, Resource: o.Resource,
		Caller: o.Caller, Session: o.Session, Title: title, Description: description}
}

// Observe implements gatekeeper.Queue: the read is refused unless it and its audit line are
// durable.
func (q *queue) Observe(ctx context.Context, o gatekeeper.ObservationRecord) error {
	e := entryOf(o.Origin, gatekeeper.Observed, gatekeeper.Recorded, o.Title, o.Description)
	_, err := q.add(ctx, e, func(uint64) []store.Mutation {
		return []store.Mutation{auditLine(callerOf(o.Origin), "gatekeeper.observe", o.Resource, o.Title)}
	})
	if err != nil {
		return fmt.Errorf("record observation: %w", err)
	}
	return nil
}

// Submit implements gatekeeper.Queue. a.Target is not kept: a decision, possibly after a
// restart, starts a fresh instance of the account's gatekeeper.
func (q *queue) Submit(ctx context.Context, a gatekeeper.ActionRecord) (uint64, error) {
	e := entryOf(a.Origin, gatekeeper.Acted, gatekeeper.Pending, a.Title, a.Description)
	e.KindTag, e.KindLabel, e.AutoApprovable, e.ImplementsRevert, e.Payload = a.Kind.Tag, a.Kind.Label, a.AutoApprovable, a.ImplementsRevert, a.Payload
	id, err := q.add(ctx, e, func(id uint64) []store.Mutation {
		return []store.Mutation{auditLine(callerOf(a.Origin), "gatekeeper.submit", a.Resource, fmt.Sprintf("#%d %s: %s", id, a.Kind.Tag, a.Title))}
	})
	if err != nil {
		return 0, fmt.Errorf("record action: %w", err)
	}
	return id, nil
}

// nextAuto returns the account's first pending action if a rule covers it.
func (q *queue) nextAuto(acct store.GatekeeperAccount) (uint64, bool, error) {
	var (
		id uint64
		ok bool
	)
	err := q.locked(func() error {
		i := slices.IndexFunc(q.entries, func(e store.QueuedAction) bool {
			return e.Type == string(gatekeeper.Acted) && e.Account == acct.ID && e.State == string(gatekeeper.Pending)
		})
		if i < 0 {
			return nil
		}
		e := q.entries[i]
		rule := store.ApprovalRule{Owner: acct.Owner, Gatekeeper: acct.Gatekeeper, Kind: e.KindTag}
		id, ok = e.ID, !q.deciding[e.ID] && e.AutoApprovable && q.rules[rule]
		return nil
	})
	return id, ok, err
}

// Drain implements gatekeeper.Queue: it applies, in order, the account's pending actions
// that a rule covers, up to the first that needs a person. gk is the account's ID.
func (q *queue) Drain(ctx context.Context, gk string) error {
	acct, err := q.ov.k.st.Account(ctx, gk)
	if err != nil {
		return nil // a disconnected account approves nothing by itself
	}
	for {
		id, ok, err := q.nextAuto(acct)
		if err != nil || !ok {
			return err
		}
		if err := q.apply(ctx, id, true); err != nil {
			return fmt.Errorf("auto-approve action %d: %w", id, err)
		}
	}
}

// setRule adds (enabled) or withdraws rule, committed with its audit line.
func (q *queue) setRule(ctx context.Context, rule store.ApprovalRule, enabled bool, audit store.Mutation) error {
	return q.locked(func() error {
		m := store.DeleteRule(rule)
		if enabled {
			m = store.PutRule(rule)
		}
		if err := q.ov.write(ctx, m, audit); err != nil {
			return err
		}
		if enabled {
			q.rules[rule] = true
		} else {
			delete(q.rules, rule)
		}
		return nil
	})
}

// ActionInfo is one line of a workspace's action log.
type ActionInfo struct {
	ID          uint64 `json:"id"`
	Type        string `json:"type"`  // "observation" or "action"
	State       string `json:"state"` // recorded, pending, applied, failed, rejected, reverted
	Account     string `json:"account"`
	Resource    string `json:"resource"`
	Caller      string `json:"caller"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Kind        string `json:"kind,omitempty"`
	// AutoApproved is set when a rule, not a person, approved the action.
	AutoApproved bool   `json:"autoApproved"`
	Result       string `json:"result,omitempty"`
}

// ListActions lists the workspace's observations and actions in order (use role).
func (w *Workspace) ListActions(ctx context.Context) ([]ActionInfo, error) {
	var out []ActionInfo
	err := w.enter(ctx, store.RoleUse, "listActions", func(ov *overseer) error {
		var err error
		out, err = ov.queue.list()
		return wrapErr(err, "listActions")
	})
	return out, err
}

// SubscribeActions calls cb({actions}) with the whole action log after every change to it.
func (w *Workspace) SubscribeActions(ctx context.Context, cb *capnweb.Stub) (*Subscription, error) {
	return w.subscribe(ctx, store.RoleUse, "subscribeActions", actionsTopic(w.id), store.Gadget{}, cb)
}

// ApproveAction applies pending action id through a fresh instance of its account's
// gatekeeper. Only the owner of the account the action would act with decides.
func (w *Workspace) ApproveAction(ctx context.Context, id uint64) error {
	return w.decide(ctx, "approveAction", id, func(ov *overseer, audit store.Mutation) error { return ov.queue.apply(ctx, id, false, audit) })
}

// RejectAction drops pending action id; the gatekeeper is told, the service is left as is.
func (w *Workspace) RejectAction(ctx context.Context, id uint64) error {
	return w.decide(ctx, "rejectAction", id, func(ov *overseer, audit store.Mutation) error { return ov.queue.reject(ctx, id, audit) })
}

// decide runs a decision on action id once the caller is found to own its account; fn
// commits the new state together with the decision's audit line before decide returns.
func (w *Workspace) decide(ctx context.Context, what string, id uint64, fn func(ov *overseer, audit store.Mutation) error) error {
	if w.p.agent != nil {
		return fail(CodeForbidden, "%s: agents may not decide actions", what)
	}
	return w.enter(ctx, store.RoleUse, what, func(ov *overseer) error {
		account, err := ov.queue.accountOf(id)
		if err != nil {
			return wrapErr(err, "%s", what)
		}
		acct, err := w.k.st.Account(ctx, account)
		if account == "" || err != nil || acct.Owner != w.p.userID {
			return fail(CodeNotFound, "%s: no action %d of yours is in this workspace", what, id)
		}
		err = fn(ov, auditEntry(w.p, "gatekeeper."+what, acct.Resource, fmt.Sprintf("#%d", id)))
		if err == nil {
			err = ov.queue.Drain(ctx, account) // auto-approved actions waiting behind it
		}
		if err != nil {
			return &Error{Code: CodeFailedPrecondition, Msg: fmt.Sprintf("%s %d: %v", what, id, err), Err: err}
		}
		return nil
	})
}

// SetAutoApprove adds (enabled) or withdraws the rule "apply actions of kind from my accounts
// on gatekeeperId without asking" in this workspace. It covers only actions the gatekeeper
// marked auto-approvable, and only kinds the manifest lists in autoApprovable
// (INVALID_ARGUMENT otherwise). The rule is stored with the workspace. Enabling it applies
// the covered actions already waiting.
func (w *Workspace) SetAutoApprove(ctx context.Context, gatekeeperID, kind string, enabled bool) error {
	if w.p.agent != nil {
		return fail(CodeForbidden, "setAutoApprove: agents may not set approval rules")
	}
	rec, _, err := w.k.st.Gatekeeper(ctx, gatekeeperID)
	if err != nil {
		return wrapErr(err, "setAutoApprove")
	}
	info, err := gatekeeperInfo(rec)
	if err != nil {
		return wrapErr(err, "setAutoApprove")
	}
	if !slices.Contains(info.AutoApprovable, kind) {
		return fail(CodeInvalidArgument, "setAutoApprove: %s does not allow auto-approving %.40q (it allows %v)", info.Name, kind, info.AutoApprovable)
	}
	accts, err := w.k.st.Accounts(ctx, w.p.userID)
	if err != nil {
		return wrapErr(err, "setAutoApprove")
	}
	return w.enter(ctx, store.RoleUse, "setAutoApprove", func(ov *overseer) error {
		rule := store.ApprovalRule{Owner: w.p.userID, Gatekeeper: gatekeeperID, Kind: kind}
		audit := auditEntry(w.p, "gatekeeper.setAutoApprove", gatekeeperID, fmt.Sprintf("%s=%v", kind, enabled))
		if err := ov.queue.setRule(ctx, rule, enabled, audit); err != nil {
			return wrapErr(err, "setAutoApprove")
		}
		for _, a := range accts {
			if a.Gatekeeper == gatekeeperID && enabled {
				if err := ov.queue.Drain(ctx, a.ID); err != nil {
					return wrapErr(err, "setAutoApprove")
				}
			}
		}
		return nil
	})
}
