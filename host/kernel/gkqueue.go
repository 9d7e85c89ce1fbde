package kernel

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"atelier/capnweb"

	"atelier/host/gatekeeper"
	"atelier/host/store"
)

// queue is a workspace's approval queue for the gatekeepers its gadgets are bound to. Every
// observation and action is also written to the workspace's audit log, naming the caller the
// session was opened for ("gadget:NAME"). The queue itself (pending actions and their
// decisions) is kept in memory for the overseer's lifetime.
type queue struct {
	ov *overseer
	mq *gatekeeper.MemoryQueue

	mu    sync.Mutex
	rules map[ruleKey]bool // auto-approval rules
	auto  map[uint64]bool  // actions a rule approved
}

// ruleKey is an auto-approval rule: actions of kind from owner's accounts on gatekeeper.
type ruleKey struct{ owner, gatekeeper, kind string }

func newQueue(ov *overseer) *queue {
	return &queue{ov: ov, mq: gatekeeper.NewMemoryQueue(), rules: map[ruleKey]bool{}, auto: map[uint64]bool{}}
}

// actionsTopic is the hub topic of a workspace's queue changes.
func actionsTopic(ws store.WorkspaceID) string { return "actions/" + string(ws) }

// changed publishes the action log to the workspace's subscribeActions subscribers.
func (q *queue) changed() {
	topic := actionsTopic(q.ov.id)
	if q.ov.k.hub.watched(topic) {
		q.ov.k.hub.publish(topic, map[string]any{"actions": q.list()})
	}
}

// waiting reports whether an action waits for a decision.
func (q *queue) waiting() bool {
	for _, e := range q.mq.List() {
		if e.State == gatekeeper.Pending {
			return true
		}
	}
	return false
}

// list returns the action log.
func (q *queue) list() []ActionInfo {
	out := []ActionInfo{}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, e := range q.mq.List() {
		out = append(out, ActionInfo{ID: e.ID, Type: string(e.Type), State: string(e.State), Account: e.Gatekeeper, Resource: e.Resource,
			Caller: e.Caller, Title: e.Title, Description: e.Description, Kind: e.Kind.Tag, AutoApproved: q.auto[e.ID], Result: e.Result})
	}
	return out
}

// callerOf names who caused an entry: the session's caller, or the gatekeeper itself for work
// outside a session (applying an action).
func callerOf(o gatekeeper.Origin) string {
	if o.Caller != "" {
		return o.Caller
	}
	return "gatekeeper:" + o.Gatekeeper
}

// Observe implements gatekeeper.Queue: the read is refused unless its audit line is durable.
func (q *queue) Observe(ctx context.Context, o gatekeeper.ObservationRecord) error {
	if err := q.ov.auditAs(ctx, callerOf(o.Origin), "gatekeeper.observe", o.Resource, o.Title); err != nil {
		return fmt.Errorf("record observation: %w", err)
	}
	if err := q.mq.Observe(ctx, o); err != nil {
		return err
	}
	q.changed()
	return nil
}

// Submit implements gatekeeper.Queue.
func (q *queue) Submit(ctx context.Context, a gatekeeper.ActionRecord) (uint64, error) {
	id, err := q.mq.Submit(ctx, a)
	if err != nil {
		return 0, err
	}
	if err := q.ov.auditAs(ctx, callerOf(a.Origin), "gatekeeper.submit", a.Resource, fmt.Sprintf("#%d %s: %s", id, a.Kind.Tag, a.Title)); err != nil {
		return 0, fmt.Errorf("record action: %w", err)
	}
	q.changed()
	return id, nil
}

