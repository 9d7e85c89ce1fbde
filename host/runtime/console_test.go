package runtime_test

import (
	"context"
	"slices"
	"testing"

	"atelier/host/runtime"
)

// TestConsole: a guest's WASI stdout and stderr reach the console as lines; the unterminated
// last line arrives when the instance closes.
func TestConsole(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	comp := compileFile(t, f.rt, "testdata/stdio.wat")
	if err := comp.Audit().Check(f.rt, []string{"wasi:cli/stdout", "wasi:io/streams", "wasi:io/error"}); err == nil {
		t.Fatal("stderr import accepted without its grant")
	}
	var lines []runtime.ConsoleLine
	inst, err := f.rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{
		Name:    "stdio",
		Grants:  runtime.WASIBaseline(),
		Console: func(l runtime.ConsoleLine) { lines = append(lines, l) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := inst.Call(context.Background(), "run"); err != nil {
		t.Fatal(err)
	}
	inst.Close()
	want := []runtime.ConsoleLine{
		{Instance: "stdio", Stream: "stdout", Text: "out1"},
		{Instance: "stdio", Stream: "stdout", Text: "out2"},
		{Instance: "stdio", Stream: "stderr", Text: "err!"},
		{Instance: "stdio", Stream: "stdout", Text: "partial"},
	}
	if !slices.Equal(lines, want) {
		t.Fatalf("console got %+v, want %+v", lines, want)
	}
}
