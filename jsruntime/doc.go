// Package jsruntime runs JavaScript (and TypeScript) inside the same component sandbox as
// every gadget: QuickJS compiled to WebAssembly, embedded in the binary, run by host/runtime
// with grants, limits and capabilities like any component. It serves two uses:
//
//   - Code Mode: Engine.ExecuteCode runs an agent's snippet (`export default async function
//     (env, ctx) { ... }`) in a fresh instance per call, whose env holds only the bindings it
//     is handed; it returns the value and the console output, and revokes every binding when
//     it returns.
//   - JS gadgets: Engine.NewGadget makes a gadget from files whose server.js exports `class
//     Gadget`. Its public methods are the RPC surface, `this.storage` is its durable state
//     (through atelier:host/kv, JSON values), `this.events.publish` publishes (atelier:host/
//     events) and `this.env.NAME.method(...)` calls bindings (atelier:host/bindings). One live
//     instance per gadget; a call stopped by a limit replaces it, state intact.
//
// # Use
//
//	eng, err := jsruntime.New(ctx, rt) // rt provides log, kv, events and bindings
//	res, err := eng.ExecuteCode(ctx, jsruntime.Code{Source: src}, jsruntime.Env{
//		Bindings: map[string]jsruntime.Binding{"notes": notesStub},
//	}, jsruntime.Limits{Timeout: 5 * time.Second})
//	fmt.Println(res.Value, res.Console)
//
//	g, err := eng.NewGadget(jsruntime.GadgetConfig{Name: id, Files: files,
//		Grants: jsruntime.GadgetGrants(), Bind: bind, Console: console})
//	methods, err := g.Methods(ctx)
//	v, err := g.Call(ctx, "increment", 2)
//
// # The engine
//
// engine/engine.c wraps QuickJS behind the canonical ABI of the worlds in wit/js/js.wit, by
// hand; engine/glue.js is the JavaScript half (console, env stubs, storage, the gadget class).
// Two components are built from them: engine/snippet.wasm (imports atelier:host/log and
// bindings, exports `run`) and engine/gadget.wasm (imports log, kv, events and bindings,
// exports `load` and `call`). Neither imports WASI: there are no files, sockets, environment,
// `fetch`, `WebAssembly`, timers or module loading (an import of anything fails with "a
// snippet can import nothing"; a gadget imports only its own files). The clock shows the
// call's start time and does not advance while JavaScript runs.
//
// build.sh rebuilds both from pinned inputs (see there) and `build.sh --check` proves the
// build reproducible: two builds in fresh folders are byte-identical to the committed files.
// Wizer snapshots each engine after it started QuickJS and evaluated glue.js, so a fresh
// instance is a copy-on-write mapping of that memory: per call only the limits, the stack top,
// the clock and the Math.random seed are set.
//
// # Why QuickJS 2025 with our own glue, not componentize-qjs
//
// Both were measured (shared/notes/toolchains.md). npm componentize-qjs 0.4.5 (QuickJS-NG with
// a Wizer snapshot) instantiates fast, but its output differs between identical builds (a
// random seed baked into the snapshot), it sets no QuickJS memory or stack limit and has no
// console, and its engine is not ours to change. QuickJS 2025-04-26 from Debian's source
// package with our own C glue gives: a reproducible build from pinned sources (sha256-checked)
// and Debian's clang; a JS heap limit whose overrun is a catchable "out of memory" that leaves
// the instance usable; a JS stack limit inside a wasm stack linked first, so deep recursion is
// a catchable "stack overflow" and a C-level overflow traps instead of corrupting memory; no
// WASI at all, so the audit of the engine lists only atelier:host interfaces; and per-call
// time and seed. The cost of a fresh QuickJS (0.37-0.5 ms in the prototype) is removed by the
// same Wizer snapshot technique componentize-qjs uses.
//
// # Limits
//
// Limits.Timeout bounds each engine call through the runtime's epoch deadline: an infinite
// loop or a catastrophic regexp is stopped and reported as ErrStopped (with
// runtime.ErrDeadline); the instance is discarded. Limits.Memory is the QuickJS heap limit;
// the instance's linear memory is capped a little above it as a backstop. Limits.Stack bounds
// the JS stack. Errors thrown by JavaScript are *Error values with the stack's positions
// (file:line:column) in the source as written: TypeScript is stripped by esbuild with a source
// map, and positions are mapped back.
//
// # Trust boundaries
//
// The snippet's env is built by the engine from the Go Env (frozen, null-prototype objects)
// and the C functions behind the imports live only in glue.js's closure. Whatever a snippet
// does to its own globals and prototypes stays in its own instance, which is discarded. On the
// Go side each ExecuteCode hands its instance a scope (the bindings.Caller) that resolves only
// the Env's bindings and their listed methods, and that is revoked when ExecuteCode returns.
package jsruntime
