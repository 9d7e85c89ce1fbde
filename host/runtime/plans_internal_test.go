package runtime

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"atelier/host/runtime/internal/capi"
	"github.com/bytecodealliance/wasmtime-go/v39"
)

// TestPlansShared checks that components compiled (or loaded from the cache) from the same
// source share one memory plan while any of them is open, also when compiled concurrently,
// that each instantiates with its images, and that the plan goes once the last one is closed.
func TestPlansShared(t *testing.T) {
	os.Unsetenv("RUST_BACKTRACE")
	bin, err := wasmtime.Wat2Wasm(fmt.Sprintf(`(component
  (core module $m (memory 1) (data (i32.const 8) %q))
  (core instance $i (instantiate $m)))`, strings.Repeat("x", 20<<10)))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := New(Config{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	const n = 4
	comps := make([]*Component, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			comps[i], errs[i] = rt.Compile(ctx, bin)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	users := func() int {
		rt.plans.mu.Lock()
		defer rt.plans.mu.Unlock()
		if len(rt.plans.m) > 1 {
			t.Fatalf("%d plans for one source", len(rt.plans.m))
		}
		for _, sp := range rt.plans.m {
			if sp.plan == nil {
				t.Fatal("the source got no plan")
			}
			return sp.users
		}
		return 0
	}
	if got := users(); got != n {
		t.Fatalf("the plan has %d users, want %d", got, n)
	}
	for i, comp := range comps {
		mapped := capi.ImagedMemories()
		inst, err := rt.Instantiate(ctx, comp, InstanceConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if capi.ImagedMemories() != mapped+1 {
			t.Fatalf("component %d: its memory is not mapped from the image", i)
		}
		inst.Close()
		comp.Close()
		if got := users(); got != n-1-i {
			t.Fatalf("after closing %d components the plan has %d users, want %d", i+1, got, n-1-i)
		}
	}
}
