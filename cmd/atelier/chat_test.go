package main

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"atelier/host/agent/provider"
	"atelier/tests/modelserver"
)

// todoServer is the scripted agent's to-do gadget.
const todoServer = `export class Gadget {
  add(title) {
    const id = this.storage.get("next") ?? 1;
    const todo = { id, title, done: false };
    this.storage.put({ next: id + 1, ["todo/" + id]: todo });
    return todo;
  }
  list() {
    return [...this.storage.list({ prefix: "todo/" }).values()];
  }
}
`

// chatAgent is a scripted agent: asked for a to-do gadget it creates one in the chat's draft,
// asked to mark items done it edits it, asked to add an item it runs Code Mode (dry), told a
// tool's result it says so.
func chatAgent(r modelserver.Request) modelserver.Turn {
	last := r.Messages[len(r.Messages)-1]
	switch {
	case last.Role == provider.RoleTool:
		return modelserver.Text("The change waits in the draft.")
	case strings.Contains(last.Text, "add an item"):
		args, _ := json.Marshal(map[string]string{"code": `export default async (env) => env.todo.add("from the agent")`})
		return modelserver.Tools(modelserver.Call("executeCode", string(args)))
	case strings.Contains(last.Text, "to-do gadget"):
		args, _ := json.Marshal(map[string]any{"name": "todo", "files": map[string]string{
			"server.js": todoServer,
			"client.js": "document.body.append(\"to-do\");\n",
		}})
		return modelserver.Tools(modelserver.Call("createGadget", string(args))).WithText("Writing a to-do gadget.")
	case strings.Contains(last.Text, "done"):
		args, _ := json.Marshal(map[string]string{"gadget": "todo", "file": "server.js", "old": "done: false", "new": "done: true"})
		return modelserver.Tools(modelserver.Call("editFile", string(args)))
	}
	return modelserver.Text("Hello from the agent.")
}