// Drain implements gatekeeper.Queue: it applies, in order, the account's pending actions
// that a rule covers, up to the first that needs a person. gk is the account's ID.
func (q *queue) Drain(ctx context.Context, gk string) error {
	defer q.changed()
	acct, err := q.ov.k.st.Account(ctx, gk)
	if err != nil {
		return nil // a disconnected account approves nothing by itself
	}
	for _, e := range q.mq.List() {
		if e.Gatekeeper != gk || e.Type != gatekeeper.Acted || e.State != gatekeeper.Pending {
			continue
		}
		q.mu.Lock()
		covered := e.AutoApprovable && q.rules[ruleKey{acct.Owner, acct.Gatekeeper, e.Kind.Tag}]
		if covered {
			q.auto[e.ID] = true
		}
		q.mu.Unlock()
		if !covered {
			return nil
		}
		if err := q.mq.Approve(ctx, e.ID); err != nil {
			return fmt.Errorf("auto-approve action %d: %w", e.ID, err)
		}
	}
	return nil
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
		out = ov.queue.list()
		return nil
	})
	return out, err
}

// SubscribeActions calls cb({actions}) with the whole action log after every change to it.
func (w *Workspace) SubscribeActions(ctx context.Context, cb *capnweb.Stub) (*Subscription, error) {
	return w.subscribe(ctx, store.RoleUse, "subscribeActions", actionsTopic(w.id), store.Gadget{}, cb)
}

// ApproveAction applies pending action id through its gatekeeper. Only the owner of the
// account the action would act with decides.
func (w *Workspace) ApproveAction(ctx context.Context, id uint64) error {
	return w.decide(ctx, "approveAction", id, func(ov *overseer) error { return ov.queue.mq.Approve(ctx, id) })
}

// RejectAction drops pending action id; the gatekeeper is told, the service is left as is.
func (w *Workspace) RejectAction(ctx context.Context, id uint64) error {
	return w.decide(ctx, "rejectAction", id, func(ov *overseer) error { return ov.queue.mq.Reject(ctx, id) })
}

// decide runs a decision on action id once the caller is found to own its account, and
// writes it to the audit log.
func (w *Workspace) decide(ctx context.Context, what string, id uint64, fn func(ov *overseer) error) error {
	if w.p.agent != nil {
		return fail(CodeForbidden, "%s: agents may not decide actions", what)
	}
	return w.enter(ctx, store.RoleUse, what, func(ov *overseer) error {
		var account string
		for _, e := range ov.queue.mq.List() {
			if e.ID == id && e.Type == gatekeeper.Acted {
				account = e.Gatekeeper
			}
		}
		acct, err := w.k.st.Account(ctx, account)
		if account == "" || err != nil || acct.Owner != w.p.userID {
			return fail(CodeNotFound, "%s: no action %d of yours is in this workspace", what, id)
		}
		err = fn(ov)
		if err == nil {
			err = ov.queue.Drain(ctx, account) // auto-approved actions waiting behind it
		}
		ov.queue.changed()
		if err != nil {
			return &Error{Code: CodeFailedPrecondition, Msg: fmt.Sprintf("%s %d: %v", what, id, err), Err: err}
		}
		return ov.audit(ctx, w.p, "gatekeeper."+what, acct.Resource, fmt.Sprintf("#%d", id))
	})
}

// SetAutoApprove adds (enabled) or withdraws the rule "apply actions of kind from my accounts
// on gatekeeperId without asking" in this workspace. It covers only actions the gatekeeper
// marked auto-approvable, and only kinds the manifest lists in autoApprovable
// (INVALID_ARGUMENT otherwise). Enabling it applies the covered actions already waiting.
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
		q := ov.queue
		q.mu.Lock()
		if enabled {
			q.rules[ruleKey{w.p.userID, gatekeeperID, kind}] = true
		} else {
			delete(q.rules, ruleKey{w.p.userID, gatekeeperID, kind})
		}
		q.mu.Unlock()
		if err := ov.audit(ctx, w.p, "gatekeeper.setAutoApprove", gatekeeperID, fmt.Sprintf("%s=%v", kind, enabled)); err != nil {
			return err
		}
		for _, a := range accts {
			if a.Gatekeeper == gatekeeperID && enabled {
				if err := q.Drain(ctx, a.ID); err != nil {
					return wrapErr(err, "setAutoApprove")
				}
			}
		}
		return nil
	})
}
