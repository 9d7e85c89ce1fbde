package runtime_test

import (
	"context"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"atelier/host/capability/clock"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
)

// repoRoot is the repository root, relative to this package.
const repoRoot = "../.."

// Guests built by sdk/build-gadget.sh, by name: the folder under the repository root.
const (
	counterGo  = "gadgets/counter-go"
	todoJS     = "gadgets/todo-js"
	fsEscape   = "tests/runtime/guests/fs-escape"
	netEscape  = "tests/runtime/guests/net-escape"
	envEscape  = "tests/runtime/guests/env-escape"
	stdioGuest = "tests/runtime/guests/stdio"
	socketsWAT = "tests/runtime/guests/sockets-import"
	hostAPI    = "tests/runtime/guests/host-api"
)

var (
	outDir string // where this run's components and the runtime's artifact cache live

	buildMu sync.Mutex
	builds  = map[string]*build{}

	shared struct {
		once sync.Once
		rt   *runtime.Runtime
		err  error
	}
)

type build struct {
	once sync.Once
	path string
	err  error

	compileOnce sync.Once
	comp        *runtime.Component
	compileErr  error
}

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // else every Wasmtime error captures a slow Rust backtrace
	flag.Parse()
	dir, err := os.MkdirTemp("", "atelier-runtime-guests-")
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

// guest returns the path of the component built from the guest folder dir (relative to the
// repository root), building it once per test run with sdk/build-gadget.sh, which caches by
// content hash. Under -short it skips: building needs go, node and the npm tools.
func guest(tb testing.TB, dir string) string {
	tb.Helper()
	if testing.Short() {
		tb.Skip("skipped under -short: tests/runtime builds its guests with sdk/build-gadget.sh (go, node, npm)")
	}
	b := buildOf(dir)
	b.once.Do(func() {
		statInputs(dir)
		out := filepath.Join(outDir, filepath.Base(dir)+".wasm")
		cmd := exec.Command("bash", filepath.Join(repoRoot, "sdk", "build-gadget.sh"), filepath.Join(repoRoot, dir), out)
		if log, err := cmd.CombinedOutput(); err != nil {
			b.err = fmt.Errorf("sdk/build-gadget.sh %s: %v\n%s\n(run scripts/setup.sh to install go, node and npm)", dir, err, log)
			return
		}
		b.path = out
	})
	if b.err != nil {
		tb.Fatal(b.err)
	}
	return b.path
}

// statInputs stats every file the build of dir depends on. The build runs in a subprocess,
// so without this `go test` would cache a result even after the guest's sources changed; it
// re-runs the tests when a file it saw the test stat has changed.
func statInputs(dir string) {
	for _, d := range []string{dir, "sdk/go", "sdk/componentize/componentize.mjs", "sdk/build-gadget.sh", "wit"} {
		filepath.WalkDir(filepath.Join(repoRoot, d), func(path string, e fs.DirEntry, err error) error {
			if err == nil && !e.IsDir() {
				os.Stat(path)
			}
			return nil
		})
	}
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
	src := guestBytes(tb, dir)
	b := buildOf(dir)
	b.compileOnce.Do(func() {
		b.comp, b.compileErr = sharedRuntime(tb).Compile(context.Background(), src)
	})
	if b.compileErr != nil {
		tb.Fatalf("compile %s: %v", dir, b.compileErr)
	}
	return b.comp
}

// guestBytes returns the component built from dir.
func guestBytes(tb testing.TB, dir string) []byte {
	tb.Helper()
	b, err := os.ReadFile(guest(tb, dir))
	if err != nil {
		tb.Fatal(err)
	}
	return b
}
