package runtime_test

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"atelier/host/runtime"
)

// TestParallel runs 2*GOMAXPROCS goroutines, each with its own instance, plus goroutines that
// share one instance, plus one that keeps trapping; nothing may interfere.
func TestParallel(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	shared := f.instance(t, runtime.InstanceConfig{})
	n := 2 * goruntime.GOMAXPROCS(0)
	const calls = 50
	var wg sync.WaitGroup
	errs := make(chan error, 3*n)
	for g := range n {
		wg.Add(2)
		go func() {
			defer wg.Done()
			inst, err := f.rt.Instantiate(context.Background(), f.echo, runtime.InstanceConfig{Grants: echoGrants, Name: fmt.Sprint(g)})
			if err != nil {
				errs <- err
				return
			}
			defer inst.Close()
			for i := range calls {
				s := fmt.Sprintf("g%d-%d", g, i)
				got, err := inst.Call(context.Background(), "echo-string", s)
				if err != nil || got != s {
					errs <- fmt.Errorf("own instance: %v, %v", got, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := range calls {
				got, err := shared.Call(context.Background(), "add", g, i)
				if err != nil || got != uint32(g+i) {
					errs <- fmt.Errorf("shared instance: %v, %v", got, err)
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		slot := f.rt.NewSlot(f.echo, runtime.InstanceConfig{Grants: echoGrants, Limits: runtime.Limits{Timeout: 20 * time.Millisecond}})
		defer slot.Close()
		for range 5 {
			if _, err := slot.Call(context.Background(), "spin"); !errors.Is(err, runtime.ErrDeadline) {
				errs <- fmt.Errorf("spinning slot: %v", err)
			}
			if _, err := slot.Call(context.Background(), "boom"); !errors.Is(err, runtime.ErrTrap) {
				errs <- fmt.Errorf("trapping slot: %v", err)
			}
		}
	}()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestPooling runs instances on the pooling allocator, including more at once than it has
// slots: the extra one is refused, and a slot is reused once an instance closes.
func TestPooling(t *testing.T) {
	f := newFixture(t, runtime.Config{Pooling: &runtime.Pooling{Instances: 2, MaxMemory: 8 << 20}})
	a := f.instance(t, runtime.InstanceConfig{})
	b := f.instance(t, runtime.InstanceConfig{})
	if _, err := f.rt.Instantiate(context.Background(), f.echo, runtime.InstanceConfig{Grants: echoGrants}); err == nil {
		t.Fatal("a third instance fit in a pool of two")
	}
	healthy(t, a)
	a.Close()
	c := f.instance(t, runtime.InstanceConfig{})
	healthy(t, b)
	healthy(t, c)
}
