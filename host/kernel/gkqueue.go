package kernel

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
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
// stored payload, so it needs nothing the submitting instance kept. Memory holds only the
// newest entries (recentActions) and the pending actions; older entries are read from the
// store page by page (listActions' before).
type queue struct {
	ov *overseer

	// mu guards the fields below and is held across each commit, so that entries reach the
	// store in ID order and memory never runs ahead of it.
	mu       sync.Mutex
	loaded   bool
	lastID   uint64
	recent   []store.QueuedAction // the newest recentActions entries, in ID order
	pending  []store.QueuedAction // the actions waiting for a decision, in ID order
	rules    map[store.ApprovalRule]bool
	deciding map[uint64]bool // actions being applied or rejected
}

// Bounds of the action log in memory and per page.
const (
	// recentActions entries are kept in memory and sent to subscribeActions subscribers.
	recentActions = 100
	// maxActionsPage bounds listActions' limit.
	maxActionsPage = 1000
)

func newQueue(ov *overseer) *queue {
	return &queue{ov: ov, rules: map[store.ApprovalRule]bool{}, deciding: map[uint64]bool{}}
}

// load reads the stored queue on first use; q.mu must be held.
func (q *queue) load() error {
	if q.loaded {
		return nil
	}
	recent, err := q.ov.ws.ActionsBefore(0, recentActions)
	if err != nil {
		return fmt.Errorf("load approval queue: %w", err)
	}
	pending, err := q.ov.ws.PendingActions()
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
	q.recent, q.pending, q.loaded = recent, pending, true
	if n := len(recent); n > 0 {
		q.lastID = recent[n-1].ID
	}
	return nil
}

// keep records e, just committed, in memory; q.mu must be held.
func (q *queue) keep(e store.QueuedAction) {
	if i, ok := findEntry(q.recent, e.ID); ok {
		q.recent[i] = e
	} else if e.ID > q.lastID {
		q.lastID = e.ID
		q.recent = append(q.recent, e)
		if len(q.recent) > recentActions {
			q.recent = slices.Delete(q.recent, 0, len(q.recent)-recentActions)
		}
	}
	i, found := findEntry(q.pending, e.ID)
	switch {
	case e.State == store.StatePending && found:
		q.pending[i] = e
	case e.State == store.StatePending:
		q.pending = slices.Insert(q.pending, i, e)
	case found:
		q.pending = slices.Delete(q.pending, i, i+1)
	}
}

// findEntry returns the position of entry id in entries (in ID order), or where it would go.
func findEntry(entries []store.QueuedAction, id uint64) (int, bool) {
	return slices.BinarySearchFunc(entries, id, func(e store.QueuedAction, id uint64) int { return cmp.Compare(e.ID, id) })
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
		e.ID = q.lastID + 1
		e.Created = time.Now().UTC()
		if err := q.ov.write(ctx, append(muts(e.ID), store.PutAction(e))...); err != nil {
			return err
		}
		q.keep(e)
		return nil
	})
	if err != nil {
		return 0, err
	}
	q.changed()
	return e.ID, nil
}

