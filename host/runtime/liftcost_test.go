package runtime_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	goruntime "runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// procStatus returns the process's VmRSS and VmHWM (peak RSS) in bytes.
func procStatus(tb testing.TB) (rss, hwm int64) {
	tb.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		tb.Skipf("no /proc/self/status: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || k != "VmRSS" && k != "VmHWM" {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			tb.Fatalf("%s: %v", k, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm
}

// peakDuring returns how far the process's peak RSS rose above its RSS while f ran.
func peakDuring(tb testing.TB, f func()) int64 {
	tb.Helper()
	goruntime.GC()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		tb.Skipf("cannot reset the peak RSS: %v", err)
	}
	rss, _ := procStatus(tb)
	f()
	_, hwm := procStatus(tb)
	return hwm - rss
}

// resultTypes returns the result types of the component's top-level exported functions.
func resultTypes(comp *runtime.Component) map[string]*wit.Type {
	ts := make(map[string]*wit.Type)
	for _, it := range comp.Audit().Exports {
		if it.Kind == wit.ItemFunc {
			ts[it.Name] = it.Func.Result
		}
	}
	return ts
}

// TestLiftCost measures what Wasmtime's C API allocates while it lifts results of millions of
// values (the process's peak RSS during the call, less the guest memory the call grows) and
// checks that wit.LiftFactor of each result type is no less, per byte of guest memory (a
// string, which it leaves out, at most 2). The
// result is refused by a MaxResult of 1 right after Wasmtime's copy, so nothing of the Go side
// is counted. Run with -v for the numbers (RATIONALE.md, "Lifting a result").
func TestLiftCost(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates about 2 GB")
	}
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	comp := compileFile(t, rt, "testdata/bigresult.wat")
	types := resultTypes(comp)
	ctx := context.Background()
	for _, c := range []struct {
		fn    string
		n     int
		guest int // bytes per element
	}{{"bools", 8 << 20, 1}, {"bytes", 8 << 20, 1}, {"u32s", 4 << 20, 4}, {"points", 2 << 20, 12}, {"text", 64 << 20, 1}} {
		in, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Name: "big", Limits: runtime.Limits{MaxResult: 1, MaxMemory: 1 << 30, MaxLiftBytes: 1 << 40}})
		if err != nil {
			t.Fatal(err)
		}
		var res any
		peak := peakDuring(t, func() { res, err = in.Call(ctx, c.fn, c.n) })
		in.Close()
		if !errors.Is(err, runtime.ErrResultTooLarge) {
			t.Fatalf("%s = %T, %v; want ErrResultTooLarge", c.fn, res, err)
		}
		guest := int64(c.n * c.guest)
		host := peak - guest
		perByte := float64(host) / float64(guest)
		t.Logf("%s(%d): %s: %d bytes while lifting, %.1f per element, %.2f per guest byte", c.fn, c.n, types[c.fn], host, float64(host)/float64(c.n), perByte)
		f := wit.LiftFactor(types[c.fn])
		if types[c.fn].Kind == wit.String {
			f = 2 // not counted by LiftFactor, whose comment says 2 bytes per byte
		}
		if perByte > float64(f) {
			t.Errorf("%s: lifting cost %.2f bytes per guest byte, more than the %d counted", types[c.fn], perByte, f)
		}
	}
}

// TestLiftBound: a call whose result holds a list gets a memory budget of at most
// Limits.MaxLiftBytes over the result's lift factor. An instance that already holds more is
// refused the call up front with a *LiftBoundError and lives on; a fresh one cannot grow its
// memory to build a larger list. The account is told the factor and the lowered budget.
func TestLiftBound(t *testing.T) {
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	comp := compileFile(t, rt, "testdata/bigresult.wat")
	ctx := context.Background()
	const bound = 1 << 30
	lift := wit.LiftFactor(resultTypes(comp)["bools"])
	acc := &memoryRecorder{allow: 1 << 40}
	in, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Name: "big", Account: acc, Limits: runtime.Limits{MaxLiftBytes: bound, MaxResult: 1 << 30}})
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	if _, err := in.Call(ctx, "text", 64<<20); err != nil { // a string is not bounded
		t.Fatalf("text(64 Mi): %v", err)
	}
	_, err = in.Call(ctx, "bools", 10)
	var le *runtime.LiftBoundError
	if !errors.Is(err, runtime.ErrLiftBound) || !errors.As(err, &le) || le.Factor != lift || le.Held < 64<<20 || le.Held > 65<<20 {
		t.Fatalf("bools(10) holding 64 MiB = %v; want a *LiftBoundError", err)
	}
	for _, s := range []string{"call bools: its result type list<bool> may cost the host up to 80 × its memory", "over the lift bound of 13 MB (1024 MiB / 80); return less per call"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if n, err := in.Call(ctx, "count"); err != nil || n != uint32(1) {
		t.Fatalf("count after the refusal = %v, %v; want 1 (the instance lives on)", n, err)
	}
	// What the account got: instantiation, text, count (bools was refused before it).
	wantLift := []int64{0, 0, 0}
	wantBudget := []int64{runtime.DefaultMaxMemory, runtime.DefaultMaxMemory, runtime.DefaultMaxMemory}
	if !slices.Equal(acc.lift, wantLift) || !slices.Equal(acc.budget, wantBudget) {
		t.Errorf("Acquire got lift factors %v and budgets %v, want %v and %v", acc.lift, acc.budget, wantLift, wantBudget)
	}

	fresh, err := rt.Instantiate(ctx, comp, runtime.InstanceConfig{Name: "fresh", Account: acc, Limits: runtime.Limits{MaxLiftBytes: bound}})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if res, err := fresh.Call(ctx, "bools", 1<<20); err != nil || len(res.([]bool)) != 1<<20 {
		t.Fatalf("bools(1 Mi) within the lift bound: %v", err)
	}
	if got, want := acc.budget[len(acc.budget)-1], runtime.TableReserve(runtime.DefaultMaxMemory)+bound/lift; got != want {
		t.Errorf("Acquire got budget %d for bools, want %d (the tables' reserve and the lift bound)", got, want)
	}
	_, err = fresh.Call(ctx, "bools", 32<<20)
	if !errors.Is(err, runtime.ErrMemory) || !strings.Contains(err.Error(), "a call returning list<bool> may hold at most 13 MB in its memories (Limits.MaxLiftBytes / 80") {
		t.Fatalf("bools(32 Mi) past the lift bound = %v; want ErrMemory naming the lift bound (the guest cannot grow)", err)
	}
}
