package jsruntime_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"atelier/host/capability/bindings"
	"atelier/host/capability/events"
	"atelier/host/capability/kv"
	"atelier/host/capability/log"
	"atelier/host/runtime"
	"atelier/jsruntime"
)

var bus = events.NewBus()

var shared struct {
	once sync.Once
	rt   *runtime.Runtime
	eng  *jsruntime.Engine
	err  error
}

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE") // every Wasmtime error would capture a slow Rust backtrace
	code := m.Run()
	if shared.eng != nil {
		shared.eng.Close()
		shared.rt.Close()
	}
	os.Exit(code)
}

// engine returns the engine shared by the package's tests, on a runtime with the atelier:host
// capabilities. Compiled artifacts are cached under the test cache directory of the user.
func engine(tb testing.TB) *jsruntime.Engine {
	tb.Helper()
	shared.once.Do(func() {
		dir, err := os.UserCacheDir()
		if err != nil {
			dir = os.TempDir()
		}
		shared.rt, shared.err = runtime.New(runtime.Config{
			CacheDir: filepath.Join(dir, "atelier", "jsruntime-test"),
			Interfaces: []runtime.HostInterface{
				log.New(), kv.New(kv.Limits{}), events.New(bus, events.Limits{}), bindings.New(),
			},
		})
		if shared.err != nil {
			return
		}
		shared.eng, shared.err = jsruntime.New(context.Background(), shared.rt)
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.eng
}
