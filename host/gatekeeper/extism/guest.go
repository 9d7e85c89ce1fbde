package extism

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	extism "github.com/extism/go-sdk"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/sys"

	"atelier/host/capability/kv"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
	"atelier/host/runtime"
	"atelier/host/runtime/wit"
)

// code is the gatekeeper.Code of an extism package. Its plugin is compiled once per memory
// cap (wazero applies the cap to a whole runtime) and instantiated per guest.
type code struct {
	e    *Engine
	wasm []byte
	// hooks: the plugin exports HookExports.
	hooks bool

	mu       sync.Mutex
	compiled map[uint32]*extism.CompiledPlugin // by memory.max_pages
}

func (c *code) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for pages, cp := range c.compiled {
		cp.Close(context.Background())
		delete(c.compiled, pages)
	}
}

// plugin returns the plugin compiled with a cap of pages 64 KiB pages.
func (c *code) plugin(ctx context.Context, pages uint32) (*extism.CompiledPlugin, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cp := c.compiled[pages]; cp != nil {
		return cp, nil
	}
	manifest := extism.Manifest{
		Wasm:   []extism.Wasm{extism.WasmData{Data: c.wasm}},
		Memory: &extism.ManifestMemory{MaxPages: pages},
		// AllowedHosts and AllowedPaths stay empty: Extism's HTTP and files reach nothing
		// (and installation refuses plugins that import its HTTP functions).
	}
	cp, err := extism.NewCompiledPlugin(withMemoryListener(ctx), manifest, extism.PluginConfig{
		EnableWasi: true, RuntimeConfig: c.e.runtimeConfig(),
	}, hostFunctions)
	if err != nil {
		return nil, fmt.Errorf("compile plugin: %w", err)
	}
	if c.compiled == nil {
		c.compiled = map[uint32]*extism.CompiledPlugin{}
	}
	c.compiled[pages] = cp
	return cp, nil
}

// Start instantiates the plugin with cfg's limits: Extism's memory.max_pages caps every
// memory, its timeout ends every call, and a call also ends with its context. The host
// functions serve cfg.
func (c *code) Start(ctx context.Context, cfg gatekeeper.GuestConfig) (gatekeeper.Guest, error) {
	timeout, maxMemory := cfg.Limits.Timeout, cfg.Limits.MaxMemory
	if timeout <= 0 {
		timeout = runtime.DefaultTimeout
	}
	if maxMemory <= 0 {
		maxMemory = runtime.DefaultMaxMemory
	}
	if cfg.Limits.MaxResult <= 0 {
		cfg.Limits.MaxResult = runtime.DefaultMaxResult
	}
	compiled, err := c.plugin(ctx, uint32(max(1, maxMemory>>16)))
	if err != nil {
		return nil, err
	}
	g := &Guest{cfg: cfg, e: c.e, store: cfg.Store, policy: cfg.Policy, hooks: c.hooks}
	if g.store == nil {
		g.store = kv.NewMemory(0)
	}
	if g.policy == nil {
		g.policy = &outboundhttp.Policy{}
	}
	stdout, stderr := g.console("stdout"), g.console("stderr")
	g.plugin, err = compiled.Instance(ctx, extism.PluginInstanceConfig{
		ModuleConfig: wazero.NewModuleConfig().
			WithSysWalltime().WithSysNanotime().WithSysNanosleep().WithRandSource(rand.Reader).
			WithStdout(stdout).WithStderr(stderr),
	})
	if err != nil {
		return nil, fmt.Errorf("instantiate plugin: %w", err)
	}
	g.plugin.Timeout = timeout
	g.plugin.SetLogger(func(level extism.LogLevel, msg string) { g.line("log", logLevel(level), msg) })
	return g, nil
}

// Guest is a running Extism gatekeeper plugin (the gatekeeper.Guest of extism packages).
// Calls run one at a time. A call that traps or runs past its deadline retires the guest:
// that call returns an error wrapping runtime.ErrTrap or runtime.ErrDeadline, later calls
// runtime.ErrRetired.
type Guest struct {
	cfg    gatekeeper.GuestConfig
	e      *Engine
	store  kv.Store
	policy *outboundhttp.Policy
	hooks  bool // the plugin exports HookExports

	mu      sync.Mutex // guards the plugin and everything below
	plugin  *extism.Plugin
	mem     api.Memory // the plugin module's own memory, seen by the memory listener
	retired error
	closed  bool
	// returned is set by the memory listener when the called function returned (not
	// trapped); cutShort by a host function that the call's deadline ended (see hostFunc).
	returned, cutShort bool
}

// call runs plugin function fn with in as JSON input and decodes its JSON output into out
// (when not nil).
func (g *Guest) call(ctx context.Context, fn string, in, out any) error {
	var input []byte
	if in != nil {
		var err error
		if input, err = json.Marshal(in); err != nil {
			return fmt.Errorf("encode the input: %w", err)
		}
	}
	output, err := g.callRaw(ctx, fn, input)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(output, out); err != nil {
		return fmt.Errorf("the plugin's output is not the expected JSON: %w", err)
	}
	return nil
}

