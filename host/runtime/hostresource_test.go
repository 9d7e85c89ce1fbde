package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// filesHost implements test:res/files (testdata/hostresource.wat): a file holds a number.
// Every Drop is recorded as "instance:type/rep=n".
type filesHost struct {
	mu    sync.Mutex
	drops []string
	kept  []runtime.Resource // what `keep` was given
	// evil, when set, is what [static]file.evil returns.
	evil func(call *runtime.HostCall) (any, error)
	// dropErr, when set, is what Drop returns.
	dropErr error
}

type fileState struct{ n uint32 }

func (h *filesHost) record(call *runtime.HostCall, r runtime.Resource) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := uint32(0)
	if f, ok := r.Value.(*fileState); ok {
		n = f.n
	}
	h.drops = append(h.drops, fmt.Sprintf("%s:%s/%d=%d", call.InstanceName(), r.Type, r.Rep, n))
	if !r.Own {
		return errors.New("Drop got a borrow")
	}
	return h.dropErr
}

func (h *filesHost) dropped() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.drops...)
}

// file returns the state of a Resource argument, which must be an own or a borrow as wanted.
func file(arg any, own bool) (*fileState, runtime.Resource, error) {
	r, ok := arg.(runtime.Resource)
	switch {
	case !ok:
		return nil, r, fmt.Errorf("got %T, want a runtime.Resource", arg)
	case r.Own != own || r.Type != "file":
		return nil, r, fmt.Errorf("got %+v, want a file with Own=%t", r, own)
	}
	return r.Value.(*fileState), r, nil
}

func newFile(call *runtime.HostCall, n uint32) (any, error) {
	return call.NewResource("file", &fileState{n: n})
}

func (h *filesHost) iface() runtime.HostInterface {
	fn := func(name string, f func(call *runtime.HostCall, args []any) (any, error)) runtime.HostFunc {
		return runtime.HostFunc{Name: name, Func: func(_ context.Context, call *runtime.HostCall, args []any) (any, error) {
			return f(call, args)
		}}
	}
	return runtime.HostInterface{
		Name: "test:res/files",
		Resources: []runtime.HostResource{
			{Name: "file", Drop: func(_ context.Context, call *runtime.HostCall, r runtime.Resource) error { return h.record(call, r) }},
			{Name: "dir", Drop: func(_ context.Context, call *runtime.HostCall, r runtime.Resource) error { return h.record(call, r) }},
		},
		Funcs: []runtime.HostFunc{
			fn("[constructor]file", func(call *runtime.HostCall, args []any) (any, error) { return newFile(call, args[0].(uint32)) }),
			fn("[method]file.get", func(_ *runtime.HostCall, args []any) (any, error) {
				f, _, err := file(args[0], false)
				if err != nil {
					return nil, err
				}
				return f.n, nil
			}),
			fn("[method]file.add", func(_ *runtime.HostCall, args []any) (any, error) {
				a, _, err := file(args[0], false)
				if err != nil {
					return nil, err
				}
				b, _, err := file(args[1], false)
				if err != nil {
					return nil, err
				}
				return a.n + b.n, nil
			}),
			// merge ends both files it is given and makes a new one.
			fn("[static]file.merge", func(call *runtime.HostCall, args []any) (any, error) {
				a, ra, err := file(args[0], true)
				if err != nil {
					return nil, err
				}
				b, rb, err := file(args[1], true)
				if err != nil {
					return nil, err
				}
				if err := errors.Join(call.DropResource(ra), call.DropResource(rb)); err != nil {
					return nil, err
				}
				return newFile(call, a.n+b.n)
			}),
			fn("[static]file.evil", func(call *runtime.HostCall, _ []any) (any, error) {
				h.mu.Lock()
				evil := h.evil
				h.mu.Unlock()
				return evil(call)
			}),
			// keep holds on to the file (it ends with the instance).
			fn("keep", func(_ *runtime.HostCall, args []any) (any, error) {
				f, r, err := file(args[0], true)
				if err != nil {
					return nil, err
				}
				h.mu.Lock()
				h.kept = append(h.kept, r)
				h.mu.Unlock()
				return f.n, nil
			}),
			fn("give-back", func(_ *runtime.HostCall, args []any) (any, error) {
				_, r, err := file(args[0], true)
				return r, err
			}),
			fn("[constructor]dir", func(call *runtime.HostCall, _ []any) (any, error) { return call.NewResource("dir", nil) }),
		},
	}
}

// filesFixture is a runtime with test:res/files and the host-resource component.
type filesFixture struct {
	rt   *runtime.Runtime
	comp *runtime.Component
	host *filesHost
}

func newFilesFixture(t *testing.T) *filesFixture {
	t.Helper()
	h := &filesHost{}
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: []runtime.HostInterface{h.iface()}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return &filesFixture{rt: rt, comp: compileFile(t, rt, "testdata/hostresource.wat"), host: h}
}

