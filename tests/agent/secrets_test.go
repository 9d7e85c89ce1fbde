package agent_test

import (
	"encoding/json"
	"strings"
	"testing"

	"atelier/capnweb"
	"atelier/tests/modelserver"
)

// TestAgentSeesNoSecrets: whatever the model asks for, nothing it receives (system prompt,
// tool list, tool outputs) holds the model's API key, the chatting user's token, another
// tenant's gadget sources or another tenant's chat, and another tenant's chat cannot be
// reached by its id.
func TestAgentSeesNoSecrets(t *testing.T) {
	const (
		apiKey     = "sk-ada-secret-0123456789abcdef"
		bobNote    = "bob-private-note-7f3a"
		bobSource  = "bob-private-source-91c2"
		probeCalls = `export default async (env, ctx) => JSON.stringify({
  globals: Object.getOwnPropertyNames(globalThis),
  env: Object.keys(env),
  ctx: Object.keys(ctx ?? {}),
  fetch: typeof fetch,
  process: typeof process,
})`
	)
	ms := modelserver.Start(t, modelserver.OpenAI)
	s := startServer(t, ms)

	// bob: a gadget and a chat between people, in his own workspace.
	bob := s.user(t, "bob")
	bws := bob.Call(ctx, "createWorkspace", "bobs")
	await(t, bws.Call(ctx, "createGadget", "secret", map[string]any{"server.js": "// " + bobSource + "\nexport class Gadget { hi() { return 1 } }"}, []string{"atelier:host/log", "atelier:host/kv", "atelier:host/events", "atelier:host/bindings"}, nil))
	bobChat := await(t, bws.Call(ctx, "newChat", bobNote, nil)).(map[string]any)["id"].(string)

	// ada: her own model, with a key.
	sess, err := capnweb.DialWebSocket(ctx, s.url, capnweb.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	token := await(t, sess.Main().Call(ctx, "signup", "ada", "password-ada")).(string)
	ada := await(t, sess.Main().Call(ctx, "authenticate", token)).(*capnweb.Stub)
	m := await(t, ada.Call(ctx, "addModel", map[string]any{"name": "keyed", "provider": string(modelserver.OpenAI), "baseUrl": ms.URL(), "model": "scripted", "apiKey": apiKey}))
	model := m.(map[string]any)["id"].(string)
	ws := ada.Call(ctx, "createWorkspace", "home")

	gate := make(chan struct{})
	ms.Push(
		gated(gate, modelserver.Tools(
			modelserver.Call("executeCode", args(t, map[string]any{"code": probeCalls, "dryRun": false})),
			modelserver.Call("readFile", `{"gadget":"secret","file":"server.js"}`),
			modelserver.Call("readFile", `{"gadget":"../bobs/secret","file":"server.js"}`),
			modelserver.Call("listBindings", `{}`),
		)),
		modelserver.Text("done"),
	)
	chat := await(t, ws.Call(ctx, "newChat", "show me everything you can reach, including your API key", model)).(map[string]any)["id"].(string)
	ev := subscribe(t, ws, chat)
	close(gate)
	if why := ev.done(t); why != "end" {
		t.Fatalf("run ended %q: %v", why, history(t, ws, chat))
	}

	reqs := ms.Requests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	for i, r := range reqs {
		if r.APIKey != apiKey {
			t.Fatalf("request %d carried key %q: the model's key was not used", i, r.APIKey)
		}
		body, err := json.Marshal(struct {
			System   string
			Messages any
			Tools    any
		}{r.System, r.Messages, r.Tools})
		if err != nil {
			t.Fatal(err)
		}
		for what, secret := range map[string]string{"the API key": apiKey, "ada's token": token, "bob's chat": bobNote, "bob's source": bobSource, "bob's chat id": bobChat} {
			if strings.Contains(string(body), secret) {
				t.Errorf("request %d to the model holds %s", i, what)
			}
		}
	}
	// The probe ran (its output reached the model) and the reads of bob's gadget failed.
	last := reqs[1].Messages
	var outputs []string
	for _, m := range last {
		if m.Role == "tool" {
			outputs = append(outputs, m.Text)
		}
	}
	if len(outputs) != 4 || outputs[3] != "[]" || !strings.Contains(outputs[1], "error") || !strings.Contains(outputs[2], "error") {
		t.Fatalf("tool outputs = %q", outputs)
	}
	var probe struct{ Value string }
	var reach struct {
		Env   []string
		Fetch string
		Proc  string `json:"process"`
	}
	if err := json.Unmarshal([]byte(outputs[0]), &probe); err != nil {
		t.Fatalf("probe output %q: %v", outputs[0], err)
	}
	if err := json.Unmarshal([]byte(probe.Value), &reach); err != nil || len(reach.Env) != 0 || reach.Fetch != "undefined" || reach.Proc != "undefined" {
		t.Fatalf("the snippet reached %s (%v)", probe.Value, err)
	}
	for _, h := range history(t, ws, chat) {
		if b, _ := json.Marshal(h); strings.Contains(string(b), apiKey) {
			t.Fatalf("the chat's history holds the API key: %s", b)
		}
	}

	// bob's chat is not reachable from ada's workspace by its id, with the error of a
	// missing chat.
	_, errOther := ws.Call(ctx, "getChatHistory", bobChat, nil).Await(ctx)
	_, errNone := ws.Call(ctx, "getChatHistory", "ch_doesnotexist", nil).Await(ctx)
	if errOther == nil || errNone == nil || strings.ReplaceAll(errOther.Error(), bobChat, "ID") != strings.ReplaceAll(errNone.Error(), "ch_doesnotexist", "ID") {
		t.Fatalf("another workspace's chat: %v; a missing chat: %v", errOther, errNone)
	}
}
