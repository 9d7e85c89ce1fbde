package kernel_test

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atelier/capnweb"
	"atelier/sdk/guesttest"
)

// agentScope is createAgent's scope for one workspace.
func agentScope(ws, role string, gadgets ...string) map[string]any {
	return map[string]any{"workspaces": map[string]any{ws: map[string]any{"role": role, "gadgets": gadgets}}}
}

// codeWorkspace makes ada's workspace "home" with the Go counter and the JS-class to-do list,
// and a second workspace "other" with a gadget "secret"; it returns home and its id.
func codeWorkspace(t *testing.T, ada *capnweb.Stub) (*capnweb.Promise, string) {
	t.Helper()
	ws, id, _ := home(t, ada)
	await(t, ws.Call(ctx, "createGadget", "todo-list", jsFiles(t, todoJSGadget), jsGrants))
	other := ada.Call(ctx, "createWorkspace", "other")
	await(t, other.Call(ctx, "createGadget", "secret", guesttest.Bytes(t, counterGo), counterGrants))
	return ws, id
}

// run calls executeCode and returns its result object.
func run(t *testing.T, ws *capnweb.Promise, code string, opts ...map[string]any) map[string]any {
	t.Helper()
	args := []any{code}
	for _, o := range opts {
		args = append(args, o)
	}
	return await(t, ws.Call(ctx, "executeCode", args...)).(map[string]any)
}

func TestExecuteCodeCallsTwoGadgets(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := codeWorkspace(t, s.user(t, "ada"))
	res := run(t, ws, `export default async function (env) {
  const n = await env.counter.increment(2);
  const item = await env.todoList.add("from a snippet");
  console.log("counter at", n);
  console.warn("careful");
  return { n, item, keys: Object.keys(env).sort() };
}`)
	want := map[string]any{"n": float64(3), "item": todoItem(1, "from a snippet", false), "keys": []any{"counter", "todoList"}}
	if !reflect.DeepEqual(res["value"], want) || res["error"] != nil {
		t.Fatalf("result = %v, want value %v", res, want)
	}
	wantConsole := []any{map[string]any{"level": "info", "text": "counter at 3"}, map[string]any{"level": "warn", "text": "careful"}}
	if !reflect.DeepEqual(res["console"], wantConsole) {
		t.Fatalf("console = %v", res["console"])
	}

	// TypeScript, a thrown error with its console, and a gadget error as a rejected promise.
	res = run(t, ws, "export default async function (env: any): Promise<number> {\n  console.log('before');\n  throw new RangeError('nope');\n}", map[string]any{"typescript": true})
	if e, _ := res["error"].(map[string]any); e["name"] != "RangeError" || e["message"] != "nope" || !strings.Contains(e["stack"].(string), "snippet.ts:3") {
		t.Fatalf("thrown error = %v", res)
	}
	if len(res["console"].([]any)) != 1 {
		t.Fatalf("console of a failed snippet = %v", res["console"])
	}
	res = run(t, ws, `export default async function (env) {
  try { await env.todoList.toggle(99); } catch (e) { return String(e.message ?? e); }
}`)
	if v, _ := res["value"].(string); !strings.Contains(v, "no todo with id 99") {
		t.Fatalf("gadget error seen by the snippet = %v", res)
	}
	refused(t, ws.Call(ctx, "executeCode", ""), "INVALID_ARGUMENT", "want 1 to")
	refused(t, ws.Call(ctx, "executeCode", "x", map[string]any{"timeoutMs": 600000}), "INVALID_ARGUMENT", "timeoutMs")
}

func TestExecuteCodeTimeout(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := codeWorkspace(t, s.user(t, "ada"))
	res := run(t, ws, `export default async function (env) { console.log("spinning"); for (;;) {} }`, map[string]any{"timeoutMs": 200})
	if e, _ := res["error"].(map[string]any); e["name"] != "Stopped" || !strings.Contains(e["message"].(string), "deadline") {
		t.Fatalf("result of an endless loop = %v", res)
	}
	if got := run(t, ws, `export default async (env) => env.counter.get()`)["value"]; got != float64(1) {
		t.Fatalf("after a stopped snippet, get() = %v", got)
	}
}

