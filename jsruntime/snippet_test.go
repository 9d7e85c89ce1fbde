package jsruntime_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"atelier/jsruntime"
)

// calc is a Binding with a few methods; it records its calls.
type calc struct {
	mu    sync.Mutex
	calls []string
}

func (c *calc) Methods() []string { return []string{"add", "mul", "fail", "echo"} }

func (c *calc) Call(_ context.Context, method string, args []any) (any, error) {
	c.mu.Lock()
	c.calls = append(c.calls, fmt.Sprint(method, args))
	c.mu.Unlock()
	switch method {
	case "add":
		return args[0].(float64) + args[1].(float64), nil
	case "mul":
		return args[0].(float64) * args[1].(float64), nil
	case "fail":
		return nil, fmt.Errorf("calc refused %v", args[0])
	case "echo":
		return args, nil
	}
	return nil, fmt.Errorf("no method %s", method)
}

func run(t *testing.T, src string, env jsruntime.Env) (jsruntime.Result, error) {
	t.Helper()
	return engine(t).ExecuteCode(context.Background(), jsruntime.Code{Source: src}, env, jsruntime.Limits{Timeout: 2 * time.Second})
}

func mustRun(t *testing.T, src string, env jsruntime.Env) jsruntime.Result {
	t.Helper()
	res, err := run(t, src, env)
	if err != nil {
		t.Fatalf("%s\n-> %v", src, err)
	}
	return res
}

func TestExecuteCodeValues(t *testing.T) {
	for _, tc := range []struct {
		body string
		want any
	}{
		{`return 42`, 42.0},
		{`return 0.5`, 0.5},
		{`return "héllo ✓"`, "héllo ✓"},
		{`return null`, nil},
		{`return undefined`, nil},
		{`return`, nil},
		{`return true`, true},
		{`return [1, "a", null, [2]]`, []any{1.0, "a", nil, []any{2.0}}},
		{`return {a: 1, b: {c: [true]}, f() {}}`, map[string]any{"a": 1.0, "b": map[string]any{"c": []any{true}}}},
		{`return await Promise.resolve(7)`, 7.0},
		{`return new Map([[1, 2]]).size + new Set([1, 1]).size`, 2.0},
		{`return "\uD800x"`, "\ufffdx"}, // a lone surrogate cannot cross as UTF-8; JSON escapes it
	} {
		src := "export default async function (env, ctx) { " + tc.body + " }"
		res := mustRun(t, src, jsruntime.Env{})
		if !reflect.DeepEqual(res.Value, tc.want) {
			t.Errorf("%s: got %#v, want %#v", tc.body, res.Value, tc.want)
		}
	}
}

func TestExecuteCodeSyncDefault(t *testing.T) {
	res := mustRun(t, `export default function (env, ctx) { return Object.keys(env).length + Object.keys(ctx).length }`, jsruntime.Env{})
	if res.Value != 0.0 {
		t.Fatalf("got %v", res.Value)
	}
}

func TestExecuteCodeConsole(t *testing.T) {
	res := mustRun(t, `export default function () {
		console.log("a", 1, {b: [2]}, null, undefined);
		console.info("i"); console.warn("w"); console.error(new RangeError("bad")); console.debug("d");
		const o = {}; o.self = o; console.log(o);
		console.log("\uDC00");
	}`, jsruntime.Env{})
	want := []jsruntime.Line{
		{Level: "info", Text: `a 1 {"b":[2]} null undefined`},
		{Level: "info", Text: "i"},
		{Level: "warn", Text: "w"},
		{Level: "error", Text: "RangeError: bad\n    at default (snippet.js:3:69)\n"},
		{Level: "debug", Text: "d"},
		{Level: "info", Text: "[object Object]"},
		{Level: "info", Text: "\ufffd"},
	}
	if !reflect.DeepEqual(res.Console, want) {
		t.Fatalf("console:\n got %#v\nwant %#v", res.Console, want)
	}
}

