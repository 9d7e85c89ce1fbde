package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"atelier/sdk/guesttest"
)

// TestExecCommand deploys the JS-class to-do list from its folder and the Go counter, then runs
// a TypeScript snippet that calls both with `atelier exec`.
func TestExecCommand(t *testing.T) {
	counterGo := guesttest.Path(t, "gadgets/counter-go")
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	ok(t, "workspace", "create", "home")
	ok(t, "workspace", "use", "home")
	fails(t, 1, []string{"gadget", "deploy", "todo-list", "../../gadgets/todo-jsgadget", "--grant", "atelier:host/kv,atelier:host/log,atelier:host/events"},
		"needs the grant atelier:host/bindings")
	if out := ok(t, "gadget", "deploy", "todo-list", "../../gadgets/todo-jsgadget/", "--grant",
		"atelier:host/kv,atelier:host/log,atelier:host/events,atelier:host/bindings"); !strings.Contains(out, "Created gadget todo-list version 1") {
		t.Fatalf("deploy of a folder said %q", out)
	}
	ok(t, "gadget", "deploy", "counter", counterGo, "--grant", "atelier:host/kv,atelier:host/log")

	dir := t.TempDir()
	snippet := filepath.Join(dir, "hello.ts")
	src := `export default async function (env: any): Promise<unknown> {
  const item = await env.todoList.add("from exec");
  console.log("added", item.id);
  console.warn("counter at", await env.counter.increment(3));
  return { items: await env.todoList.list(), n: await env.counter.get() };
}`
	if err := os.WriteFile(snippet, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	r := atelier(context.Background(), "", "exec", snippet)
	if r.code != 0 {
		t.Fatalf("exec: exit %d: %s", r.code, r.err)
	}
	var got any
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
		t.Fatalf("exec printed %q: %v", r.stdout, err)
	}
	want := map[string]any{"items": []any{map[string]any{"id": 1.0, "title": "from exec", "done": false}}, "n": 3.0}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("exec result = %v, want %v", got, want)
	}
	if r.err != "added 1\nwarn: counter at 3\n" {
		t.Fatalf("exec console = %q", r.err)
	}

	r = atelier(context.Background(), "export default async (env) => { console.log('x'); throw new Error('boom') }", "exec", "-")
	if r.code != 1 || !strings.Contains(r.err, "x\n") || !strings.Contains(r.err, "Error: boom") {
		t.Fatalf("exec of a throwing snippet: exit %d, stderr %q", r.code, r.err)
	}
	fails(t, 2, []string{"exec"}, "want one file")
}

// TestExecDryRun: --dry-run prints the value, the diff and the dry run's id and changes
// nothing; --commit applies it; --discard drops another; an unknown id is refused.
func TestExecDryRun(t *testing.T) {
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t))
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	ok(t, "workspace", "create", "home")
	ok(t, "workspace", "use", "home")
	ok(t, "gadget", "deploy", "todo-list", "../../gadgets/todo-jsgadget/", "--grant", "atelier:host/kv,atelier:host/log,atelier:host/events,atelier:host/bindings")
	add := `export default async (env) => (await env.todoList.add("maybe")).id`
	count := `export default async (env) => (await env.todoList.list()).length`

	r := atelier(context.Background(), add, "exec", "--dry-run", "-")
	if r.code != 0 || !strings.HasPrefix(r.stdout, "1\n") || !strings.Contains(r.stdout, `+ todo/0000000001 = {"id":1,"title":"maybe","done":false}`) {
		t.Fatalf("exec --dry-run: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.err)
	}
	_, rest, _ := strings.Cut(r.stdout, "dry run ")
	id, _, _ := strings.Cut(rest, " ")
	if r := atelier(context.Background(), count, "exec", "-"); r.stdout != "0\n" {
		t.Fatalf("after the dry run the list holds %q items", r.stdout)
	}
	if out := ok(t, "exec", "--commit", id); !strings.Contains(out, "Committed dry run "+id) {
		t.Fatalf("exec --commit said %q", out)
	}
	if r := atelier(context.Background(), count, "exec", "-"); r.stdout != "1\n" {
		t.Fatalf("after the commit the list holds %q items", r.stdout)
	}
	fails(t, 1, []string{"exec", "--commit", id}, "was committed or discarded")

	r = atelier(context.Background(), add, "exec", "--dry-run", "-")
	_, rest, _ = strings.Cut(r.stdout, "dry run ")
	id, _, _ = strings.Cut(rest, " ")
	if out := ok(t, "exec", "--discard", id); !strings.Contains(out, "Discarded dry run "+id) {
		t.Fatalf("exec --discard said %q", out)
	}
	fails(t, 2, []string{"exec", "--commit", id, "x.js"}, "take no file")
}