// TestExecuteCodeEscapes tries to reach what the caller was not handed: a gadget of another
// workspace, a stub kept from an earlier snippet, gadgets outside an agent's scope.
func TestExecuteCodeEscapes(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ada := s.user(t, "ada")
	ws, id := codeWorkspace(t, ada)

	res := run(t, ws, `export default async function (env) {
  const tries = [];
  for (const name of ["secret", "other", "counter-go", "__proto__", "constructor"]) {
    try { await env[name].increment(1); tries.push(name + ": called"); } catch (e) { tries.push(name + ": " + e.name); }
  }
  return tries;
}`)
	for _, r := range res["value"].([]any) {
		if strings.HasSuffix(r.(string), "called") {
			t.Fatalf("a snippet reached a gadget that is not its binding: %v", res["value"])
		}
	}
	other := await(t, ada.Call(ctx, "listWorkspaces")).([]any)
	for _, w := range other {
		if w.(map[string]any)["name"] == "other" {
			app := ada.Call(ctx, "openWorkspace", w.(map[string]any)["id"]).Call(ctx, "gadget", "secret").Call(ctx, "connect")
			if got := await(t, app.Call(ctx, "get")); got != float64(0) {
				t.Fatalf("secret = %v after the snippet, want 0", got)
			}
		}
	}

	// A stub stashed on the global object does not outlive its snippet: each runs in a fresh
	// sandbox, and the bindings it was handed are revoked when it ends.
	run(t, ws, `export default async function (env) { globalThis.kept = env.counter; Object.prototype.kept = env.counter; return 1 }`)
	res = run(t, ws, `export default async function (env) { return [typeof globalThis.kept, typeof ({}).kept] }`)
	if !reflect.DeepEqual(res["value"], []any{"undefined", "undefined"}) {
		t.Fatalf("a second snippet saw the first one's stash: %v", res)
	}
	// A call started but not awaited before the snippet returns cannot run after it ended.
	res = run(t, ws, `export default async function (env) { env.counter.increment(100).catch(() => {}); return "done" }`)
	if got := run(t, ws, `export default async (env) => env.counter.get()`)["value"]; got != float64(1) && got != float64(101) {
		t.Fatalf("counter = %v", got)
	}

	// An agent sees only its scope, with its role, and is audited with its owner.
	ag := await(t, ada.Call(ctx, "createAgent", "helper", agentScope(id, "use", "counter"))).(map[string]any)
	bot := s.dial(t).Call(ctx, "authenticate", ag["token"])
	bws := bot.Call(ctx, "openWorkspace", id)
	res = run(t, bws, `export default async function (env) { return { keys: Object.keys(env), n: await env.counter.increment(1) } }`)
	if v := res["value"].(map[string]any); !reflect.DeepEqual(v["keys"], []any{"counter"}) {
		t.Fatalf("the agent's env = %v, want only counter", res)
	}
	bindings := await(t, bws.Call(ctx, "listBindings")).([]any)
	if len(bindings) != 1 || bindings[0].(map[string]any)["gadget"] != "counter" {
		t.Fatalf("agent listBindings = %v", bindings)
	}
	refused(t, bws.Call(ctx, "describeBinding", "todoList"), "NOT_FOUND", `no binding "todoList"`)
	log := await(t, ws.Call(ctx, "auditLog", 5)).([]any)
	if e := log[0].(map[string]any); e["actor"] != "ada/agent:helper" || e["action"] != "code.execute" || !strings.Contains(e["detail"].(string), "counter.increment x1") {
		t.Fatalf("newest audit entry = %v", e)
	}

	// Revoking the agent cuts its Code Mode too.
	await(t, ada.Call(ctx, "revokeAgent", ag["id"]))
	refused(t, bws.Call(ctx, "executeCode", `export default async () => 1`), "UNAUTHORIZED", "revoked")
}

func TestDescribeBinding(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws, _ := codeWorkspace(t, s.user(t, "ada"))
	await(t, ws.Call(ctx, "createGadget", "todo-wasm", guesttest.Bytes(t, todoJS), todoGrants))
	bindings := await(t, ws.Call(ctx, "listBindings")).([]any)
	names := []string{}
	for _, b := range bindings {
		names = append(names, b.(map[string]any)["name"].(string))
	}
	if !reflect.DeepEqual(names, []string{"counter", "todoList", "todoWasm"}) {
		t.Fatalf("bindings = %v", bindings)
	}
	decl := await(t, ws.Call(ctx, "describeBinding", "todoWasm")).(string)
	for _, want := range []string{
		"declare const todoWasm: {",
		"toggle(id: number): Promise<{ id: number; title: string; done: boolean }>;",
		"@throws string",
		"list(): Promise<Array<{ id: number; title: string; done: boolean }>>;",
	} {
		if !strings.Contains(decl, want) {
			t.Errorf("describeBinding(todoWasm) lacks %q:\n%s", want, decl)
		}
	}
	if decl := await(t, ws.Call(ctx, "describeBinding", "counter")).(string); !strings.Contains(decl, "increment(by: number): Promise<number>;") {
		t.Errorf("describeBinding(counter):\n%s", decl)
	}
	if decl := await(t, ws.Call(ctx, "describeBinding", "todoList")).(string); !strings.Contains(decl, "add(...args: unknown[]): Promise<unknown>;") {
		t.Errorf("describeBinding(todoList):\n%s", decl)
	}
}

// TestExecuteCodeStartsNoInstance: binding a component gadget learns its methods from its
// compiled code; only a call starts its instance.
func TestExecuteCodeStartsNoInstance(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	await(t, ws.Call(ctx, "createGadget", "counter", guesttest.Bytes(t, counterGo), counterGrants))
	res := run(t, ws, "export default async (env) => Object.keys(env.counter).includes('increment')")
	if res["value"] != true {
		t.Fatalf("result = %v, want the counter's methods in env", res)
	}
	if n := s.k.Stats().Actors; n != 0 {
		t.Fatalf("%d gadget instances after a snippet that called none; want 0", n)
	}
	if res := run(t, ws, "export default async (env) => env.counter.increment(5)"); res["value"] != float64(5) {
		t.Fatalf("result = %v, want 5", res)
	}
	if n := s.k.Stats().Actors; n != 1 {
		t.Fatalf("%d gadget instances after a call; want 1", n)
	}
}
