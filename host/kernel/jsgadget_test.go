package kernel_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/host/kernel"
	"atelier/sdk/guesttest"
)

// jsGrants are the grants a JS gadget needs (jsruntime.GadgetGrants).
var jsGrants = []string{"atelier:host/kv", "atelier:host/log", "atelier:host/events", "atelier:host/bindings"}

// jsFiles reads a JS gadget's folder as the {filename: source} object createGadget takes.
func jsFiles(t testing.TB, dir string) map[string]any {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("..", "..", dir))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]any{}
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".js") || strings.HasSuffix(n, ".ts") {
			b, err := os.ReadFile(filepath.Join("..", "..", dir, n))
			if err != nil {
				t.Fatal(err)
			}
			files[n] = string(b)
		}
	}
	return files
}

const todoJSGadget = "gadgets/todo-jsgadget"

func todoItem(id int, title string, done bool) map[string]any {
	return map[string]any{"id": float64(id), "title": title, "done": done}
}

// TestJSGadgetLikeComponent deploys the JS-class to-do list and drives it as the component
// ones are driven: calls, events, console, inspect, a new version with the state kept, and a
// rollback to the component version.
func TestJSGadgetLikeComponent(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"))
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	refused(t, ws.Call(ctx, "createGadget", "todo", jsFiles(t, todoJSGadget), todoGrants), "INVALID_ARGUMENT", "needs the grant atelier:host/bindings")
	refused(t, ws.Call(ctx, "createGadget", "todo", map[string]any{"main.js": "export class Gadget {}"}, jsGrants), "INVALID_ARGUMENT", "no server.js")
	refused(t, ws.Call(ctx, "createGadget", "todo", map[string]any{"server.js": "export class Nope {}"}, jsGrants), "INVALID_ARGUMENT", "must export class Gadget")
	refused(t, ws.Call(ctx, "createGadget", "todo", map[string]any{"../server.js": "export class Gadget {}"}, jsGrants), "INVALID_ARGUMENT", "flat name")
	refused(t, ws.Call(ctx, "createGadget", "todo", map[string]any{"server.js": 42}, jsGrants), "INVALID_ARGUMENT", "as a string")

	// The component version first, then the JS class as version 2 over the same state.
	todo := ws.Call(ctx, "createGadget", "todo", guesttest.Bytes(t, todoJS), jsGrants)
	app := todo.Call(ctx, "connect")
	await(t, app.Call(ctx, "add", "from the component"))
	events, logs := newCollector(), newCollector()
	await(t, todo.Call(ctx, "subscribe", events.fn))
	await(t, todo.Call(ctx, "logs", logs.fn))
	info := await(t, todo.Call(ctx, "deploy", jsFiles(t, todoJSGadget))).(map[string]any)
	if info["current"] != float64(2) {
		t.Fatalf("deploy: %v", info)
	}
	app = todo.Call(ctx, "connect")
	if got := await(t, app.Call(ctx, "add", "buy milk")); !reflect.DeepEqual(got, todoItem(2, "buy milk", false)) {
		t.Fatalf("add = %v", got)
	}
	if got := await(t, app.Call(ctx, "toggle", 1)); !reflect.DeepEqual(got, todoItem(1, "from the component", true)) {
		t.Fatalf("toggle(1) = %v", got)
	}
	refused(t, app.Call(ctx, "toggle", 99), "GADGET_ERROR", "no todo with id 99")
	refused(t, app.Call(ctx, "_changed", "x", nil), "NOT_FOUND", `no exported function "_changed"`)
	want := []any{todoItem(1, "from the component", true), todoItem(2, "buy milk", false)}
	if got := await(t, app.Call(ctx, "list")); !reflect.DeepEqual(got, want) {
		t.Fatalf("list = %v, want %v", got, want)
	}
	evs := events.wait(t, 2)
	if evs[0]["topic"] != "todos" || !reflect.DeepEqual(evs[1]["payload"], map[string]any{"kind": "toggled", "todo": todoItem(1, "from the component", true)}) {
		t.Fatalf("events = %v", evs)
	}
	if l := logs.wait(t, 1)[0]; l["text"] != "added 2: buy milk" || l["level"] != "info" {
		t.Fatalf("console = %v", l)
	}
	lines := anyStrings(await(t, todo.Call(ctx, "inspect")).([]any))
	if !strings.Contains(strings.Join(lines, "\n"), "export toggle: method") {
		t.Fatalf("inspect = %v", lines)
	}

	// Rolling back to the component keeps the state the JS class wrote.
	await(t, todo.Call(ctx, "rollback", 1))
	app = todo.Call(ctx, "connect")
	if got := await(t, app.Call(ctx, "list")).([]any); len(got) != 2 || got[1].(map[string]any)["title"] != "buy milk" {
		t.Fatalf("list after rollback = %v", got)
	}
}

// TestJSGadgetStoppedCallKeepsState: a call stopped by the deadline discards its writes, and
// the next call runs on a fresh instance with the state intact.
func TestJSGadgetStoppedCallKeepsState(t *testing.T) {
	s := startServer(t, filepath.Join(t.TempDir(), "a.db"), func(c *kernel.Config) { c.Limits.Timeout = 300 * time.Millisecond })
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")
	src := `export class Gadget {
  constructor() { this.n = this.storage.get("n") ?? 0 }
  inc() { this.n++; this.storage.put("n", this.n); return this.n }
  spin() { this.storage.put("n", -1); for (;;) {} }
}`
	app := ws.Call(ctx, "createGadget", "c", map[string]any{"server.js": src}, jsGrants).Call(ctx, "connect")
	await(t, app.Call(ctx, "inc"))
	refused(t, app.Call(ctx, "spin"), "GADGET_ERROR", "deadline")
	if got := await(t, app.Call(ctx, "inc")); got != float64(2) {
		t.Fatalf("inc after a stopped call = %v, want 2", got)
	}
}
