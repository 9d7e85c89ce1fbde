// Package extism runs gatekeeper packages of format "extism": Extism plugins
// (github.com/extism/go-sdk, on wazero) that implement the connector of
// atelier:gatekeeper/gatekeeper@0.1.0 as plugin functions with JSON input and output, and
// reach the outside only through host functions in the namespace extism:host/user that apply
// the same rules as the component imports: fetch goes through outboundhttp.Client with the
// instance's Policy, observations and actions go to the instance's approvals.Sink, kv to its
// store, log to its console. Extism's own HTTP is never reachable, and credentials never
// enter plugin memory.
//
// Engine.Install validates a package before anything runs (imports, exports) and returns a
// *gatekeeper.Gatekeeper, so the kernel starts, calls and queues actions of both formats
// alike.
//
// Plugin functions (input -> output, all JSON; an error is set with Extism's error_set):
//
//	describe           -> {displayName, url, tagline, description}
//	resource_kinds     -> [{kind, title, description}]
//	describe_resource  {url} -> {url, title, snippet, suggestedBindingName}
//	typescript_types   -> "declarations"
//	open_session       {url, caller} -> session number
//	invoke             {session, method, args: [...]} -> any JSON value
//	close_session      {session}
//	apply_action       {id, payload} -> "message"
//	reject_action      {id, payload}
//	revert_action      {id, payload} -> "message"
//
// A package whose manifest lists hooks (world atelier:gatekeeper/gatekeeper-with-hooks) also
// exports the hook functions (the `hooks` interface; hook is {id, event, params, url,
// secret: base64}; a payload is any JSON value, null or no output for none):
//
//	hook_subscribe     {session, hook}
//	hook_unsubscribe   {session, hook}
//	hook_receive       {session, hook, headers: [{name, value}], body: base64} -> payload
//	hook_poll          {session, hook} -> payload
//
// Host functions (extism:host/user, each (i64 block) -> i64 block; the answer is
// {"ok": value} or {"error": {"kind", "message"}}):
//
//	fetch                  {method, url, headers: [{name, value}], body: base64}
//	                       -> {status, headers, body: base64}; kinds denied, invalid, too-large, failed
//	authorize_observation  {title, description} -> null; kind refused
//	submit_action          {title, description, kind: {tag, label}, autoApprovable,
//	                        implementsRevert, payload} -> action number; kind refused
//	kv_get                 {key} -> {value: base64} or null
//	kv_set                 {key, value: base64} -> null
//	kv_delete              {key} -> null
//	log                    {level, message} -> null
package extism

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"

	"atelier/host/capability/kv"
	"atelier/host/capability/outboundhttp"
	"atelier/host/gatekeeper"
)

// Options configure an Engine.
type Options struct {
	// Egress configures the outbound HTTP client (limits, AllowAddrs), as for components.
	Egress outboundhttp.Options
	// KV bounds keys and values of the kv host functions.
	KV kv.Limits
	// CacheDir, when set, keeps compiled plugins on disk across processes; otherwise they are
	// cached in memory for the Engine's lifetime.
	CacheDir string
}

// Engine installs and runs Extism gatekeeper packages. It is safe for concurrent use.
type Engine struct {
	client *outboundhttp.Client
	kv     kv.Limits
	cache  wazero.CompilationCache
}

// New returns an Engine.
func New(opts Options) (*Engine, error) {
	client, err := outboundhttp.NewClient(opts.Egress)
	if err != nil {
		return nil, err
	}
	cache := wazero.NewCompilationCache()
	if opts.CacheDir != "" {
		if cache, err = wazero.NewCompilationCacheWithDir(opts.CacheDir); err != nil {
			return nil, fmt.Errorf("extism: compilation cache: %w", err)
		}
	}
	return &Engine{client: client, kv: opts.KV, cache: cache}, nil
}

// Close releases the compilation cache; close installed gatekeepers first.
func (e *Engine) Close() error { return e.cache.Close(context.Background()) }

// Exports are the plugin functions a gatekeeper plugin must export, each taking no
// parameters and returning an i32 (Extism's convention: 0 is success).
var Exports = []string{
	"describe", "resource-kinds", "describe-resource", "typescript-types", "open-session",
	"invoke", "close-session", "apply-action", "reject-action", "revert-action",
}

// HookExports are the plugin functions of the hooks interface, required when the manifest
// lists hooks.
var HookExports = []string{"hook-subscribe", "hook-unsubscribe", "hook-receive", "hook-poll"}

// exportName is the plugin function of a connector function: "open-session" -> "open_session".
func exportName(fn string) string { return strings.ReplaceAll(fn, "-", "_") }

// HostFunctions are the functions Atelier defines in extism:host/user.
var HostFunctions = []string{
	"fetch", "authorize_observation", "submit_action", "kv_get", "kv_set", "kv_delete", "log",
}

