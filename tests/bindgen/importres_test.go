package bindgen_test

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"testing"

	"atelier/host/runtime"
)

// fileHost implements the resource `file` of test:bindgen/host: a file holds a text. Each
// Drop is recorded under the instance's name.
type fileHost struct {
	mu    sync.Mutex
	drops map[string][]string // instance -> texts of the files dropped, in order
}

type hostFile struct{ text string }

// dropped returns the texts of the files dropped for the instance.
func (h *fileHost) dropped(instance string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.drops[instance]...)
}

// arg returns the file of a Resource argument, which must be an own or a borrow as wanted.
func arg(v any, own bool) (*hostFile, runtime.Resource, error) {
	r, ok := v.(runtime.Resource)
	if !ok || r.Own != own || r.Type != "file" {
		return nil, r, fmt.Errorf("got %#v, want a file with Own=%t", v, own)
	}
	return r.Value.(*hostFile), r, nil
}

func newHostFile(call *runtime.HostCall, text string) (any, error) {
	return call.NewResource("file", &hostFile{text: text})
}

// addTo adds the resource and its functions to the host interface.
func (h *fileHost) addTo(hi *runtime.HostInterface) {
	fn := func(name string, f func(call *runtime.HostCall, args []any) (any, error)) {
		hi.Funcs = append(hi.Funcs, runtime.HostFunc{Name: name, Func: func(_ context.Context, call *runtime.HostCall, args []any) (any, error) {
			return f(call, args)
		}})
	}
	hi.Resources = append(hi.Resources, runtime.HostResource{Name: "file", Drop: func(_ context.Context, call *runtime.HostCall, r runtime.Resource) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.drops[call.InstanceName()] = append(h.drops[call.InstanceName()], r.Value.(*hostFile).text)
		return nil
	}})
	fn("[constructor]file", func(call *runtime.HostCall, args []any) (any, error) { return newHostFile(call, args[0].(string)) })
	fn("[method]file.read", func(_ *runtime.HostCall, args []any) (any, error) {
		f, _, err := arg(args[0], false)
		if err != nil {
			return nil, err
		}
		return f.text, nil
	})
	fn("[method]file.append", func(_ *runtime.HostCall, args []any) (any, error) {
		f, _, err := arg(args[0], false)
		if err != nil {
			return nil, err
		}
		f.text += args[1].(string)
		return nil, nil
	})
	fn("[method]file.concat", func(call *runtime.HostCall, args []any) (any, error) {
		a, _, err := arg(args[0], false)
		if err != nil {
			return nil, err
		}
		b, _, err := arg(args[1], false)
		if err != nil {
			return nil, err
		}
		return newHostFile(call, a.text+b.text)
	})
	fn("[static]file.open", func(call *runtime.HostCall, args []any) (any, error) {
		if name := args[0].(string); name != "readme" {
			return nil, runtime.Fail("no file " + name)
		}
		return newHostFile(call, "read me")
	})
	fn("[static]file.many", func(call *runtime.HostCall, args []any) (any, error) {
		var out []any
		for _, text := range args[0].([]any) {
			r, err := newHostFile(call, text.(string))
			if err != nil {
				return nil, err
			}
			out = append(out, r)
		}
		return out, nil
	})
	fn("close-file", func(call *runtime.HostCall, args []any) (any, error) {
		f, r, err := arg(args[0], true)
		if err != nil {
			return nil, err
		}
		return f.text, call.DropResource(r)
	})
	fn("pass", func(_ *runtime.HostCall, args []any) (any, error) {
		_, r, err := arg(args[0], true)
		return r, err
	})
}

// TestImportedResource: the guest uses the host's file through its generated bindings:
// constructor, methods (with two borrows of one file), static functions returning a result and
// a list of files, an own passed to the host and given back, one the host ends, and drops.
// Every file is dropped exactly once, by the guest, by the host, or when the instance ends.
func TestImportedResource(t *testing.T) {
	f := newFixture(t)
	got := f.call(t, "use-files", "hi")
	want := []any{
		"new: hi", "append: hi+more", "concat: hi+morehi+more",
		"open missing: no file missing", "open readme: read me",
		"many[0]: one", "many[1]: two", "pass: hi+morehi+more", "close: hi+morehi+more",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("use-files:\n got %q\nwant %q", got, want)
	}
	name := t.Name()
	wantDrops := []string{"one", "two", "hi+morehi+more", "hi+more", "read me"}
	if got := f.files.dropped(name); !reflect.DeepEqual(got, wantDrops) {
		t.Fatalf("drops %q, want %q", got, wantDrops)
	}
	f.call(t, "keep-file", "kept")
	if got := f.files.dropped(name); len(got) != len(wantDrops) {
		t.Fatalf("a kept file was dropped: %q", got)
	}
	if err := f.inst.Retired(); err != nil {
		t.Fatalf("instance retired: %v", err)
	}
	f.inst.Close()
	wantDrops = append(wantDrops, "kept")
	if got := f.files.dropped(name); !reflect.DeepEqual(got, wantDrops) {
		t.Fatalf("after Close: drops %q, want %q", got, wantDrops)
	}
}
