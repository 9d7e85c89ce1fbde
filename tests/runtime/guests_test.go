package runtime_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"atelier/host/capability/clock"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
	"atelier/sdk/guesttest"
)

// Guests built by sdk/build-gadget.sh, by name: the folder under the repository root.
const (
	counterGo  = "gadgets/counter-go"
	counterJS  = "gadgets/counter-js"
	todoJS     = "gadgets/todo-js"
	todoGo     = "gadgets/todo-go"
	fsEscape   = "tests/runtime/guests/fs-escape"
	netEscape  = "tests/runtime/guests/net-escape"
	envEscape  = "tests/runtime/guests/env-escape"
	stdioGuest = "tests/runtime/guests/stdio"
	socketsWAT = "tests/runtime/guests/sockets-import"
	hostAPI    = "tests/runtime/guests/host-api"
	randomJS   = "tests/runtime/guests/random-js"
)

var (
	outDir string // where this run's artifact cache lives

	buildMu sync.Mutex
	builds  = map[string]*build{}

	shared struct {
		once sync.Once
		rt   *runtime.Runtime
		err  error
	}
)

type build struct {
	compileOnce sync.Once
	comp        *runtime.Component
	compileErr  error
}

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // else every Wasmtime error captures a slow Rust backtrace
	flag.Parse()
	dir, err := os.MkdirTemp("", "atelier-runtime-artifacts-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	outDir = dir
	code := m.Run()
	for _, b := range builds {
		if b.comp != nil {
			b.comp.Close()
		}
	}
	if shared.rt != nil {
		shared.rt.Close()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildOf(dir string) *build {
	buildMu.Lock()
	defer buildMu.Unlock()
	b := builds[dir]
	if b == nil {
		b = &build{}
		builds[dir] = b
	}
	return b
}

// runtimeConfig offers every atelier:host capability, with the artifact cache in cacheDir (""
// for no cache).
func runtimeConfig(cacheDir string) runtime.Config {
	return runtime.Config{
		CacheDir: cacheDir,
		NoCache:  cacheDir == "",
		Interfaces: []runtime.HostInterface{
			log.New(), clock.New(time.Now), kv.New(kv.Limits{}), events.New(events.NewBus(), events.Limits{}),
		},
	}
}

// newRuntime returns a runtime of its own (see runtimeConfig), closed when tb ends.
func newRuntime(tb testing.TB, cacheDir string) *runtime.Runtime {
	tb.Helper()
	rt, err := runtime.New(runtimeConfig(cacheDir))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// sharedRuntime is the runtime the tests share, so that each guest is compiled once per run.
func sharedRuntime(tb testing.TB) *runtime.Runtime {
	tb.Helper()
	shared.once.Do(func() {
		shared.rt, shared.err = runtime.New(runtimeConfig(filepath.Join(outDir, "artifacts")))
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.rt
}

// component returns the guest built from dir, compiled once per run by the shared runtime.
func component(tb testing.TB, dir string) *runtime.Component {
	tb.Helper()
	src := guesttest.Bytes(tb, dir)
	b := buildOf(dir)
	b.compileOnce.Do(func() {
		b.comp, b.compileErr = sharedRuntime(tb).Compile(context.Background(), src)
	})
	if b.compileErr != nil {
		tb.Fatalf("compile %s: %v", dir, b.compileErr)
	}
	return b.comp
}