func (f *filesFixture) instance(t *testing.T, name string) *runtime.Instance {
	t.Helper()
	inst, err := f.rt.Instantiate(context.Background(), f.comp, runtime.InstanceConfig{Name: name, Grants: []string{"test:res/files"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { inst.Close() })
	return inst
}

// wantDrops compares the recorded drops with want.
func (f *filesFixture) wantDrops(t *testing.T, want ...string) {
	t.Helper()
	if got := f.host.dropped(); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("drops:\n got %q\nwant %q", got, want)
	}
}

// trapped wants fn to trap with a message containing msg, retiring the instance.
func trapped(t *testing.T, inst *runtime.Instance, msg, fn string, args ...any) *runtime.TrapError {
	t.Helper()
	_, err := inst.Call(context.Background(), fn, args...)
	var te *runtime.TrapError
	if !errors.As(err, &te) || !errors.Is(err, runtime.ErrTrap) {
		t.Fatalf("%s%v: got %v, want a trap", fn, args, err)
	}
	if !strings.Contains(err.Error(), msg) && (te.Host == nil || !strings.Contains(te.Host.Error(), msg)) {
		t.Fatalf("%s%v: trap %q (host error %v) does not mention %q", fn, args, err, te.Host, msg)
	}
	if inst.Retired() == nil {
		t.Fatalf("%s%v trapped but the instance is not retired", fn, args)
	}
	return te
}

func TestHostResources(t *testing.T) {
	f := newFilesFixture(t)
	inst := f.instance(t, "a")
	ctx := context.Background()

	// Constructor, methods with one and two borrows.
	f1 := call(t, inst, nil, "new-file", 5)
	f2 := call(t, inst, nil, "new-file", 7)
	call(t, inst, uint32(5), "get", f1)
	call(t, inst, uint32(5), "get", f1) // a borrow leaves the handle with the guest
	call(t, inst, uint32(12), "add", f1, f2)
	call(t, inst, uint32(14), "add", f2, f2)

	// A static function given two owns ends them (HostCall.DropResource) and returns a new own.
	f3 := call(t, inst, nil, "merge", f1, f2)
	f.wantDrops(t, "a:file/1=5", "a:file/2=7")
	call(t, inst, uint32(12), "get", f3)

	// An own handed to the host and given back is the same resource under a new handle.
	f4 := call(t, inst, nil, "give-back", f3)
	call(t, inst, uint32(12), "get", f4)
	// An own the host keeps lives on (until the instance ends).
	call(t, inst, uint32(12), "keep", f4)
	f.wantDrops(t, "a:file/1=5", "a:file/2=7")

	// The guest drops its own handle: Drop runs at once.
	f5 := call(t, inst, nil, "new-file", 1)
	call(t, inst, nil, "drop-file", f5)
	f.wantDrops(t, "a:file/1=5", "a:file/2=7", "a:file/4=1")

	// Host resources also cross to Instance.Call's caller as wit.Handles.
	h, ok := call(t, inst, nil, "make-file", 9).(wit.Handle)
	if !ok {
		t.Fatal("make-file did not return a wit.Handle")
	}
	call(t, inst, uint32(9), "peek", h)
	call(t, inst, uint32(9), "take", h) // the guest drops it
	refused(t, inst, "peek", h)
	h2 := call(t, inst, nil, "make-file", 3).(wit.Handle)
	if err := inst.DropResource(ctx, h2); err != nil {
		t.Fatal(err)
	}
	f.wantDrops(t, "a:file/1=5", "a:file/2=7", "a:file/4=1", "a:file/5=9", "a:file/6=3")

	// Still live at Close: the kept file, a caller's handle, a guest's file and a dir.
	call(t, inst, nil, "make-file", 4)
	call(t, inst, nil, "new-file", 8)
	call(t, inst, nil, "new-dir")
	inst.Close()
	f.wantDrops(t, "a:file/1=5", "a:file/2=7", "a:file/4=1", "a:file/5=9", "a:file/6=3",
		"a:file/3=12", "a:file/7=4", "a:file/8=8", "a:dir/9=0")
	inst.Close()
	if got := len(f.host.dropped()); got != 9 {
		t.Fatalf("a second Close dropped again: %d drops", got)
	}
}

// TestHostResourceRefusals: a guest presenting a handle it dropped, gave away, of the other
// type or made by another instance traps; its live resources are dropped once with it, and
// the runtime, the host and the other instances carry on.
func TestHostResourceRefusals(t *testing.T) {
	cases := []struct {
		name string
		run  func(t *testing.T, inst *runtime.Instance)
	}{
		{"dropped handle", func(t *testing.T, inst *runtime.Instance) {
			h := call(t, inst, nil, "new-file", 1)
			call(t, inst, nil, "drop-file", h)
			trapped(t, inst, "unknown handle index", "get", h)
		}},
		{"dropped twice", func(t *testing.T, inst *runtime.Instance) {
			h := call(t, inst, nil, "new-file", 1)
			call(t, inst, nil, "drop-file", h)
			trapped(t, inst, "unknown handle index", "drop-file", h)
		}},
		{"own given to the host", func(t *testing.T, inst *runtime.Instance) {
			h := call(t, inst, nil, "new-file", 1)
			call(t, inst, uint32(1), "keep", h)
			trapped(t, inst, "unknown handle index", "give-back", h)
		}},
		{"handle of the other type", func(t *testing.T, inst *runtime.Instance) {
			call(t, inst, nil, "new-file", 1)
			d := call(t, inst, nil, "new-dir")
			trapped(t, inst, "handle index", "get", d)
		}},
		{"dir dropped as a file", func(t *testing.T, inst *runtime.Instance) {
			d := call(t, inst, nil, "new-dir")
			trapped(t, inst, "handle index", "drop-file", d)
		}},
		{"forged handle", func(t *testing.T, inst *runtime.Instance) {
			call(t, inst, nil, "new-file", 1)
			trapped(t, inst, "unknown handle index", "get", uint32(1000))
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFilesFixture(t)
			other := f.instance(t, "other")
			oh := call(t, other, nil, "new-file", 42)
			inst := f.instance(t, "guest")
			c.run(t, inst)
			// Every resource of the retired instance was dropped exactly once.
			seen := make(map[string]bool)
			for _, d := range f.host.dropped() {
				if seen[d] || !strings.HasPrefix(d, "guest:") {
					t.Fatalf("drops %q: %q twice or not the guest's", f.host.dropped(), d)
				}
				seen[d] = true
			}
			if len(seen) == 0 {
				t.Fatal("no resource of the retired instance was dropped")
			}
			call(t, other, uint32(42), "get", oh)
			fresh := f.instance(t, "fresh")
			call(t, fresh, uint32(3), "get", call(t, fresh, nil, "new-file", 3))
		})
	}
}

// TestHostResourceHandlesStayInTheirInstance: an instance presenting the handle number that
// another instance got is refused (or reaches its own resource of that number, never the
// other's); the host's Resources of one instance are refused by another.
func TestHostResourceHandlesStayInTheirInstance(t *testing.T) {
	f := newFilesFixture(t)
	a, b := f.instance(t, "a"), f.instance(t, "b")
	ha := call(t, a, nil, "new-file", 1)
	call(t, b, nil, "new-dir") // b's first handle is a dir
	trapped(t, b, "handle index", "get", ha)
	call(t, a, uint32(1), "get", ha)

	// Reps are per instance: both instances' first file is rep 1, and a's cannot be used by c.
	c := f.instance(t, "c")
	call(t, a, uint32(1), "keep", ha)
	f.host.mu.Lock()
	stolen := f.host.kept[0]
	f.host.evil = func(*runtime.HostCall) (any, error) { return stolen, nil }
	f.host.mu.Unlock()
	call(t, c, nil, "new-file", 2) // c's rep 1
	te := trapped(t, c, "belongs to another instance", "evil")
	if !errors.Is(te, runtime.ErrUnknownHandle) {
		t.Errorf("stolen resource: %v, want ErrUnknownHandle", te.Host)
	}
	if stolen.Rep != 1 {
		t.Fatalf("a's first file has rep %d", stolen.Rep)
	}
	f.wantDrops(t, "b:dir/1=0", "c:file/1=2")
}

// TestHostResourceHostMistakes: a host function that returns something other than a live
// resource it holds traps the guest with an error that says so; nothing is dropped twice.
func TestHostResourceHostMistakes(t *testing.T) {
	cases := []struct {
		name string
		msg  string
		evil func(call *runtime.HostCall) (any, error)
	}{
		{"returned twice", "the guest already owns it", func() func(call *runtime.HostCall) (any, error) {
			var r runtime.Resource // returned by the first call, and again by the second
			return func(call *runtime.HostCall) (any, error) {
				if r.Rep != 0 {
					if err := call.DropResource(r); !errors.Is(err, runtime.ErrUnknownHandle) {
						return nil, fmt.Errorf("DropResource of a resource the guest owns: %v", err)
					}
					return r, nil
				}
				var err error
				r, err = call.NewResource("file", &fileState{n: 1})
				return r, err
			}
		}()},
		{"dropped", "has ended", func(call *runtime.HostCall) (any, error) {
			r, _ := call.NewResource("file", &fileState{n: 1})
			if err := call.DropResource(r); err != nil {
				return nil, err
			}
			return r, nil
		}},
		{"wrong type", "where own<file> is expected", func(call *runtime.HostCall) (any, error) {
			return call.NewResource("dir", nil)
		}},
		{"not a resource", "want own<file>", func(*runtime.HostCall) (any, error) { return wit.Handle(1), nil }},
		{"forged", "belongs to another instance", func(*runtime.HostCall) (any, error) {
			return runtime.Resource{Type: "file", Rep: 1, Own: true}, nil
		}},
		{"unknown type", "defines no resource", func(call *runtime.HostCall) (any, error) {
			return call.NewResource("socket", nil)
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFilesFixture(t)
			inst := f.instance(t, "i")
			call(t, inst, nil, "new-file", 5)
			f.host.evil = c.evil
			if c.name == "returned twice" {
				call(t, inst, nil, "evil")
			}
			trapped(t, inst, c.msg, "evil")
			seen := make(map[string]bool)
			for _, d := range f.host.dropped() {
				if seen[d] {
					t.Fatalf("%q dropped twice: %q", d, f.host.dropped())
				}
				seen[d] = true
			}
			if !seen["i:file/1=5"] {
				t.Fatalf("the guest's file was not dropped with the instance: %q", f.host.dropped())
			}
		})
	}
	t.Run("forged copy", func(t *testing.T) {
		f := newFilesFixture(t)
		inst := f.instance(t, "i")
		f.host.evil = func(call *runtime.HostCall) (any, error) {
			r, err := call.NewResource("file", &fileState{n: 1})
			if err != nil {
				return nil, err
			}
			if err := call.DropResource(runtime.Resource{Type: "file", Rep: r.Rep, Own: true}); !errors.Is(err, runtime.ErrUnknownHandle) {
				return nil, fmt.Errorf("DropResource of a forged copy: %v", err)
			}
			return r, nil
		}
		call(t, inst, uint32(1), "get", call(t, inst, nil, "evil"))
		inst.Close()
		f.wantDrops(t, "i:file/1=1")
	})
}

// TestHostResourceDropFails: a Drop that fails while the guest drops traps the guest; one that
// fails at instance end is logged and the other resources are still dropped.
func TestHostResourceDropFails(t *testing.T) {
	f := newFilesFixture(t)
	inst := f.instance(t, "i")
	h := call(t, inst, nil, "new-file", 1)
	call(t, inst, nil, "new-file", 2)
	f.host.dropErr = errors.New("disk on fire")
	te := trapped(t, inst, "disk on fire", "drop-file", h)
	if te.Host == nil {
		t.Fatal("the trap does not carry the Drop's error")
	}
	f.wantDrops(t, "i:file/1=1", "i:file/2=2")
}

func TestHostResourceConfig(t *testing.T) {
	for _, res := range [][]runtime.HostResource{{{Name: ""}}, {{Name: "a"}, {Name: "a"}}} {
		_, err := runtime.New(runtime.Config{NoCache: true, Interfaces: []runtime.HostInterface{{Name: "test:res/files", Resources: res}}})
		if err == nil || !strings.Contains(err.Error(), "Resources[") {
			t.Errorf("resources %+v: got %v, want a config error", res, err)
		}
	}
}

// TestHostResourceUndefined: a component importing a resource that its host interface does not
// define is refused before instantiation, naming it.
func TestHostResourceUndefined(t *testing.T) {
	h := &filesHost{}
	hi := h.iface()
	hi.Resources = hi.Resources[:1] // no dir
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: []runtime.HostInterface{hi}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	comp := compileFile(t, rt, "testdata/hostresource.wat")
	_, err = rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{Grants: []string{"test:res/files"}})
	var ue *runtime.UnprovidedImportError
	if !errors.As(err, &ue) || ue.Import != "test:res/files#dir" {
		t.Fatalf("got %v, want an *UnprovidedImportError for test:res/files#dir", err)
	}
}

// BenchmarkHostResource measures one host resource's life from a guest: constructor, a method
// with a borrow, and the guest's drop (three guest calls, each calling the host once).
func BenchmarkHostResource(b *testing.B) {
	h := &filesHost{}
	rt, err := runtime.New(runtime.Config{NoCache: true, Interfaces: []runtime.HostInterface{h.iface()}})
	if err != nil {
		b.Fatal(err)
	}
	defer rt.Close()
	comp := compileFile(b, rt, "testdata/hostresource.wat")
	inst, err := rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{Grants: []string{"test:res/files"}})
	if err != nil {
		b.Fatal(err)
	}
	defer inst.Close()
	ctx := context.Background()
	for b.Loop() {
		f, err := inst.Call(ctx, "new-file", 1)
		if err == nil {
			_, err = inst.Call(ctx, "get", f)
		}
		if err == nil {
			_, err = inst.Call(ctx, "drop-file", f)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}
