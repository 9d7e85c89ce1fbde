package runtime

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"atelier/host/runtime/internal/capi"
	"atelier/host/runtime/wit"
)

// Defaults for Config and Limits.
const (
	// DefaultMaxWasmStack is large enough for QuickJS to raise its own stack-overflow error.
	DefaultMaxWasmStack = 4 << 20
	// DefaultEpochTick is how often the engine's epoch advances (the deadline resolution).
	DefaultEpochTick = 5 * time.Millisecond
	// DefaultTimeout bounds one call when Limits.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// DefaultMaxMemory caps an instance's linear memories when Limits.MaxMemory is zero.
	DefaultMaxMemory = 256 << 20
	// DefaultMaxResult bounds the estimated encoding of a call's result when Limits.MaxResult
	// is zero: Cap'n Web's largest message (capnweb.DefaultLimits().MaxMessageSize).
	DefaultMaxResult = 16 << 20
	// DefaultMaxLiftBytes bounds what Wasmtime may allocate lifting a call's result when
	// Limits.MaxLiftBytes is zero.
	DefaultMaxLiftBytes = 4 << 30
	// DefaultKeepMemories is how many freed linear memories are kept for reuse when
	// Config.KeepMemories is zero.
	DefaultKeepMemories = 16
)

// Config configures a Runtime. The zero value is usable: every zero field means its default.
type Config struct {
	// CacheDir holds compiled artifacts; "" means os.UserCacheDir()/atelier/components. It is
	// created 0700 if missing; New refuses one that group or others may write.
	CacheDir string
	// NoCache disables the artifact cache.
	NoCache bool
	// MaxWasmStack is the guest stack limit in bytes (default DefaultMaxWasmStack).
	MaxWasmStack int
	// EpochTick is the deadline resolution (default DefaultEpochTick).
	EpochTick time.Duration
	// Fuel enables fuel metering so that Limits.Fuel can bound calls. It slows guests down
	// (roughly 10-30%), so it is off unless asked for.
	Fuel bool
	// Pooling, when non-nil, uses Wasmtime's pooling instance allocator. Its memories come
	// from its pool with copy-on-write images, as with MemoryImages.
	Pooling *Pooling
	// MemoryImages keeps Wasmtime's own linear memories with its copy-on-write memory images
	// instead of Atelier's memory creator. The creator maps copy-on-write images too: a
	// component binary is compiled with the data segments of its larger modules taken out and
	// their memories start as private mappings of sealed images, shared by the Runtime's
	// components of the same source (components whose memory order cannot be proved from the
	// binary, and WAT text, keep their segments, copied in at each instantiation). Both ways
	// instantiate the example gadgets about as fast (RATIONALE.md has the numbers), but with
	// MemoryImages a memory.grow that Limits.MaxMemory refuses during a call is invisible to
	// the host: a guest that traps after it is reported as ErrTrap, not ErrMemory (the cap is
	// enforced all the same, and a memory too large for the cap at instantiation is still
	// ErrMemory).
	MemoryImages bool
	// KeepMemories is how many freed linear memories Atelier's memory creator keeps for reuse
	// by later instances (default DefaultKeepMemories; negative keeps none). A kept memory is
	// zeroed when it is freed (its image mapping replaced by fresh memory), so nothing of one
	// instance or image reaches another, and keeps up to 4 MiB of its pages populated (what a
	// Go or QuickJS guest touches while it starts), which spares the next instantiation the
	// page faults of a fresh mapping: at most KeepMemories x 4 MiB of RAM (64 MiB by default)
	// and KeepMemories reservations of about 4 GiB of address space stay with an idle Runtime
	// until Close. Ignored with Pooling or MemoryImages.
	KeepMemories int
	// Interfaces are the host interfaces (capabilities) that grants can give to instances.
	// Their unversioned names must be unique.
	Interfaces []HostInterface
	// Logger receives cache and lifecycle events (default: discard).
	Logger *slog.Logger
	// Now is the clock used for call deadlines (default time.Now).
	Now func() time.Time
}

// Pooling sizes Wasmtime's pooling allocator, which reserves instance slots up front.
type Pooling struct {
	// Instances is the number of component instances alive at once (default 1000).
	Instances uint32
	// MaxMemory is the largest linear memory any instance may reach (default DefaultMaxMemory);
	// Limits.MaxMemory above it has no effect.
	MaxMemory int64
}

