package runtime_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"atelier/host/runtime"
)

// component returns a component binary with the given sections (id, then contents).
func component(sections ...[]byte) []byte {
	out := []byte("\x00asm\x0d\x00\x01\x00")
	for _, s := range sections {
		out = append(out, s[0], byte(len(s)-1))
		out = append(out, s[1:]...)
	}
	return out
}

// TestCompileRefusalsSayWhy: what is not WebAssembly at all, and a core module, are refused as
// "not a WebAssembly component" (not with a WAT parse error); a component that uses async
// functions or streams (as WASI 0.3 components do) is refused saying so, naming the WASI 0.3
// interfaces it imports.
func TestCompileRefusalsSayWhy(t *testing.T) {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	asyncFunc := []byte{7, 1, 0x43, 0x00, 0x01, 0x00} // type section: (func async)
	name := "wasi:cli/stdin@0.3.0"
	imp := append([]byte{10, 1, 0x00, byte(len(name))}, name...)
	imp = append(imp, 0x01, 0x00) // (import "wasi:cli/stdin@0.3.0" (func (type 0)))
	for _, tc := range []struct {
		name string
		src  []byte
		is   error
		want []string
	}{
		{"text", []byte("hello, world\n"), runtime.ErrNotComponent, []string{"not a WebAssembly component", "neither a binary"}},
		{"empty", nil, runtime.ErrNotComponent, []string{"not a WebAssembly component"}},
		{"core module", []byte("\x00asm\x01\x00\x00\x00"), runtime.ErrNotComponent, []string{"not a WebAssembly component", "core WebAssembly module"}},
		{"async func", component(asyncFunc), runtime.ErrAsync, []string{"async", "async functions, streams or futures", "WASI 0.2"}},
		{"stream", component([]byte{7, 1, 0x66, 0x00}), runtime.ErrAsync, []string{"async", "WASI 0.2"}},
		{"WASI 0.3", component(asyncFunc, imp), runtime.ErrAsync, []string{"async", "it targets WASI 0.3 (wasi:cli/stdin@0.3.0)"}},
	} {
		_, err := rt.Compile(context.Background(), tc.src)
		if !errors.Is(err, tc.is) {
			t.Errorf("%s: Compile = %v, want %v", tc.name, err, tc.is)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", tc.name, err, w)
			}
		}
		if strings.Contains(err.Error(), "invalid leading byte") && !strings.Contains(err.Error(), "wasmtime: ") {
			t.Errorf("%s: %q gives Wasmtime's words alone", tc.name, err)
		}
	}
	// WAT text that does not parse is still reported as WAT.
	_, err = rt.Compile(context.Background(), []byte(";; a comment\n(component (oops))"))
	if err == nil || errors.Is(err, runtime.ErrNotComponent) {
		t.Errorf("bad WAT: Compile = %v, want Wasmtime's parse error", err)
	}
}

// TestVersionsOfOneInterfaceStayApart: a component exporting an interface at two versions has
// each version's function under its versioned name; the unversioned name, which could mean
// either, names neither and says why.
func TestVersionsOfOneInterfaceStayApart(t *testing.T) {
	f := newFixture(t, runtime.Config{})
	comp := compileFile(t, f.rt, "../kernel/testdata/collide.wat")
	inst, err := f.rt.Instantiate(context.Background(), comp, runtime.InstanceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	for name, want := range map[string]uint32{"test:x/api@0.1.0#get": 1, "test:x/api@0.2.0#get": 2} {
		if got, err := inst.Call(context.Background(), name); err != nil || got != want {
			t.Errorf("%s() = %v, %v; want %d", name, got, err, want)
		}
	}
	if _, err := inst.Call(context.Background(), "test:x/api#get"); !errors.Is(err, runtime.ErrNoExport) || !strings.Contains(err.Error(), "more than one version") {
		t.Errorf("test:x/api#get() = %v, want ErrNoExport saying the version is needed", err)
	}
}
