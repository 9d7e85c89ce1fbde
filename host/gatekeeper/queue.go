package gatekeeper

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"atelier/host/capability/approvals"
)

// Origin says which gatekeeper instance, serving which caller and session, produced an
// observation or action. Caller and Session are empty for calls outside a session (an
// observation made while applying an action).
type Origin struct {
	Gatekeeper string // Account.Name
	Package    string // name@version (digest)
	Resource   string
	Caller     string
	Session    uint64
}

// ObservationRecord is a read to record in the action log.
type ObservationRecord struct {
	Origin
	approvals.Observation
}

// ActionRecord is a side effect to queue. AutoApprovable is already narrowed to the kinds the
// manifest allows. Target applies, rejects or reverts it.
type ActionRecord struct {
	Origin
	approvals.Action
	Target Target
}

// Target is the gatekeeper instance that performs an action once decided. *Instance
// implements it; a kernel that evicts instances resolves Origin.Gatekeeper to a live one.
type Target interface {
	ApplyAction(ctx context.Context, id uint64, payload string) (string, error)
	RejectAction(ctx context.Context, id uint64, payload string) error
	RevertAction(ctx context.Context, id uint64, payload string) (string, error)
}

// Queue is the user's approval queue and action log, implemented by the kernel (per
// workspace) and by MemoryQueue.
//
// Observe and Submit run inside a gatekeeper call, while its instance is busy: they must not
// call back into the gatekeeper. Drain runs after a session call that submitted actions
// returned; that is where a queue applies the gatekeeper's auto-approved actions.
type Queue interface {
	// Observe records a read; an error refuses it (the guest must not return the data).
	Observe(ctx context.Context, o ObservationRecord) error
	// Submit queues an action and returns its number.
	Submit(ctx context.Context, a ActionRecord) (uint64, error)
	// Drain applies, in number order, the pending actions of the gatekeeper that an
	// auto-approval rule covers, stopping at the first that needs a manual decision.
	Drain(ctx context.Context, gatekeeper string) error
}

// EntryType tells observations from actions.
type EntryType string

// The entry types.
const (
	Observed EntryType = "observation"
	Acted    EntryType = "action"
)

// State is where an entry stands.
type State string

// The states of entries. Observations are Recorded; actions go Pending -> Applied, Failed
// (apply returned an error), Rejected, and Applied -> Reverted.
const (
	Recorded State = "recorded"
	Pending  State = "pending"
	Applied  State = "applied"
	Failed   State = "failed"
	Rejected State = "rejected"
	Reverted State = "reverted"
)

// Entry is one line of the action log.
type Entry struct {
	ID    uint64
	Type  EntryType
	State State
	Origin
	Title, Description string
	// Action fields (zero for observations).
	Kind             approvals.ActionKind
	AutoApprovable   bool
	ImplementsRevert bool
	Payload          string
	// AutoApproved is set when a rule, not a person, approved the action.
	AutoApproved bool
	// Result is the gatekeeper's message from apply or revert, or the error.
	Result string
}

// MemoryQueue is an in-memory Queue with the decisions a user makes: List, Approve, Reject,
// Revert and per-kind auto-approval rules. It is safe for concurrent use.
type MemoryQueue struct {
	mu       sync.Mutex
	entries  []*Entry
	targets  map[uint64]Target
	rules    map[string]map[string]bool // gatekeeper -> kind tag
	deciding map[uint64]bool            // actions being applied, rejected or reverted
}

// NewMemoryQueue returns an empty queue.
func NewMemoryQueue() *MemoryQueue {
	return &MemoryQueue{targets: map[uint64]Target{}, rules: map[string]map[string]bool{}, deciding: map[uint64]bool{}}
}

// Observe records o.
func (q *MemoryQueue) Observe(_ context.Context, o ObservationRecord) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.entries = append(q.entries, &Entry{
		ID: uint64(len(q.entries)) + 1, Type: Observed, State: Recorded, Origin: o.Origin,
		Title: o.Title, Description: o.Description,
	})
	return nil
}

// Submit queues a as pending.
func (q *MemoryQueue) Submit(_ context.Context, a ActionRecord) (uint64, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e := &Entry{
		ID: uint64(len(q.entries)) + 1, Type: Acted, State: Pending, Origin: a.Origin,
		Title: a.Title, Description: a.Description, Kind: a.Kind,
		AutoApprovable: a.AutoApprovable, ImplementsRevert: a.ImplementsRevert, Payload: a.Payload,
	}
	q.entries = append(q.entries, e)
	q.targets[e.ID] = a.Target
	return e.ID, nil
}

