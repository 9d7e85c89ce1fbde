package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/sdk/guesttest"
	capnwebtests "atelier/tests/capnweb"
	"atelier/tests/serveproc"
)

const (
	// scriptTimeout bounds one phase of todo.mjs.
	scriptTimeout = 2 * time.Minute
)

// tmpDir holds this run's binary and compiled-component cache.
var tmpDir string

func TestMain(m *testing.M) { serveproc.Main(m, "e2e", &tmpDir) }

// runScript runs one phase of todo.mjs and logs its step lines.
func runScript(t *testing.T, nodeDir string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	script, err := filepath.Abs("todo.mjs")
	if err != nil {
		t.Fatal(err)
	}
	out, err := capnwebtests.RunNode(ctx, nodeDir, script, args...)
	t.Logf("node todo.mjs %s:\n%s", args[0], out)
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("node todo.mjs %s ran past %v", args[0], scriptTimeout)
	}
	if err != nil {
		t.Fatalf("todo scenario, phase %s, failed:\n%v", args[0], err)
	}
}

// checkCLI logs in with the atelier binary as the user of the scenario and lists the items
// with `atelier gadget call`.
func checkCLI(t *testing.T, bin, api, stateFile string) {
	t.Helper()
	b, err := os.ReadFile(stateFile)
	if err != nil {
		t.Fatal(err)
	}
	var state struct {
		Username, Password, Workspace string
		Items                         []any
	}
	if err := json.Unmarshal(b, &state); err != nil {
		t.Fatalf("state written by todo.mjs: %v", err)
	}
	env := append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir(), "ATELIER_SERVER="+api, "ATELIER_PASSWORD="+state.Password)
	atelier := func(args ...string) []byte {
		cmd := exec.Command(bin, args...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("atelier %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, stderr.String())
		}
		return out
	}
	atelier("login", "--username", state.Username)
	atelier("workspace", "use", state.Workspace)
	var items []any
	out := atelier("gadget", "call", "todo", "list")
	if err := json.Unmarshal(out, &items); err != nil {
		t.Fatalf("atelier gadget call todo list printed %q: %v", out, err)
	}
	if want := append(state.Items, map[string]any{"id": 3.0, "title": "after restart", "done": false}); !reflect.DeepEqual(items, want) {
		t.Fatalf("atelier gadget call todo list = %v, want %v", items, want)
	}
}

// TestTodoRealtimeAcrossRestart deploys each to-do gadget (two components and the JS-class
// gadget) to a real server, checks with two
// official capnweb clients that every change reaches both subscribers, restarts the server on
// the same data file, and checks that the items survived and events still flow, then reads
// them with the atelier CLI.
func TestTodoRealtimeAcrossRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("skipped under -short: builds bin/atelier and the gadgets, and needs node")
	}
	root, err := capnwebtests.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	nodeDir := capnwebtests.NodeDir(root)
	if err := capnwebtests.CheckNode(nodeDir); err != nil {
		t.Fatal(err)
	}
	bin := serveproc.Binary(t, tmpDir)
	for _, dir := range []string{"gadgets/todo-js", "gadgets/todo-go", "gadgets/todo-jsgadget"} {
		t.Run(path.Base(dir), func(t *testing.T) {
			code := filepath.Join(root, dir) // a JS gadget is deployed from its folder
			if dir != "gadgets/todo-jsgadget" {
				code = guesttest.Path(t, dir)
			}
			data := filepath.Join(t.TempDir(), "atelier.db")
			state := filepath.Join(t.TempDir(), "state.json")

			first := serveproc.Start(t, bin, data, filepath.Join(tmpDir, "cache"))
			runScript(t, nodeDir, "setup", first.URL, code, state)
			first.Terminate(t)

			second := serveproc.Start(t, bin, data, filepath.Join(tmpDir, "cache"))
			runScript(t, nodeDir, "check", second.URL, state)
			checkCLI(t, bin, second.URL, state)
			second.Terminate(t)
		})
	}
}
