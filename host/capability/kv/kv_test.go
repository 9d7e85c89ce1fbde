package kv_test

import (
	"bytes"
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"

	"atelier/capnweb/ordered"
	"atelier/host/capability/internal/testguest"
	"atelier/host/capability/kv"
	"atelier/host/runtime"
)

func kvErr(t *testing.T, err error, tag string) {
	t.Helper()
	var re *runtime.ResultError
	if !errors.As(err, &re) {
		t.Fatalf("got %v, want a kv error %q", err, tag)
	}
	if m, ok := re.Value.(map[string]any); !ok || m["tag"] != tag {
		t.Fatalf("got error value %#v, want tag %q", re.Value, tag)
	}
}

// TestGuest drives every kv function through the test guest against a bound Memory store.
func TestGuest(t *testing.T) {
	store := kv.NewMemory(0)
	inst := testguest.Start(t, runtime.InstanceConfig{Bind: map[string]any{kv.Grant: store}}, kv.New(kv.Limits{MaxKey: 16, MaxValue: 8}))
	ctx := context.Background()
	call := func(fn string, args ...any) (any, error) { return inst.Call(ctx, "kv-"+fn, args...) }

	if got, err := call("get", "missing"); err != nil || got != nil {
		t.Fatalf("get missing: %#v, %v", got, err)
	}
	if _, err := call("set", "a/1", []byte("one")); err != nil {
		t.Fatal(err)
	}
	if got, err := call("get", "a/1"); err != nil || !bytes.Equal(got.([]byte), []byte("one")) {
		t.Fatalf("get: %#v, %v", got, err)
	}
	if v, ok, _ := store.Get(ctx, "a/1"); !ok || string(v) != "one" {
		t.Fatalf("the bound store did not receive the write: %q %v", v, ok)
	}
	ops := []any{
		map[string]any{"tag": "set", "val": map[string]any{"key": "a/2", "value": []byte("two")}},
		map[string]any{"tag": "set", "val": map[string]any{"key": "b/1", "value": []byte{}}},
		map[string]any{"tag": "delete", "val": "a/1"},
	}
	if _, err := call("batch", ops); err != nil {
		t.Fatal(err)
	}
	got, err := call("list", "a/", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []any{ordered.Object{{Key: "key", Value: "a/2"}, {Key: "value", Value: []byte("two")}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("list: %#v, want %#v", got, want)
	}
	if got, err := call("list", "", 1); err != nil || len(got.([]any)) != 1 {
		t.Fatalf("list limit 1: %#v, %v", got, err)
	}
	if _, err := call("delete", "a/2"); err != nil {
		t.Fatal(err)
	}
	if _, err := call("delete", "never-there"); err != nil {
		t.Fatalf("delete of a missing key: %v", err)
	}

	_, err = call("set", "", []byte("x"))
	kvErr(t, err, "invalid-key")
	_, err = call("get", strings.Repeat("k", 17))
	kvErr(t, err, "invalid-key")
	_, err = call("set", "big", []byte("123456789"))
	kvErr(t, err, "quota-exceeded")
	// A batch with one bad op changes nothing.
	_, err = call("batch", []any{
		map[string]any{"tag": "set", "val": map[string]any{"key": "c", "value": []byte("ok")}},
		map[string]any{"tag": "delete", "val": ""},
	})
	kvErr(t, err, "invalid-key")
	if _, ok, _ := store.Get(ctx, "c"); ok {
		t.Fatal("a refused batch was partly applied")
	}
	if inst.Retired() != nil {
		t.Fatalf("kv errors must not retire the instance: %v", inst.Retired())
	}
}

func TestQuota(t *testing.T) {
	store := kv.NewMemory(10)
	inst := testguest.Start(t, runtime.InstanceConfig{Bind: map[string]any{kv.Grant: store}})
	if _, err := inst.Call(context.Background(), "kv-set", "k", []byte("12345")); err != nil {
		t.Fatal(err)
	}
	_, err := inst.Call(context.Background(), "kv-set", "k2", []byte("12345"))
	kvErr(t, err, "quota-exceeded")
	// Overwriting frees the old bytes first.
	if _, err := inst.Call(context.Background(), "kv-set", "k", []byte("123456789")); err != nil {
		t.Fatal(err)
	}
}

func TestBadBinding(t *testing.T) {
	hi := kv.New(kv.Limits{})
	if _, err := hi.NewState(runtime.InstanceInfo{Bind: "not a store"}); err == nil {
		t.Fatal("a binding that is not a kv.Store was accepted")
	}
}

// TestMemoryConcurrent hammers the in-memory store (run with -race).
func TestMemoryConcurrent(t *testing.T) {
	m := kv.NewMemory(0)
	ctx := context.Background()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				key := string(rune('a'+g)) + "/" + string(rune('0'+i%10))
				if err := m.Set(ctx, key, []byte{byte(i)}); err != nil {
					t.Error(err)
				}
				if _, err := m.List(ctx, string(rune('a'+g)), 5); err != nil {
					t.Error(err)
				}
				_ = m.Batch(ctx, []kv.Op{{Delete: true, Key: key}, {Key: key + "x", Value: []byte("v")}})
			}
		}()
	}
	wg.Wait()
	all, _ := m.List(ctx, "", 1000)
	if len(all) != 80 {
		t.Errorf("%d keys, want 80", len(all))
	}
}

// TestAudit: the audit renders the kv interface as WIT writes it, named types included.
func TestAudit(t *testing.T) {
	rt, err := runtime.New(runtime.Config{NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	comp, err := rt.Compile(context.Background(), testguest.Source())
	if err != nil {
		t.Fatal(err)
	}
	defer comp.Close()
	lines := comp.Audit().Lines()
	for _, want := range []string{
		"import atelier:host/kv@0.1.0.error: type variant error { invalid-key(string), quota-exceeded(string), io(string) }",
		"import atelier:host/kv@0.1.0.op: type variant op { set(entry), delete(string) }",
		"import atelier:host/kv@0.1.0.get: func(key: string) -> result<option<list<u8>>, error>",
		"import atelier:host/kv@0.1.0.batch: func(ops: list<op>) -> result<_, error>",
		"import atelier:host/log@0.1.0.write: func(level: level, message: string)",
		"export kv-list: func(prefix: string, limit: u32) -> result<list<kv-entry>, kv-error>",
	} {
		found := false
		for _, l := range lines {
			found = found || l == want
		}
		if !found {
			t.Errorf("audit lacks %q; it has:\n%s", want, strings.Join(lines, "\n"))
		}
	}
}