// TestChatCommand chats with a scripted model through `atelier chat`: a first chat builds a
// to-do gadget (the reply streams, the tool call shows with its output under --verbose, the
// draft's diff is shown and accepted with "y"); a second chat's edit is rejected with "n" and
// leaves the gadget as it was; a draft left when the input ends is decided later with --chat;
// a dry run of Code Mode is discarded with "n" and committed with "y"; --json prints each
// event as a JSON object; `atelier chats` lists the six chats.
func TestChatCommand(t *testing.T) {
	ms := modelserver.Start(t, modelserver.OpenAI, modelserver.Forever(modelserver.Func(chatAgent)))
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t, "--model-allow-addr", ms.Addr()))
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	ok(t, "workspace", "create", "home")
	ok(t, "workspace", "use", "home")
	fails(t, 1, []string{"chat"}, "no models to chat with")
	ok(t, "models", "add", "--name", "scripted", "--provider", "openai", "--url", ms.URL(), "--model", "scripted-model")

	r := atelier(context.Background(), "please make a to-do gadget\ny\n", "chat", "--verbose")
	if r.code != 0 {
		t.Fatalf("chat: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.err)
	}
	for _, want := range []string{
		"agent: Writing a to-do gadget.\n",
		`  [tool] createGadget(files={"client.js":`,
		"== proposed change\nnew gadget todo\n",
		"+export class Gadget {\n",
		"accept this draft? [y/N]\n",
		"deployed todo version 1\n",
		"agent: The change waits in the draft.\n",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("chat printed\n%s\nwant it to hold %q", r.stdout, want)
		}
	}
	if n := strings.Count(r.stdout, "[tool] createGadget("); n != 1 {
		t.Errorf("chat printed the tool call %d times, want once:\n%s", n, r.stdout)
	}
	if out := ok(t, "gadget", "call", "todo", "add", `"milk"`); !strings.Contains(out, `"title": "milk"`) {
		t.Errorf("the accepted gadget's add said %q", out)
	}

	r = atelier(context.Background(), "mark new items done\nn\n", "chat")
	if r.code != 0 || !strings.Contains(r.stdout, "-    const todo = { id, title, done: false };\n+    const todo = { id, title, done: true };\n") || !strings.Contains(r.stdout, "draft rejected\n") {
		t.Fatalf("second chat: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.err)
	}
	if out := ok(t, "gadget", "call", "todo", "add", `"eggs"`); !strings.Contains(out, `"done": false`) {
		t.Errorf("after the rejected edit add said %q, want the gadget unchanged", out)
	}

	// Input that ends before the draft is decided leaves it waiting; --chat goes on with it.
	r = atelier(context.Background(), "mark new items done\n", "chat")
	m := regexp.MustCompile(`question\(s\) left unanswered: go on with atelier chat --chat (ch_\w+)`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("chat ended before the draft was decided: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.err)
	}
	r = atelier(context.Background(), "n\n", "chat", "--chat", m[1])
	if r.code != 0 || !strings.Contains(r.stdout, "accept this draft? [y/N]\n") || !strings.Contains(r.stdout, "draft rejected\n") {
		t.Fatalf("chat --chat %s: exit %d\nstdout: %s\nstderr: %s", m[1], r.code, r.stdout, r.err)
	}

	// A dry run of Code Mode: discarded, it leaves the gadget's state; committed, it lands.
	r = atelier(context.Background(), "add an item\nn\n", "chat")
	if r.code != 0 || !strings.Contains(r.stdout, "gadget todo:\n") || !strings.Contains(r.stdout, `+ "todo/3" = `) || !strings.Contains(r.stdout, "dry run discarded\n") {
		t.Fatalf("dry run, discarded: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.err)
	}
	if out := ok(t, "gadget", "call", "todo", "list"); strings.Contains(out, "from the agent") {
		t.Fatalf("after a discarded dry run the list is %s", out)
	}
	r = atelier(context.Background(), "add an item\ny\n", "chat")
	if r.code != 0 || !strings.Contains(r.stdout, "committed; 0 gatekeeper action(s) wait for approval\n") {
		t.Fatalf("dry run, committed: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.err)
	}
	if out := ok(t, "gadget", "call", "todo", "list"); !strings.Contains(out, "from the agent") {
		t.Fatalf("after a committed dry run the list is %s", out)
	}

	r = atelier(context.Background(), "hello\n", "chat", "--json")
	if r.code != 0 {
		t.Fatalf("chat --json: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.err)
	}
	types := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var ev struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type == "" {
			t.Fatalf("chat --json printed %q, not an event: %v", line, err)
		}
		types[ev.Type] = true
	}
	if !types["message"] {
		t.Errorf("chat --json printed events of types %v, want the messages", types)
	}

	out := ok(t, "chats")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 7 || !strings.HasPrefix(lines[0], "ID ") {
		t.Errorf("chats printed %q, want a header and six chats", out)
	}
}

// TestChatInterrupt: Ctrl-C (the command's context ending) while the agent streams its reply
// stops the agent before the command leaves.
func TestChatInterrupt(t *testing.T) {
	pieces := make(chan string)
	ms := modelserver.Start(t, modelserver.OpenAI, modelserver.Stream(pieces))
	t.Cleanup(func() { close(pieces) }) // before the model server closes: its reply ends
	isolate(t)
	t.Setenv("ATELIER_SERVER", startServer(t, "--model-allow-addr", ms.Addr()))
	t.Setenv("ATELIER_PASSWORD", "correct horse battery staple")
	ok(t, "login", "--signup", "--username", "ada")
	ok(t, "workspace", "create", "home")
	ok(t, "workspace", "use", "home")
	ok(t, "models", "add", "--name", "scripted", "--provider", "openai", "--url", ms.URL(), "--model", "scripted-model")

	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	stdin, typing := io.Pipe() // the person has not ended the input
	defer typing.Close()
	go func() { done <- run(ctx, []string{"chat"}, stdin, &out, &errOut) }()
	if _, err := io.WriteString(typing, "tell me a long story\n"); err != nil {
		t.Fatal(err)
	}
	// Deltas sent before the command subscribed are not replayed: the reply goes on a word at
	// a time until one is printed.
	deadline := time.After(30 * time.Second)
	for !strings.Contains(out.String(), "agent: ") {
		select {
		case <-deadline:
			t.Fatalf("no delta was printed within 30s: %q %q", out.String(), errOut.String())
		case pieces <- "word ":
		}
	}
	interrupt()
	select {
	case code := <-done:
		if code != 0 || !strings.Contains(out.String(), "stopped the agent\n") {
			t.Fatalf("chat interrupted: exit %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("chat did not end within 30s of the interrupt: %q", out.String())
	}
	// The run ends once its context is cancelled, right after stopAgent returns.
	for list := ok(t, "chats"); strings.Contains(list, "running"); list = ok(t, "chats") {
		select {
		case <-deadline:
			t.Fatalf("the agent still runs 30s after the interrupt: %q", list)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestChatCommandLine(t *testing.T) {
	isolate(t)
	fails(t, 2, []string{"chat", "a", "b"}, "want at most one workspace", "Usage: atelier chat")
	fails(t, 2, []string{"chat", "--chat", "ch_1", "--model", "mdl_1"}, "--model picks the model of a new chat")
	fails(t, 2, []string{"chats", "a", "b"}, "want at most one workspace")
	fails(t, 1, []string{"chat", "home"}, "not logged in", "atelier login")
	if out := ok(t, "help", "chat"); !strings.Contains(out, "accept this draft? [y/N]") || !strings.Contains(out, "atelier chat --chat ch_3") {
		t.Errorf("help chat says %q", out)
	}
}