// List returns copies of all entries in order.
func (q *MemoryQueue) List() []Entry {
	q.mu.Lock()
	defer q.mu.Unlock()
	out := make([]Entry, len(q.entries))
	for i, e := range q.entries {
		out[i] = *e
	}
	return out
}

// AutoApprove adds the rule "approve actions of kind tag from gatekeeper without asking". It
// covers only actions whose gatekeeper marked them auto-approvable (and whose manifest allows
// it). Call Drain to apply what the rule now covers.
func (q *MemoryQueue) AutoApprove(gatekeeper, tag string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.rules[gatekeeper] == nil {
		q.rules[gatekeeper] = map[string]bool{}
	}
	q.rules[gatekeeper][tag] = true
}

// take marks pending action id as being decided and returns it and its target.
func (q *MemoryQueue) take(id uint64, want State) (*Entry, Target, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if id == 0 || id > uint64(len(q.entries)) {
		return nil, nil, fmt.Errorf("no entry %d", id)
	}
	e := q.entries[id-1]
	switch {
	case e.Type != Acted:
		return nil, nil, fmt.Errorf("entry %d is an observation", id)
	case q.deciding[id]:
		return nil, nil, fmt.Errorf("action %d is being decided", id)
	case e.State != want:
		return nil, nil, fmt.Errorf("action %d is %s, not %s", id, e.State, want)
	}
	q.deciding[id] = true
	return e, q.targets[id], nil
}

// settle records the outcome of a decision on e.
func (q *MemoryQueue) settle(e *Entry, state State, result string, auto bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	e.State, e.Result, e.AutoApproved = state, result, e.AutoApproved || auto
	delete(q.deciding, e.ID)
}

func (q *MemoryQueue) apply(ctx context.Context, id uint64, auto bool) error {
	e, t, err := q.take(id, Pending)
	if err != nil {
		return err
	}
	msg, err := t.ApplyAction(ctx, id, e.Payload)
	if err != nil {
		q.settle(e, Failed, err.Error(), auto)
		return fmt.Errorf("apply action %d: %w", id, err)
	}
	q.settle(e, Applied, msg, auto)
	return nil
}

// Approve applies pending action id through its gatekeeper, then drains that gatekeeper's
// auto-approved actions that were waiting behind it.
func (q *MemoryQueue) Approve(ctx context.Context, id uint64) error {
	if err := q.apply(ctx, id, false); err != nil {
		return err
	}
	return q.Drain(ctx, q.gatekeeperOf(id))
}

// Reject rejects pending action id and tells its gatekeeper, then drains as Approve does.
func (q *MemoryQueue) Reject(ctx context.Context, id uint64) error {
	e, t, err := q.take(id, Pending)
	if err != nil {
		return err
	}
	err = t.RejectAction(ctx, id, e.Payload)
	q.settle(e, Rejected, "", false)
	if err != nil {
		return fmt.Errorf("reject action %d: %w", id, err)
	}
	return q.Drain(ctx, e.Gatekeeper)
}

// Revert undoes applied action id, when its gatekeeper said it can.
func (q *MemoryQueue) Revert(ctx context.Context, id uint64) error {
	e, t, err := q.take(id, Applied)
	if err != nil {
		return err
	}
	if !e.ImplementsRevert {
		q.settle(e, Applied, e.Result, false)
		return fmt.Errorf("action %d cannot be reverted", id)
	}
	msg, err := t.RevertAction(ctx, id, e.Payload)
	if err != nil {
		q.settle(e, Applied, e.Result, false)
		return fmt.Errorf("revert action %d: %w", id, err)
	}
	q.settle(e, Reverted, msg, false)
	return nil
}

func (q *MemoryQueue) gatekeeperOf(id uint64) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.entries[id-1].Gatekeeper
}

// Drain applies the gatekeeper's pending actions covered by an auto-approval rule, in number
// order, stopping at the first pending action that needs a person.
func (q *MemoryQueue) Drain(ctx context.Context, gatekeeper string) error {
	for {
		id, ok := q.nextAuto(gatekeeper)
		if !ok {
			return nil
		}
		if err := q.apply(ctx, id, true); err != nil {
			return err
		}
	}
}

// nextAuto returns the gatekeeper's first pending action if a rule covers it.
func (q *MemoryQueue) nextAuto(gatekeeper string) (uint64, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	i := slices.IndexFunc(q.entries, func(e *Entry) bool {
		return e.Type == Acted && e.Gatekeeper == gatekeeper && e.State == Pending
	})
	if i < 0 {
		return 0, false
	}
	e := q.entries[i]
	if q.deciding[e.ID] || !e.AutoApprovable || !q.rules[gatekeeper][e.Kind.Tag] {
		return 0, false
	}
	return e.ID, true
}