// Runtime owns one Wasmtime engine, the artifact cache, and the linkers for each combination of
// granted host interfaces. Create one per process; it is safe for concurrent use.
type Runtime struct {
	cfg         Config
	log         *slog.Logger
	eng         *capi.Engine
	cacheDir    string
	fingerprint string                    // hash of the engine settings that change generated code, and the cache format
	ifaces      map[string]*HostInterface // by unversioned name
	// resources are the interfaces' resource types, by unversioned interface, then name.
	resources map[string]map[string]*resourceType

	mu      sync.Mutex // guards linkers
	linkers map[string]*capi.Linker

	compiles, hits, corrupt atomic.Int64
	verified                verifiedFiles // artifact files checked by this Runtime
	plans                   planTable     // memory images of the open components, by source

	// epoch counts ticks (it trails the engine's epoch by at most one); lastTick is the Now
	// of the latest tick, in Unix nanoseconds. Calls use them to avoid a cgo call and a clock
	// read each (see Instance.begin).
	epoch    atomic.Uint64
	lastTick atomic.Int64

	stop   chan struct{}
	ticker sync.WaitGroup
	closed atomic.Bool
}

// Stats counts artifact cache activity since New.
type Stats struct {
	// Compiles counts components compiled from source.
	Compiles int64
	// CacheHits counts components loaded from a cached artifact instead.
	CacheHits int64
	// CacheCorrupt counts cached artifacts that failed their check and were recompiled.
	CacheCorrupt int64
}

// New validates cfg, creates the engine and starts the epoch ticker.
func New(cfg Config) (*Runtime, error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("runtime config: %w", err)
	}
	if cfg.MaxWasmStack == 0 {
		cfg.MaxWasmStack = DefaultMaxWasmStack
	}
	if cfg.EpochTick == 0 {
		cfg.EpochTick = DefaultEpochTick
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	rt := &Runtime{
		cfg:     cfg,
		log:     cfg.Logger,
		ifaces:  make(map[string]*HostInterface),
		linkers: make(map[string]*capi.Linker),
		stop:    make(chan struct{}),
	}
	rt.resources = newResourceTypes(cfg.Interfaces) // numbered once: every linker shares them
	if rt.log == nil {
		rt.log = slog.New(slog.DiscardHandler)
	}
	for i := range cfg.Interfaces {
		hi := &cfg.Interfaces[i]
		rt.ifaces[wit.Unversioned(hi.Name)] = hi
	}
	ec := capi.EngineConfig{
		MaxWasmStack:        uint(cfg.MaxWasmStack),
		Fuel:                cfg.Fuel,
		Epoch:               true,
		ParallelCompilation: true,
		CapMemories:         cfg.memoryCreator(),
		KeepMemories:        cfg.KeepMemories,
	}
	if cfg.KeepMemories == 0 {
		ec.KeepMemories = DefaultKeepMemories
	}
	if p := cfg.Pooling; p != nil {
		n := p.Instances
		if n == 0 {
			n = 1000
		}
		mem := p.MaxMemory
		if mem == 0 {
			mem = DefaultMaxMemory
		}
		ec.Pooling = &capi.PoolingConfig{
			TotalComponentInstances: n, TotalCoreInstances: 10 * n, TotalMemories: 2 * n,
			TotalTables: 10 * n, MaxMemorySize: uint(mem),
		}
	}
	// The memory creator turns Wasmtime's copy-on-write initialisation off, which Wasmtime
	// checks when it loads an artifact, and compiles components with merged data segments,
	// or without the segments it maps as images itself (rt.compile).
	cow := !cfg.memoryCreator()
	settings := fmt.Sprintf("wasmtime-%s stack=%d fuel=%t epoch=true pooling=%t cow=%t mergedata=%t cache=%d", capi.Version, cfg.MaxWasmStack, cfg.Fuel, cfg.Pooling != nil, cow, !cow, cacheFormat)
	fp := sha256.Sum256([]byte(settings))
	rt.fingerprint = hex.EncodeToString(fp[:8])
	if !cfg.NoCache {
		dir := cfg.CacheDir
		if dir == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				return nil, fmt.Errorf("runtime config: no CacheDir and no user cache dir: %w", err)
			}
			dir = filepath.Join(base, "atelier", "components")
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("create artifact cache: %w", err)
		}
		if err := checkCacheDir(dir); err != nil {
			return nil, fmt.Errorf("artifact cache: %w", err)
		}
		rt.cacheDir = dir
	}
	rt.eng = capi.NewEngine(ec)
	rt.lastTick.Store(cfg.Now().UnixNano())
	rt.ticker.Add(1)
	go rt.tick()
	return rt, nil
}

