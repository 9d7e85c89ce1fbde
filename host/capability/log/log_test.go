package log_test

import (
	"context"
	"strings"
	"testing"

	"atelier/host/capability/internal/testguest"
	"atelier/host/runtime"
)

func TestWrite(t *testing.T) {
	var lines []runtime.ConsoleLine
	inst := testguest.Start(t, runtime.InstanceConfig{Name: "g", Console: func(l runtime.ConsoleLine) { lines = append(lines, l) }})
	ctx := context.Background()
	if _, err := inst.Call(ctx, "log-write", "warn", "careful"); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("x", runtime.MaxConsoleLine+10)
	if _, err := inst.Call(ctx, "log-write", "debug", long); err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Call(ctx, "log-write", "loud", "x"); err == nil {
		t.Fatal("a level outside the enum was accepted")
	}
	want := []runtime.ConsoleLine{
		{Instance: "g", Stream: "log", Level: "warn", Text: "careful"},
		{Instance: "g", Stream: "log", Level: "debug", Text: long[:runtime.MaxConsoleLine]},
		{Instance: "g", Stream: "log", Level: "debug", Text: "x" + strings.Repeat("x", 9)},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d", len(lines), len(want))
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: got %+v, want %+v", i, lines[i], want[i])
		}
	}
}
