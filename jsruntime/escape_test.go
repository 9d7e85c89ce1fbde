package jsruntime_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/host/runtime"
	"atelier/jsruntime"
)

// Each escape must fail with a clear error, and the engine must run the next snippet normally.
func TestEscapesFail(t *testing.T) {
	c := &calc{}
	env := jsruntime.Env{Bindings: map[string]jsruntime.Binding{"calc": c}}
	lim := jsruntime.Limits{Timeout: 300 * time.Millisecond, Memory: 16 << 20}
	for _, tc := range []struct {
		name, body string
		// want is matched against the error text; stopped wants ErrStopped (of that kind).
		want    string
		stopped error
	}{
		{name: "fetch", body: `await fetch("https://example.com")`, want: "ReferenceError: 'fetch' is not defined"},
		{name: "WebAssembly", body: `WebAssembly.compile(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))`, want: "ReferenceError: 'WebAssembly' is not defined"},
		{name: "dynamic import", body: `await import("os")`, want: "ReferenceError: cannot import 'os': a snippet can import nothing"},
		{name: "dynamic import of a file", body: `await import("/etc/passwd")`, want: "cannot import '/etc/passwd'"},
		{name: "std module global", body: `std.loadFile("/etc/passwd")`, want: "ReferenceError: 'std' is not defined"},
		{name: "os module global", body: `os.open("/etc/passwd")`, want: "ReferenceError: 'os' is not defined"},
		{name: "require", body: `require("fs")`, want: "ReferenceError: 'require' is not defined"},
		{name: "infinite loop", body: `for (;;) {}`, want: "ran past its deadline", stopped: runtime.ErrDeadline},
		{name: "infinite async loop", body: `for (;;) await null`, want: "ran past its deadline", stopped: runtime.ErrDeadline},
		{name: "catastrophic regex", body: `return /^(a+)+$/.test("a".repeat(64) + "!")`, want: "ran past its deadline", stopped: runtime.ErrDeadline},
		{name: "memory bomb", body: `const a = []; for (;;) a.push(new Array(1e6).fill(a.length))`, want: "InternalError: out of memory"},
		{name: "string bomb", body: `let s = "x"; for (;;) s += s`, want: "InternalError: string too long"},
		{name: "buffer bomb", body: `const a = []; for (;;) a.push(new ArrayBuffer(1 << 20))`, want: "out of memory"},
		{name: "deep recursion", body: `function f(n) { return f(n + 1) + 1 } return f(0)`, want: "InternalError: stack overflow"},
		{name: "deep recursion through toString", body: `const o = {}; o.toString = () => String(o); return String(o)`, want: "stack overflow"},
		{name: "nested JSON", body: `return JSON.parse("[".repeat(1e6))`, want: "stack overflow"},
		{name: "env tampering", body: `env.calc.add = () => 0`, want: "TypeError"},
		{name: "env redefinition", body: `Object.defineProperty(env, "calc", {value: {}})`, want: "TypeError"},
		{name: "env addition", body: `env.other = 1`, want: "TypeError"},
		{name: "binding of another workspace", body: `return await env.other.read()`, want: `TypeError: env has no binding "other"; the bindings are: calc (see listBindings)`},
		{name: "method not granted", body: `return await env.calc.secret()`, want: `TypeError: env.calc has no method "secret"; its methods are: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "export default async function (env, ctx) { " + tc.body + " }"
			// A case that wants the deadline gets a short one; the others get room to fail on
			// their own (out of memory, stack overflow) on a loaded machine.
			lim := lim
			if tc.stopped == nil {
				lim.Timeout = 10 * time.Second
			}
			_, err := engine(t).ExecuteCode(context.Background(), jsruntime.Code{Source: src}, env, lim)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
			if tc.stopped != nil && (!errors.Is(err, jsruntime.ErrStopped) || !errors.Is(err, tc.stopped)) {
				t.Fatalf("got %v, want ErrStopped and %v", err, tc.stopped)
			}
			checkHealthy(t, env)
		})
	}
}

// checkHealthy runs a normal snippet, which must see a clean world.
func checkHealthy(t *testing.T, env jsruntime.Env) {
	t.Helper()
	res, err := engine(t).ExecuteCode(context.Background(), jsruntime.Code{Source: `export default async function (env) {
		return [await env.calc.add(2, 3), ({}).polluted, typeof globalThis.saved, [].evil, JSON.stringify({a: 1})]
	}`}, env, jsruntime.Limits{})
	want := []any{5.0, nil, "undefined", nil, `{"a":1}`}
	if err != nil || !reflect.DeepEqual(res.Value, want) {
		t.Fatalf("the next snippet: got %#v, %v; want %#v", res.Value, err, want)
	}
}

// A snippet that keeps stubs and pollutes every prototype it can reach affects only itself.
func TestEscapeRetainedStubsAndTampering(t *testing.T) {
	c := &calc{}
	env := jsruntime.Env{Bindings: map[string]jsruntime.Binding{"calc": c}}
	res := mustRun(t, `export default async function (env) {
		globalThis.saved = env.calc;
		const keep = env.calc.add;
		globalThis.later = () => keep(1, 1);
		Object.prototype.polluted = "yes";
		Array.prototype.evil = "yes";
		JSON.stringify = () => "hijacked";
		JSON.parse = () => "hijacked";
		Promise.resolve = () => "hijacked";
		Function.prototype.call = () => "hijacked";
		Object.freeze = (o) => o;
		// the stub still carries exactly the arguments given, and the result is the host's
		const sum = await env.calc.add(40, 2);
		return {sum, polluted: ({}).polluted};
	}`, env)
	want := map[string]any{"sum": 42.0, "polluted": "yes"}
	if !reflect.DeepEqual(res.Value, want) {
		t.Fatalf("got %#v, want %#v", res.Value, want)
	}
	// the Go side received numbers, not "hijacked"
	if c.calls[len(c.calls)-1] != "add[40 2]" {
		t.Fatalf("calls %v", c.calls)
	}
	checkHealthy(t, env)

	// toJSON on every object makes the arguments unreadable: the host refuses them, and the
	// error still reaches the caller intact.
	_, err := run(t, `export default async function (env) {
		Object.prototype.toJSON = function () { return "hijacked" };
		await env.calc.add(1, 2);
	}`, env)
	var je *jsruntime.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, "arguments must be a JSON array") {
		t.Fatalf("got %v", err)
	}
	checkHealthy(t, env)
}
