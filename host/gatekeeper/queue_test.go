package gatekeeper

import (
	"context"
	"errors"
	"testing"

	"atelier/host/capability/approvals"
)

// recorder is a Target that records decisions (the real gatekeeper is exercised in
// tests/gatekeeper; this checks the queue's bookkeeping and ordering alone).
type recorder struct {
	calls []string
	fail  bool
}

func (r *recorder) ApplyAction(_ context.Context, id uint64, payload string) (string, error) {
	r.calls = append(r.calls, "apply "+payload)
	if r.fail {
		return "", errors.New("service down")
	}
	return "done " + payload, nil
}

func (r *recorder) RejectAction(_ context.Context, id uint64, payload string) error {
	r.calls = append(r.calls, "reject "+payload)
	return nil
}

func (r *recorder) RevertAction(_ context.Context, id uint64, payload string) (string, error) {
	r.calls = append(r.calls, "revert "+payload)
	return "undone", nil
}

func TestMemoryQueue(t *testing.T) {
	ctx := context.Background()
	q := NewMemoryQueue()
	r := &recorder{}
	submit := func(gk, tag string, auto, revert bool, payload string) uint64 {
		id, err := q.Submit(ctx, ActionRecord{Origin: Origin{Gatekeeper: gk}, Action: approvals.Action{
			Title: payload, Kind: approvals.ActionKind{Tag: tag}, AutoApprovable: auto, ImplementsRevert: revert, Payload: payload,
		}, Target: r})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	q.Observe(ctx, ObservationRecord{Origin: Origin{Gatekeeper: "a"}, Observation: approvals.Observation{Title: "read"}})
	manual := submit("a", "remove", false, false, "m")
	auto1 := submit("a", "add", true, true, "x")
	other := submit("b", "add", true, false, "o")
	q.AutoApprove("a", "add")
	q.AutoApprove("a", "remove") // the action is not auto-approvable: no effect
	if err := q.Drain(ctx, "a"); err != nil || len(r.calls) != 0 {
		t.Fatalf("drained past a manual gate: %v %v", r.calls, err)
	}
	if err := q.Approve(ctx, 1); err == nil {
		t.Fatal("approved an observation")
	}
	if err := q.Reject(ctx, manual); err != nil {
		t.Fatal(err)
	}
	if want := []string{"reject m", "apply x"}; len(r.calls) != 2 || r.calls[0] != want[0] || r.calls[1] != want[1] {
		t.Fatalf("calls %v, want %v", r.calls, want)
	}
	l := q.List()
	if l[auto1-1].State != Applied || !l[auto1-1].AutoApproved || l[other-1].State != Pending {
		t.Fatalf("entries %+v", l)
	}
	if err := q.Revert(ctx, auto1); err != nil || q.List()[auto1-1].State != Reverted {
		t.Fatalf("revert: %v %+v", err, q.List()[auto1-1])
	}
	if err := q.Reject(ctx, manual); err == nil {
		t.Fatal("rejected twice")
	}
	r.fail = true
	if err := q.Approve(ctx, other); err == nil || q.List()[other-1].State != Failed {
		t.Fatalf("failed apply: %v %+v", err, q.List()[other-1])
	}
	noRevert := submit("b", "x", false, false, "n")
	r.fail = false
	q.Approve(ctx, noRevert)
	if err := q.Revert(ctx, noRevert); err == nil || q.List()[noRevert-1].State != Applied {
		t.Fatal("reverted an action that does not implement revert")
	}
}