func TestExecuteCodeConsoleBounded(t *testing.T) {
	res := mustRun(t, `export default function () { for (let i = 0; i < 5000; i++) console.log(i) }`, jsruntime.Env{})
	if len(res.Console) != jsruntime.MaxConsoleLines {
		t.Fatalf("%d lines, want %d", len(res.Console), jsruntime.MaxConsoleLines)
	}
	if last := res.Console[len(res.Console)-1]; !strings.Contains(last.Text, "truncated") {
		t.Fatalf("last line %q", last.Text)
	}
}

func TestExecuteCodeBindings(t *testing.T) {
	c := &calc{}
	env := jsruntime.Env{Bindings: map[string]jsruntime.Binding{"calc": c}}
	res := mustRun(t, `export default async function (env) {
		const a = await env.calc.add(1, 2);
		const pending = env.calc.add(3, 4);               // a promise, used later
		const isPromise = pending instanceof Promise;
		const [b, m] = await Promise.all([pending, env.calc.mul(2, 5)]);
		const doubled = await env.calc.add(5, 5).then((v) => v * 2);
		let err;
		try { await env.calc.fail("x") } catch (e) { err = e.message }
		const echoed = await env.calc.echo({deep: [1, {k: "v"}]}, undefined);
		return {a, b, m, doubled, err, isPromise, echoed, names: Object.keys(env), methods: Object.keys(env.calc)};
	}`, env)
	want := map[string]any{
		"a": 3.0, "b": 7.0, "m": 10.0, "doubled": 20.0, "err": "calc refused x", "isPromise": true,
		"echoed": []any{map[string]any{"deep": []any{1.0, map[string]any{"k": "v"}}}, nil},
		"names":  []any{"calc"}, "methods": []any{"add", "echo", "fail", "mul"},
	}
	if !reflect.DeepEqual(res.Value, want) {
		t.Fatalf("got %#v\nwant %#v", res.Value, want)
	}
	if len(c.calls) != 6 {
		t.Fatalf("calls %v", c.calls)
	}
}

// TestExecuteCodeStrictEnv: a binding or a method that env lacks is named, with what exists,
// while await, JSON and listing still see env as a plain object.
func TestExecuteCodeStrictEnv(t *testing.T) {
	env := jsruntime.Env{Bindings: map[string]jsruntime.Binding{"calc": &calc{}, "todo": &calc{}}}
	for src, want := range map[string]string{
		`return await env.todo2.list()`: `env has no binding "todo2"; the bindings are: calc, todo (see listBindings)`,
		`return await env.todo.list()`:  `env.todo has no method "list"; its methods are: add, echo, fail, mul`,
	} {
		_, err := run(t, "export default async function (env) { "+src+" }", env)
		var je *jsruntime.Error
		if !errors.As(err, &je) || je.Name != "TypeError" || je.Message != want {
			t.Errorf("%s: got %v, want TypeError %q", src, err, want)
		}
	}
	res := mustRun(t, `export default async function (env) {
		const e = await env, t = await env.todo;
		return {names: Object.keys(e), json: JSON.parse(JSON.stringify(t)), has: "todo2" in env, then: typeof env.then}
	}`, env)
	want := map[string]any{"names": []any{"calc", "todo"}, "json": map[string]any{}, "has": false, "then": "undefined"}
	if !reflect.DeepEqual(res.Value, want) {
		t.Fatalf("got %#v, want %#v", res.Value, want)
	}
}

// TestExecuteCodeStrayPromises: a snippet that returns while promises it started still run
// returns its value; the strays are cancelled and the console says so.
func TestExecuteCodeStrayPromises(t *testing.T) {
	res, err := run(t, `export default async function () {
		(async () => { for (;;) await null })();
		return 42
	}`, jsruntime.Env{})
	if err != nil || res.Value != 42.0 {
		t.Fatalf("got %v, %v; want 42", res.Value, err)
	}
	if len(res.Console) != 1 || res.Console[0].Level != "warn" || !strings.Contains(res.Console[0].Text, "were cancelled") {
		t.Fatalf("console %#v, want one warning that the stray promises were cancelled", res.Console)
	}
}

