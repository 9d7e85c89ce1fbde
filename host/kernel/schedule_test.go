package kernel_test

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

// fastSchedules lets schedules run every few milliseconds.
func fastSchedules(c *kernel.Config) {
	c.ScheduleMinEvery = 20 * time.Millisecond
	c.ScheduleTick = 5 * time.Millisecond
}

// eventually polls cond until it holds, failing after 20 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
	}
}

// count returns the counter's value.
func count(t *testing.T, app *capnweb.Promise) float64 {
	t.Helper()
	return await(t, app.Call(ctx, "get")).(float64)
}

func schedules(t *testing.T, ws *capnweb.Promise) []any {
	t.Helper()
	return await(t, ws.Call(ctx, "listSchedules")).([]any)
}

// audited reports whether the audit log has an entry with action and a detail containing detail.
func audited(t *testing.T, ws *capnweb.Promise, action, detail string) bool {
	t.Helper()
	for _, e := range await(t, ws.Call(ctx, "auditLog", 1000)).([]any) {
		m := e.(map[string]any)
		if m["action"] == action && strings.Contains(m["detail"].(string), detail) {
			return true
		}
	}
	return false
}

func TestScheduleRunsCancelsAndSurvivesRestart(t *testing.T) {
	data := filepath.Join(t.TempDir(), "a.db")
	s := startServer(t, data, fastSchedules)
	ws, wsID, app := home(t, s.user(t, "ada")) // counter at 1

	for _, bad := range []map[string]any{{}, {"everyMs": 5}, {"everyMs": -1}, {"at": "tomorrow"}, {"everyMs": 100, "at": "2030-01-01T00:00:00Z"}} {
		refused(t, ws.Call(ctx, "schedule", "counter", "increment", []any{1}, bad), "INVALID_ARGUMENT", "schedule")
	}
	refused(t, ws.Call(ctx, "schedule", "counter", "increment", []any{}, map[string]any{"everyMs": 100}), "INVALID_ARGUMENT", "increment takes 1 argument")
	refused(t, ws.Call(ctx, "schedule", "counter", "nope", []any{}, map[string]any{"everyMs": 100}), "NOT_FOUND", "no exported function")
	refused(t, ws.Call(ctx, "schedule", "ghost", "increment", []any{1}, map[string]any{"everyMs": 100}), "NOT_FOUND", "ghost")

	// A one-shot runs once and is gone.
	at := time.Now().Add(30 * time.Millisecond).UTC().Format(time.RFC3339Nano)
	await(t, ws.Call(ctx, "schedule", "counter", "increment", []any{100}, map[string]any{"at": at}))
	eventually(t, "the one-shot ran", func() bool { return count(t, app) == 101 })
	eventually(t, "the one-shot is gone", func() bool { return len(schedules(t, ws)) == 0 })

	// A periodic schedule runs repeatedly, recorded in the audit log.
	res := await(t, ws.Call(ctx, "schedule", "counter", "increment", []any{1}, map[string]any{"everyMs": 20})).(map[string]any)
	id := res["id"].(string)
	eventually(t, "the schedule ran 3 times", func() bool { return count(t, app) >= 104 })
	if !audited(t, ws, "schedule.run", "increment: ok") || !audited(t, ws, "schedule.create", id) {
		t.Fatal("schedule runs are not in the audit log")
	}
	list := schedules(t, ws)
	if len(list) != 1 || list[0].(map[string]any)["gadget"] != "counter" || list[0].(map[string]any)["creator"] != "ada" {
		t.Fatalf("listSchedules = %v", list)
	}
	s.stop()

	// After a restart the scheduler opens the workspace by itself and keeps running.
	s = startServer(t, data, fastSchedules)
	eventually(t, "the scheduler opened the workspace", func() bool { return s.k.Stats().Workspaces == 1 })
	root := s.dial(t)
	tok := await(t, root.Call(ctx, "login", "ada", "password-ada")).(string)
	ws = root.Call(ctx, "authenticate", tok).Call(ctx, "openWorkspace", wsID)
	app = ws.Call(ctx, "gadget", "counter").Call(ctx, "connect")
	before := count(t, app)
	eventually(t, "the schedule ran after the restart", func() bool { return count(t, app) >= before+2 })

	// Cancelling stops it: once cancelled, no run starts, so the count settles.
	await(t, ws.Call(ctx, "cancelSchedule", id))
	refused(t, ws.Call(ctx, "cancelSchedule", id), "NOT_FOUND", id)
	if len(schedules(t, ws)) != 0 {
		t.Fatal("a cancelled schedule is listed")
	}
	settled := count(t, app) // a run that began before the cancel has committed by now or is dropped
	time.Sleep(150 * time.Millisecond)
	if got := count(t, app); got > settled+1 {
		t.Fatalf("a cancelled schedule kept running: %v after %v", got, settled)
	}
}