func (g *Guest) callRaw(ctx context.Context, fn string, input []byte) ([]byte, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return nil, runtime.ErrClosed
	case g.retired != nil:
		return nil, fmt.Errorf("%w (%w)", runtime.ErrRetired, g.retired)
	}
	g.returned, g.cutShort = false, false
	rc, output, err := g.plugin.CallWithContext(context.WithValue(ctx, guestKey{}, g), exportName(fn), input)
	switch {
	case !g.returned:
		kind := runtime.ErrTrap
		var exit *sys.ExitError
		if g.cutShort || ended(ctx) || errors.As(err, &exit) && (exit.ExitCode() == sys.ExitCodeDeadlineExceeded || exit.ExitCode() == sys.ExitCodeContextCanceled) {
			kind = runtime.ErrDeadline
		}
		g.retired = fmt.Errorf("%w: %s: %v", kind, fn, err)
		return nil, g.retired
	case err != nil: // set with error_set: the gatekeeper's own error
		return nil, err
	case rc != 0:
		return nil, fmt.Errorf("%s returned %d without an error message", exportName(fn), rc)
	case int64(len(output)) > g.cfg.Limits.MaxResult: // JSON, about its own encoded size
		return nil, fmt.Errorf("%s: %w", exportName(fn), &wit.SizeError{Size: int64(len(output)), Limit: g.cfg.Limits.MaxResult})
	}
	return output, nil
}

// Memory returns copies of the plugin's own linear memory and of the Extism kernel's memory
// (the blocks the plugin reads and writes through extism:host/env), for diagnostics and
// tests. The plugin memory is nil until the first call.
func (g *Guest) Memory() (plugin, kernel []byte) {
	g.mu.Lock()
	defer g.mu.Unlock()
	read := func(m api.Memory) []byte {
		if m == nil {
			return nil
		}
		b, _ := m.Read(0, m.Size())
		return append([]byte(nil), b...)
	}
	return read(g.mem), read(g.plugin.Memory())
}

// Close ends the plugin.
func (g *Guest) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil
	}
	g.closed = true
	return g.plugin.Close(context.Background())
}

// Describe calls describe.
func (g *Guest) Describe(ctx context.Context) (gatekeeper.Vendor, error) {
	var v struct{ DisplayName, URL, Tagline, Description string }
	err := g.call(ctx, "describe", nil, &v)
	return gatekeeper.Vendor{DisplayName: v.DisplayName, URL: v.URL, Tagline: v.Tagline, Description: v.Description}, err
}

// ResourceKinds calls resource_kinds.
func (g *Guest) ResourceKinds(ctx context.Context) ([]gatekeeper.ResourceKind, error) {
	var out []gatekeeper.ResourceKind
	err := g.call(ctx, "resource-kinds", nil, &out)
	return out, err
}

// DescribeResource calls describe_resource.
func (g *Guest) DescribeResource(ctx context.Context, url string) (gatekeeper.Resource, error) {
	var r gatekeeper.Resource
	err := g.call(ctx, "describe-resource", map[string]string{"url": url}, &r)
	return r, err
}

// TypeScriptTypes calls typescript_types.
func (g *Guest) TypeScriptTypes(ctx context.Context) (string, error) {
	var ts string
	err := g.call(ctx, "typescript-types", nil, &ts)
	return ts, err
}

// OpenSession calls open_session.
func (g *Guest) OpenSession(ctx context.Context, url, caller string) (uint64, error) {
	var id uint64
	err := g.call(ctx, "open-session", map[string]string{"url": url, "caller": caller}, &id)
	return id, err
}

// Invoke calls invoke. args must be a JSON array; the output must be JSON.
func (g *Guest) Invoke(ctx context.Context, session uint64, method, args string) (string, error) {
	if !json.Valid([]byte(args)) {
		return "", fmt.Errorf("%s: the arguments are not JSON", method)
	}
	in := struct {
		Session uint64          `json:"session"`
		Method  string          `json:"method"`
		Args    json.RawMessage `json:"args"`
	}{session, method, json.RawMessage(args)}
	var out json.RawMessage
	if err := g.call(ctx, "invoke", in, &out); err != nil {
		return "", err
	}
	return string(out), nil
}

// CloseSession calls close_session.
func (g *Guest) CloseSession(ctx context.Context, session uint64) error {
	return g.call(ctx, "close-session", map[string]uint64{"session": session}, nil)
}

type action struct {
	ID      uint64 `json:"id"`
	Payload string `json:"payload"`
}

// ApplyAction calls apply_action.
func (g *Guest) ApplyAction(ctx context.Context, id uint64, payload string) (string, error) {
	var msg string
	err := g.call(ctx, "apply-action", action{id, payload}, &msg)
	return msg, err
}

// RejectAction calls reject_action.
func (g *Guest) RejectAction(ctx context.Context, id uint64, payload string) error {
	return g.call(ctx, "reject-action", action{id, payload}, nil)
}

// RevertAction calls revert_action.
func (g *Guest) RevertAction(ctx context.Context, id uint64, payload string) (string, error) {
	var msg string
	err := g.call(ctx, "revert-action", action{id, payload}, &msg)
	return msg, err
}
