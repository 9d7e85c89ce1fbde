package runtime_test

import (
	"context"
	"errors"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// resourceInstance instantiates testdata/resource.wat, which exports the resource `counter`.
func resourceInstance(t *testing.T, f *fixture, comp *runtime.Component) *runtime.Instance {
	t.Helper()
	inst, err := f.rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	return inst
}

// call calls fn and wants the result want.
func call(t *testing.T, inst *runtime.Instance, want any, fn string, args ...any) any {
	t.Helper()
	got, err := inst.Call(context.Background(), fn, args...)
	if err != nil {
		t.Fatalf("%s%v: %v", fn, args, err)
	}
	if want != nil && got != want {
		t.Fatalf("%s%v = %#v, want %#v", fn, args, got, want)
	}
	return got
}

// refused wants fn to fail with ErrUnknownHandle and leave the instance usable.
func refused(t *testing.T, inst *runtime.Instance, fn string, args ...any) {
	t.Helper()
	if _, err := inst.Call(context.Background(), fn, args...); !errors.Is(err, runtime.ErrUnknownHandle) {
		t.Fatalf("%s%v: got %v, want ErrUnknownHandle", fn, args, err)
	}
	if err := inst.Retired(); err != nil {
		t.Fatalf("%s%v retired the instance: %v", fn, args, err)
	}
}

func TestResources(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	comp := compileFile(t, f.rt, "testdata/resource.wat")
	inst := resourceInstance(t, f, comp)
	ctx := context.Background()

	h, ok := call(t, inst, nil, "[constructor]counter", 5).(wit.Handle)
	if !ok {
		t.Fatal("the constructor did not return a wit.Handle")
	}
	// A borrow leaves the handle with the caller.
	call(t, inst, uint32(5), "[method]counter.get", h)
	call(t, inst, uint32(5), "[method]counter.get", h)

	// An own moves into the guest, which drops it; the handle is then unknown.
	made := call(t, inst, nil, "[static]counter.make", 3).(wit.Handle)
	if made == h {
		t.Fatal("two resources share a handle")
	}
	call(t, inst, uint32(30), "[method]counter.get", made)
	call(t, inst, uint32(30), "consume", made)
	call(t, inst, uint32(1), "dropped")
	refused(t, inst, "consume", made)
	refused(t, inst, "[method]counter.get", made)
	if err := inst.DropResource(ctx, made); !errors.Is(err, runtime.ErrUnknownHandle) {
		t.Fatalf("DropResource of a moved handle: %v", err)
	}

	// DropResource runs the destructor; the handle is unknown afterwards.
	if err := inst.DropResource(ctx, h); err != nil {
		t.Fatal(err)
	}
	call(t, inst, uint32(2), "dropped")
	refused(t, inst, "[method]counter.get", h)
	if err := inst.DropResource(ctx, h); !errors.Is(err, runtime.ErrUnknownHandle) {
		t.Fatalf("second DropResource: %v", err)
	}
	refused(t, inst, "[method]counter.get", wit.Handle(0))

	// Values that are not handles are refused by the type check.
	var ve *wit.ValueError
	if _, err := inst.Call(ctx, "[method]counter.get", uint32(h)); !errors.As(err, &ve) {
		t.Errorf("a number as handle: got %v, want a *wit.ValueError", err)
	}
	inst.Close()
	if err := inst.DropResource(ctx, h); !errors.Is(err, runtime.ErrClosed) {
		t.Errorf("DropResource on a closed instance: %v", err)
	}
}

// TestResourceHandlesStayInTheirInstance: a handle is meaningless to every other instance,
// even of the same component, and cannot reach the resource it names there.
func TestResourceHandlesStayInTheirInstance(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	comp := compileFile(t, f.rt, "testdata/resource.wat")
	a, b := resourceInstance(t, f, comp), resourceInstance(t, f, comp)
	ha := call(t, a, nil, "[constructor]counter", 7).(wit.Handle)
	hb := call(t, b, nil, "[constructor]counter", 8).(wit.Handle)
	refused(t, b, "[method]counter.get", ha)
	refused(t, b, "consume", ha)
	if err := b.DropResource(context.Background(), ha); !errors.Is(err, runtime.ErrUnknownHandle) {
		t.Fatalf("DropResource of another instance's handle: %v", err)
	}
	refused(t, a, "[method]counter.get", hb)
	call(t, a, uint32(7), "[method]counter.get", ha)
	call(t, b, uint32(8), "[method]counter.get", hb)
	call(t, b, uint32(0), "dropped")
}