// take marks pending action id as being decided and returns a copy of it.
func (q *queue) take(id uint64) (store.QueuedAction, error) {
	var e store.QueuedAction
	err := q.locked(func() error {
		i, ok := findEntry(q.pending, id)
		switch {
		case q.deciding[id]:
			return fmt.Errorf("action %d is being decided", id)
		case !ok:
			old, err := q.entry(id)
			if err != nil {
				return err
			}
			if old.Type != string(gatekeeper.Acted) {
				return fmt.Errorf("entry %d is an observation", id)
			}
			return fmt.Errorf("action %d is %s, not pending", id, old.State)
		}
		q.deciding[id] = true
		e = q.pending[i]
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
		q.keep(e)
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

// reject rejects pending action id for reason (may be empty), tells its gatekeeper and
// commits that with muts.
func (q *queue) reject(ctx context.Context, id uint64, reason string, muts ...store.Mutation) error {
	return q.decide(ctx, id, muts, func(inst *gatekeeper.Instance, e *store.QueuedAction) error {
		e.State, e.Result = string(gatekeeper.Rejected), reason
		if err := inst.RejectAction(ctx, id, e.Payload); err != nil {
			return fmt.Errorf("reject action %d: %w", id, err)
		}
		return nil
	})
}

// actionsTopic is the hub topic of a workspace's queue changes.
func actionsTopic(ws store.WorkspaceID) string { return "actions/" + string(ws) }

// changed publishes the newest entries and the pending actions to the workspace's
// subscribeActions subscribers.
func (q *queue) changed() {
	topic := actionsTopic(q.ov.id)
	if !q.ov.k.hub.watched(topic) {
		return
	}
	var recent, pending []ActionInfo
	err := q.locked(func() error {
		recent, pending = actionInfos(q.recent), actionInfos(q.pending)
		return nil
	})
	if err == nil {
		q.ov.k.hub.publish(topic, map[string]any{"actions": recent, "pending": pending})
	}
}

// list returns a page of the action log (ActionsQuery).
func (q *queue) list(query ActionsQuery) ([]ActionInfo, error) {
	var out []ActionInfo
	err := q.locked(func() error {
		if query.Pending {
			out = actionInfos(q.pending)
			return nil
		}
		if query.Before == 0 && query.Limit <= len(q.recent) {
			out = actionInfos(q.recent[len(q.recent)-query.Limit:])
			return nil
		}
		page, err := q.ov.ws.ActionsBefore(query.Before, query.Limit)
		out = actionInfos(page)
		return err
	})
	return out, err
}

// actionInfos describes entries.
func actionInfos(entries []store.QueuedAction) []ActionInfo {
	out := make([]ActionInfo, len(entries))
	for i, e := range entries {
		name, _, _ := strings.Cut(e.Package, "@") // the package is "name@version (digest)"
		out[i] = ActionInfo{ID: e.ID, Type: e.Type, State: e.State, Account: e.Account, Gatekeeper: name, Resource: e.Resource,
			Caller: e.Caller, Title: e.Title, Description: e.Description, Kind: e.KindTag, AutoApproved: e.AutoApproved, Result: e.Result}
	}
	return out
}

// entry returns entry id, from memory or the store; q.mu must be held.
func (q *queue) entry(id uint64) (store.QueuedAction, error) {
	if i, ok := findEntry(q.pending, id); ok {
		return q.pending[i], nil
	}
	if i, ok := findEntry(q.recent, id); ok {
		return q.recent[i], nil
	}
	page, err := q.ov.ws.ActionsBefore(id+1, 1)
	if err != nil {
		return store.QueuedAction{}, err
	}
	if len(page) == 0 || page[0].ID != id {
		return store.QueuedAction{}, fmt.Errorf("no entry %d", id)
	}
	return page[0], nil
}

// accountOf returns the account action id would act with ("" when there is no such action).
func (q *queue) accountOf(id uint64) (string, error) {
	var account string
	err := q.locked(func() error {
		e, err := q.entry(id)
		if err == nil && e.Type == string(gatekeeper.Acted) {
			account = e.Account
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
		i := slices.IndexFunc(q.pending, func(e store.QueuedAction) bool { return e.Account == acct.ID })
		if i < 0 {
			return nil
		}
		e := q.pending[i]
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
	ID      uint64 `json:"id"`
	Type    string `json:"type"`  // "observation" or "action"
	State   string `json:"state"` // recorded, pending, applied, failed, rejected, reverted
	Account string `json:"account"`
	// Gatekeeper is the name of the gatekeeper whose package made the entry.
	Gatekeeper  string `json:"gatekeeper,omitempty"`
	Resource    string `json:"resource"`
	Caller      string `json:"caller"`
	Title       string `json:"title"`
	Description string `json:"description"`
	Kind        string `json:"kind,omitempty"`
	// AutoApproved is set when a rule, not a person, approved the action.
	AutoApproved bool   `json:"autoApproved"`
	Result       string `json:"result,omitempty"`
}

// ActionsQuery selects a page of the action log.
type ActionsQuery struct {
	// Before: only entries with smaller IDs (0: up to the newest).
	Before uint64 `json:"before"`
	// Limit is the page size (default 100, at most 1000); the page holds the newest entries
	// that match, in ID order.
	Limit int `json:"limit"`
	// Pending lists every action waiting for a decision instead (Before and Limit unused).
	Pending bool `json:"pending"`
}

// ListActions lists a page of the workspace's observations and actions, in ID order (use
// role): the newest 100 by default; page back with before = the first ID of a page.
func (w *Workspace) ListActions(ctx context.Context, query ActionsQuery) ([]ActionInfo, error) {
	if query.Limit == 0 {
		query.Limit = recentActions
	}
	if query.Limit < 0 || query.Limit > maxActionsPage {
		return nil, fail(CodeInvalidArgument, "listActions: limit %d: want 1 to %d", query.Limit, maxActionsPage)
	}
	var out []ActionInfo
	err := w.enter(ctx, store.RoleUse, "listActions", func(ov *overseer) error {
		var err error
		out, err = ov.queue.list(query)
		return wrapErr(err, "listActions")
	})
	return out, err
}

// SubscribeActions calls cb({actions, pending}) after every change to the action log: the
// newest 100 entries and every action waiting for a decision.
func (w *Workspace) SubscribeActions(ctx context.Context, cb *capnweb.Stub) (*Subscription, error) {
	return w.subscribe(ctx, store.RoleUse, "subscribeActions", actionsTopic(w.id), store.Gadget{}, cb)
}

// ApproveAction applies pending action id through a fresh instance of its account's
// gatekeeper. Only the owner of the account the action would act with decides.
func (w *Workspace) ApproveAction(ctx context.Context, id uint64) error {
	return w.decide(ctx, "approveAction", id, func(ov *overseer, audit store.Mutation) error { return ov.queue.apply(ctx, id, false, audit) })
}

// maxKindTag bounds the action kind an auto-approval rule names, in bytes.
const maxKindTag = 256

// maxRejectReason bounds the reason a person gives for rejecting an action, in bytes.
const maxRejectReason = 1024

// RejectAction drops pending action id; the gatekeeper is told, the service is left as is.
// reason (optional, at most 1 KiB) is kept as the entry's result and in the audit line.
func (w *Workspace) RejectAction(ctx context.Context, id uint64, reason string) error {
	if len(reason) > maxRejectReason {
		return fail(CodeInvalidArgument, "rejectAction: the reason has %d bytes: at most %d", len(reason), maxRejectReason)
	}
	return w.decide(ctx, "rejectAction", id, func(ov *overseer, audit store.Mutation) error {
		if reason != "" {
			audit.Audit.Detail += ": " + reason
		}
		return ov.queue.reject(ctx, id, reason, audit)
	})
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
		acct, ok := w.k.userAccount(ctx, w.p.userID, account)
		if account == "" || !ok {
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
	if m := (gatekeeper.Manifest{Format: info.Format, AutoApprovable: info.AutoApprovable}); !m.AutoApproves(kind) || len(kind) > maxKindTag {
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

// AutoApproveRule is one of the caller's auto-approval rules in a workspace.
type AutoApproveRule struct {
	// Gatekeeper is the package id the rule covers.
	Gatekeeper string `json:"gatekeeper"`
	// Name is the gatekeeper's name ("" when the package was removed since).
	Name string `json:"name"`
	// Kind is the action kind tag the rule approves.
	Kind string `json:"kind"`
}

// ListAutoApprove lists the caller's auto-approval rules in this workspace (setAutoApprove's),
// by gatekeeper and kind. Agents have none (FORBIDDEN, as for setAutoApprove).
func (w *Workspace) ListAutoApprove(ctx context.Context) ([]AutoApproveRule, error) {
	if w.p.agent != nil {
		return nil, fail(CodeForbidden, "listAutoApprove: agents have no approval rules")
	}
	out := []AutoApproveRule{}
	err := w.enter(ctx, store.RoleUse, "listAutoApprove", func(ov *overseer) error {
		return wrapErr(ov.queue.locked(func() error {
			for r := range ov.queue.rules {
				if r.Owner == w.p.userID {
					out = append(out, AutoApproveRule{Gatekeeper: r.Gatekeeper, Kind: r.Kind})
				}
			}
			return nil
		}), "listAutoApprove")
	})
	if err != nil {
		return nil, err
	}
	for i, r := range out {
		if rec, _, err := w.k.st.Gatekeeper(ctx, r.Gatekeeper); err == nil {
			if info, err := gatekeeperInfo(rec); err == nil {
				out[i].Name = info.Name
			}
		}
	}
	slices.SortFunc(out, func(a, b AutoApproveRule) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Gatekeeper, b.Gatekeeper), cmp.Compare(a.Kind, b.Kind))
	})
	return out, nil
}