func TestExecuteCodeErrors(t *testing.T) {
	for _, tc := range []struct {
		src, name, message, at string
	}{
		{"export default function () {\n  null.x\n}", "TypeError", "cannot read property 'x' of null", "snippet.js:2:"},
		{"export default async function () {\n  throw new RangeError('no')\n}", "RangeError", "no", "snippet.js:2:"},
		{"export default async function () {\n  await Promise.reject(new Error('rejected'))\n}", "Error", "rejected", "snippet.js:2:"},
		{"export default function () {\n  return (\n}", "SyntaxError", "", "snippet.js:3:"},
		{"export default function () { throw 'a string' }", "", "uncaught a string", ""},
		{"export const x = 1", "TypeError", "a snippet must export a default function", ""},
		{"export default async function () { await new Promise(() => {}) }", "InternalError", "the promise never settled", ""},
		{"export default function () { return 10n }", "TypeError", "BigInt", ""},
	} {
		_, err := run(t, tc.src, jsruntime.Env{})
		var je *jsruntime.Error
		if !errors.As(err, &je) {
			t.Errorf("%s: got %v (%T), want a *jsruntime.Error", tc.src, err, err)
			continue
		}
		if je.Name != tc.name || !strings.Contains(je.Message, tc.message) || !strings.Contains(je.Stack, tc.at) {
			t.Errorf("%s:\n got %#v\nwant name %q, message containing %q, stack containing %q", tc.src, je, tc.name, tc.message, tc.at)
		}
		if strings.Contains(je.Stack, "<engine>") {
			t.Errorf("%s: the stack shows engine frames: %q", tc.src, je.Stack)
		}
	}
}

func TestExecuteCodeConsoleKeptOnError(t *testing.T) {
	res, err := run(t, `export default function () { console.log("before"); throw new Error("after") }`, jsruntime.Env{})
	if err == nil || len(res.Console) != 1 || res.Console[0].Text != "before" {
		t.Fatalf("got %#v, %v", res, err)
	}
}

func TestExecuteCodeLimitsValidated(t *testing.T) {
	for _, lim := range []jsruntime.Limits{{Timeout: -1}, {Memory: -1}, {Memory: jsruntime.MaxMemory + 1}, {Stack: jsruntime.MaxStack + 1}} {
		if _, err := engine(t).ExecuteCode(context.Background(), jsruntime.Code{Source: "export default () => 1"}, jsruntime.Env{}, lim); err == nil {
			t.Errorf("%+v: no error", lim)
		}
	}
}

func TestExecuteCodeDateIsTheCallsTime(t *testing.T) {
	before := time.Now().UnixMilli()
	res := mustRun(t, `export default function () { const a = Date.now(); for (let i = 0; i < 1e5; i++); return [a, Date.now()] }`, jsruntime.Env{})
	after := time.Now().UnixMilli()
	v := res.Value.([]any)
	a, b := int64(v[0].(float64)), int64(v[1].(float64))
	if a != b || a < before || a > after {
		t.Fatalf("Date.now() %d, %d; call between %d and %d", a, b, before, after)
	}
}

// Every instance starts from the same snapshot, but Math.random is seeded per instance.
func TestExecuteCodeRandomPerInstance(t *testing.T) {
	src := `export default () => [Math.random(), Math.random()]`
	a := mustRun(t, src, jsruntime.Env{}).Value.([]any)
	b := mustRun(t, src, jsruntime.Env{}).Value.([]any)
	for _, x := range append(a, b...) {
		if f := x.(float64); f < 0 || f >= 1 {
			t.Fatalf("Math.random() = %v", f)
		}
	}
	if a[0] == a[1] || reflect.DeepEqual(a, b) {
		t.Fatalf("sequences %v and %v", a, b)
	}
}

// Snippets run in parallel, each in its own instance with its own env and console.
func TestExecuteCodeParallel(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env := jsruntime.Env{Bindings: map[string]jsruntime.Binding{"calc": &calc{}}}
			src := fmt.Sprintf(`export default async function (env) { console.log(%d); return await env.calc.add(%d, 1) }`, i, i)
			res, err := engine(t).ExecuteCode(context.Background(), jsruntime.Code{Source: src}, env, jsruntime.Limits{})
			if err == nil && (res.Value != float64(i+1) || len(res.Console) != 1 || res.Console[0].Text != fmt.Sprint(i)) {
				err = fmt.Errorf("snippet %d: %#v", i, res)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
