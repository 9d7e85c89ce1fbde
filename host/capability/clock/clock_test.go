package clock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"atelier/host/capability/clock"
	"atelier/host/capability/internal/testguest"
	"atelier/host/runtime"
)

func TestNow(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	inst := testguest.Start(t, runtime.InstanceConfig{}, clock.New(func() time.Time { return at }))
	got, err := inst.Call(context.Background(), "clock-now-ms")
	if err != nil {
		t.Fatal(err)
	}
	if got != uint64(at.UnixMilli()) {
		t.Fatalf("now-ms = %v, want %d", got, at.UnixMilli())
	}
}

// TestUngranted: without the clock grant the guest (which imports it) does not start.
func TestUngranted(t *testing.T) {
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var grants []string
	for _, g := range testguest.Grants() {
		if g != clock.Grant {
			grants = append(grants, g)
		}
	}
	comp, err := rt.Compile(context.Background(), testguest.Source())
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	err = comp.Audit().Check(rt, grants)
	var ue *runtime.UngrantedImportError
	if !errors.As(err, &ue) || ue.Grant != clock.Grant {
		t.Fatalf("got %v, want the clock import refused", err)
	}
}
