package store

import (
	"errors"
	"path/filepath"
	"testing"
	"time"
)

func TestSchedulesAreIndexedAndSurviveReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db := open(t, path)
	ws, _ := workspace(t, db)
	other, _ := workspace(t, db)
	t0 := time.Unix(1_800_000_000, 0)
	a := Schedule{ID: "sch_a", Gadget: "g1", Method: "increment", EveryMs: 1000, Next: t0, Creator: "u1"}
	b := Schedule{ID: "sch_b", Gadget: "g1", Method: "increment", Next: t0.Add(time.Hour), Creator: "u1"}
	if err := ws.Commit(ctx, []Mutation{PutSchedule(a), PutSchedule(b)}); err != nil {
		t.Fatal(err)
	}
	if err := other.Commit(ctx, []Mutation{PutSchedule(Schedule{ID: "sch_c", Gadget: "g2", Next: t0, Creator: "u1"})}); err != nil {
		t.Fatal(err)
	}
	// Malformed schedule mutations are refused whole.
	for _, bad := range []Mutation{PutSchedule(Schedule{ID: "x", Gadget: "g1"}), PutSchedule(Schedule{Gadget: "g1", Next: t0}), DeleteSchedule("a\x00b")} {
		if err := ws.Commit(ctx, []Mutation{DeleteSchedule("sch_a"), bad}); err == nil {
			t.Fatalf("malformed mutation %+v was committed", bad)
		}
	}
	due, err := db.DueSchedules(ctx, t0)
	if err != nil || len(due) != 2 {
		t.Fatalf("due at t0: %+v %v", due, err)
	}
	for _, d := range due {
		if !d.Next.Equal(t0) || (d.Schedule != "sch_a" && d.Schedule != "sch_c") {
			t.Fatalf("due entry %+v", d)
		}
	}
	w, _ := ws.Workspace()
	db.Close()

	db = open(t, path)
	l, err := db.Acquire(ctx, w.ID)
	if err != nil {
		t.Fatal(err)
	}
	if ws, err = db.Open(ctx, w.ID, l); err != nil {
		t.Fatal(err)
	}
	got, err := ws.Schedules()
	if err != nil || len(got) != 2 || got[0].ID != "sch_a" || got[0].EveryMs != 1000 || got[1].ID != "sch_b" {
		t.Fatalf("schedules after reopen: %+v %v", got, err)
	}
	// Rescheduling moves the index entry; cancelling and deleting the workspace drop it.
	a.Next = t0.Add(2 * time.Hour)
	if err := ws.Commit(ctx, []Mutation{PutSchedule(a), DeleteSchedule("sch_b")}); err != nil {
		t.Fatal(err)
	}
	if due, err := db.DueSchedules(ctx, t0.Add(3*time.Hour)); err != nil || len(due) != 2 {
		t.Fatalf("due after reschedule: %+v %v", due, err)
	}
	if err := ws.Commit(ctx, []Mutation{DeleteWorkspace()}); err != nil {
		t.Fatal(err)
	}
	due, err = db.DueSchedules(ctx, t0.Add(3*time.Hour))
	if err != nil || len(due) != 1 || due[0].Schedule != "sch_c" {
		t.Fatalf("due after deleting the workspace: %+v %v", due, err)
	}
	if _, err := ws.Schedules(); !errors.Is(err, ErrNotFound) {
		t.Fatalf("schedules of a deleted workspace: %v", err)
	}
}