// kernelImports are the functions of Extism's kernel (extism:host/env) a plugin may import:
// moving bytes between memories, input, output, errors and logging. Extism's HTTP, config
// and vars are not among them.
var kernelImports = []string{
	"alloc", "free", "length", "length_unsafe", "load_u8", "load_u64", "store_u8", "store_u64",
	"input_length", "input_offset", "input_load_u8", "input_load_u64", "output_set",
	"output_length", "output_offset", "error_set", "error_get", "memory_bytes", "reset",
	"log_trace", "log_debug", "log_info", "log_warn", "log_error", "get_log_level",
}

// wasiImports are the WASI preview 1 functions a plugin may import: the harmless baseline of
// arguments and environment (both empty), clocks, random, stdio into the console, and the
// calls a language runtime makes while finding it has no files. No filesystem, no sockets.
var wasiImports = []string{
	"args_get", "args_sizes_get", "environ_get", "environ_sizes_get", "clock_res_get",
	"clock_time_get", "random_get", "sched_yield", "poll_oneoff", "proc_exit", "fd_write",
	"fd_read", "fd_close", "fd_seek", "fd_fdstat_get", "fd_fdstat_set_flags", "fd_prestat_get",
	"fd_prestat_dir_name",
}

// allowedImports maps each module a plugin may import from to its allowed names.
var allowedImports = map[string][]string{
	"extism:host/env":        kernelImports,
	"extism:host/user":       HostFunctions,
	"wasi_snapshot_preview1": wasiImports,
}

// Install validates an extism package and installs it: the module must compile, import only
// the allowed functions (Extism's kernel without its HTTP, config and vars; the host
// functions; the WASI baseline) and no memory, and export every plugin
// function. Then, as for components, the resource kinds the plugin reports must be the
// manifest's (gatekeeper.InstallCode).
func (e *Engine) Install(ctx context.Context, p *gatekeeper.Package) (*gatekeeper.Gatekeeper, error) {
	if f := p.Manifest.PackageFormat(); f != gatekeeper.FormatExtism {
		return nil, fmt.Errorf("install %s: %w: the package format is %s, not %s", p, gatekeeper.ErrNotPlugin, f, gatekeeper.FormatExtism)
	}
	hooks, err := e.check(ctx, p.Wasm, &p.Manifest)
	if err != nil {
		return nil, fmt.Errorf("install %s: %w", p, err)
	}
	return gatekeeper.InstallCode(ctx, p, &code{e: e, wasm: p.Wasm, hooks: hooks})
}

// check compiles wasm (filling the cache for Start) and checks its imports and exports (the
// hook functions too when m names the hooks world or lists hooks). It reports whether the
// plugin exports the hook functions.
func (e *Engine) check(ctx context.Context, wasm []byte, m *gatekeeper.Manifest) (hooks bool, err error) {
	rt := wazero.NewRuntimeWithConfig(ctx, e.runtimeConfig())
	defer rt.Close(ctx)
	mod, err := rt.CompileModule(withMemoryListener(ctx), wasm)
	if err != nil {
		return false, fmt.Errorf("%w: %v", gatekeeper.ErrNotPlugin, err)
	}
	var excess []string
	for _, f := range mod.ImportedFunctions() {
		module, name, _ := f.Import()
		if !slices.Contains(allowedImports[module], name) {
			excess = append(excess, fmt.Sprintf("function %s.%s", module, name))
		}
	}
	for _, mem := range mod.ImportedMemories() {
		module, name, _ := mem.Import()
		excess = append(excess, fmt.Sprintf("memory %s.%s", module, name))
	}
	if len(excess) > 0 {
		return false, fmt.Errorf("%w: the plugin imports %s (allowed: Extism's kernel functions without HTTP, config and vars; extism:host/user %s; the WASI baseline)",
			gatekeeper.ErrExcessImports, strings.Join(excess, ", "), strings.Join(HostFunctions, ", "))
	}
	exports := mod.ExportedFunctions()
	missingOf := func(fns []string) []string {
		var missing []string
		for _, fn := range fns {
			def := exports[exportName(fn)]
			if def == nil || len(def.ParamTypes()) != 0 || !slices.Equal(def.ResultTypes(), []api.ValueType{api.ValueTypeI32}) {
				missing = append(missing, exportName(fn))
			}
		}
		return missing
	}
	if missing := missingOf(Exports); len(missing) > 0 {
		return false, fmt.Errorf("%w %s: the plugin does not export (or exports with another type than () -> i32) %s",
			gatekeeper.ErrWorldMismatch, gatekeeper.World, strings.Join(missing, ", "))
	}
	missing := missingOf(HookExports)
	if len(missing) > 0 && (m.World == gatekeeper.WorldWithHooks || len(m.Hooks) > 0) {
		return false, fmt.Errorf("%w %s: the manifest declares hooks but the plugin does not export (or exports with another type than () -> i32) %s",
			gatekeeper.ErrWorldMismatch, gatekeeper.WorldWithHooks, strings.Join(missing, ", "))
	}
	return len(missing) == 0, nil
}

// runtimeConfig is the wazero configuration of every plugin runtime: the shared compilation
// cache, and calls that end when their context does (Limits.Timeout).
func (e *Engine) runtimeConfig() wazero.RuntimeConfig {
	return wazero.NewRuntimeConfig().WithCompilationCache(e.cache).WithCloseOnContextDone(true)
}