// memoryCreator reports whether Atelier's memory creator enforces Limits.MaxMemory (and so
// tells refused growths apart); otherwise Wasmtime's store limiter does, silently.
func (c *Config) memoryCreator() bool { return c.Pooling == nil && !c.MemoryImages }

func (c *Config) validate() error {
	var errs []error
	if c.MaxWasmStack < 0 {
		errs = append(errs, fmt.Errorf("MaxWasmStack: %d is negative", c.MaxWasmStack))
	}
	if c.EpochTick < 0 {
		errs = append(errs, fmt.Errorf("EpochTick: %v is negative", c.EpochTick))
	}
	seen := make(map[string]bool)
	for i, hi := range c.Interfaces {
		name := wit.Unversioned(hi.Name)
		switch {
		case !strings.Contains(hi.Name, ":") || !strings.Contains(hi.Name, "/"):
			errs = append(errs, fmt.Errorf("Interfaces[%d].Name: %q is not a WIT interface name (ns:pkg/iface@version)", i, hi.Name))
		case seen[name]:
			errs = append(errs, fmt.Errorf("Interfaces[%d].Name: %q is defined twice", i, name))
		case isWASI(name):
			errs = append(errs, fmt.Errorf("Interfaces[%d].Name: %q: WASI interfaces are provided by Wasmtime", i, name))
		}
		seen[name] = true
		errs = append(errs, hi.validateResources(i)...)
		fnames := make(map[string]bool)
		for j, f := range hi.Funcs {
			if f.Name == "" || f.Func == nil || fnames[f.Name] {
				errs = append(errs, fmt.Errorf("Interfaces[%d].Funcs[%d]: empty, nil or duplicate function %q", i, j, f.Name))
			}
			fnames[f.Name] = true
		}
	}
	return errors.Join(errs...)
}

func (rt *Runtime) tick() {
	defer rt.ticker.Done()
	t := time.NewTicker(rt.cfg.EpochTick)
	defer t.Stop()
	for {
		select {
		case <-rt.stop:
			return
		case <-t.C:
			rt.eng.IncrementEpoch()
			rt.lastTick.Store(rt.cfg.Now().UnixNano())
			rt.epoch.Add(1)
		}
	}
}

// Stats returns the artifact cache counters.
func (rt *Runtime) Stats() Stats {
	return Stats{Compiles: rt.compiles.Load(), CacheHits: rt.hits.Load(), CacheCorrupt: rt.corrupt.Load()}
}

// Close stops the ticker and releases the linkers and the engine. Every instance and
// component must be closed first.
func (rt *Runtime) Close() error {
	if !rt.closed.CompareAndSwap(false, true) {
		return nil
	}
	close(rt.stop)
	rt.ticker.Wait()
	rt.mu.Lock()
	for _, l := range rt.linkers {
		l.Close()
	}
	rt.linkers = nil
	rt.mu.Unlock()
	rt.eng.Close()
	return nil
}

// linker returns the shared linker that defines WASI (when the component imports it) and
// exactly the host interfaces the component imports.
func (rt *Runtime) linker(comp *Component) (*capi.Linker, error) {
	key := comp.linkerKey
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.linkers == nil {
		return nil, ErrClosed
	}
	if l, ok := rt.linkers[key]; ok {
		return l, nil
	}
	l := capi.NewLinker(rt.eng)
	if comp.wasi {
		if err := l.AddWASIP2(); err != nil {
			l.Close()
			return nil, fmt.Errorf("link WASI: %w", err)
		}
	}
	for _, name := range comp.hostIfaces {
		if err := rt.ifaces[name].define(l, rt.capiResources(name)); err != nil {
			l.Close()
			return nil, err
		}
	}
	rt.linkers[key] = l
	return l, nil
}