func TestScheduleOfARemovedCollaboratorIsCancelled(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), fastSchedules)
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws, wsID, app := home(t, ada)
	await(t, ws.Call(ctx, "addCollaborator", "bob", "use"))
	bws := bob.Call(ctx, "openWorkspace", wsID)
	refused(t, bws.Call(ctx, "schedule", "counter", "increment", []any{1}, map[string]any{"everyMs": 20}), "FORBIDDEN", "build role")

	await(t, ws.Call(ctx, "addCollaborator", "bob", "build"))
	await(t, bws.Call(ctx, "schedule", "counter", "increment", []any{1}, map[string]any{"everyMs": 20}))
	eventually(t, "bob's schedule ran", func() bool { return count(t, app) >= 3 })
	await(t, ws.Call(ctx, "removeCollaborator", "bob"))
	eventually(t, "bob's schedule was cancelled", func() bool { return len(schedules(t, ws)) == 0 })
	if !audited(t, ws, "schedule.cancel", "lost build access") {
		t.Fatal("the cancellation is not in the audit log")
	}
}

func TestAgentScheduleStaysInScopeAndFailedRunsAreRecorded(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), fastSchedules)
	ada := s.user(t, "ada")
	ws, id, app := home(t, ada)
	await(t, ws.Call(ctx, "createGadget", "other", guesttest.Bytes(t, counterGo), counterGrants))
	scope := map[string]any{"workspaces": map[string]any{id: map[string]any{"role": "build", "gadgets": []any{"counter"}}}}
	ag := await(t, ada.Call(ctx, "createAgent", "bot", scope)).(map[string]any)
	bws := s.dial(t).Call(ctx, "authenticate", ag["token"]).Call(ctx, "openWorkspace", id)
	refused(t, bws.Call(ctx, "schedule", "other", "increment", []any{1}, map[string]any{"everyMs": 20}), "FORBIDDEN", "outside its scope")

	// A run that fails is recorded and the schedule goes on.
	await(t, ws.Call(ctx, "schedule", "counter", "increment", []any{-1}, map[string]any{"everyMs": 20}))
	eventually(t, "failed runs were recorded", func() bool {
		l := schedules(t, ws)
		return len(l) == 1 && l[0].(map[string]any)["runs"].(float64) >= 2 && l[0].(map[string]any)["lastError"] != nil
	})
	await(t, ws.Call(ctx, "cancelSchedule", schedules(t, ws)[0].(map[string]any)["id"]))
	if count(t, app) != 1 {
		t.Fatal("a failing run changed the count")
	}

	// The agent's schedule runs as the agent, and ends when the agent is revoked.
	await(t, bws.Call(ctx, "schedule", "counter", "increment", []any{1}, map[string]any{"everyMs": 20}))
	eventually(t, "the agent's schedule ran", func() bool { return count(t, app) >= 3 })
	if !audited(t, ws, "schedule.run", "increment: ok") {
		t.Fatal("the agent's runs are not audited")
	}
	await(t, ada.Call(ctx, "revokeAgent", ag["id"]))
	eventually(t, "the agent's schedule was cancelled", func() bool { return len(schedules(t, ws)) == 0 })
	if !audited(t, ws, "schedule.cancel", "agent was revoked") {
		t.Fatal("the cancellation is not in the audit log")
	}
}
