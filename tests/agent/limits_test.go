package agent_test

import (
	"strings"
	"testing"

	"atelier/tests/modelserver"
)

// TestAgentRunEndings checks how a run ends through the kernel, each with its "done" reason and
// its record in the chat: stopped mid-reply (the text so far is kept), after 30 turns of a
// model that never ends its turn, and on a model endpoint's error.
func TestAgentRunEndings(t *testing.T) {
	pieces := make(chan string)
	ms := modelserver.Start(t, modelserver.Anthropic, modelserver.Stream(pieces))
	s := startServer(t, ms)
	ada := s.user(t, "ada")
	model := s.addModel(t, ada)
	ws := ada.Call(ctx, "createWorkspace", "home")

	// Stopped while streaming.
	chat := await(t, ws.Call(ctx, "newChat", "write a long poem", model)).(map[string]any)["id"].(string)
	ev := subscribe(t, ws, chat)
	pieces <- "Roses are"
	ev.waitFor(t, "the first delta", func(e map[string]any) bool { return e["type"] == "delta" })
	await(t, ws.Call(ctx, "stopAgent", chat))
	if why := ev.done(t); why != "stopped" {
		t.Fatalf("run ended %q, want stopped", why)
	}
	h := history(t, ws, chat)
	if len(h) != 3 || h[1]["text"] != "Roses are" || h[2]["role"] != "notice" {
		t.Fatalf("history after the stop = %v", h)
	}

	// 30 turns of tool calls, then the notice that says how to go on.
	gate := make(chan struct{})
	call := modelserver.Tools(modelserver.Call("listBlueprints", `{}`))
	ms.Push(gated(gate, call), modelserver.Forever(call))
	chat = await(t, ws.Call(ctx, "newChat", "keep going", model)).(map[string]any)["id"].(string)
	ev = subscribe(t, ws, chat)
	close(gate)
	if why := ev.done(t); why != "turns" {
		t.Fatalf("run ended %q, want turns", why)
	}
	h = history(t, ws, chat)
	if last := h[len(h)-1]; last["role"] != "notice" || last["text"] != "stopped after 30 turns; say 'continue' to go on" {
		t.Fatalf("last message = %v", last)
	}
	if n := len(ms.Requests()); n != 1+30 {
		t.Errorf("model calls = %d, want 31", n)
	}
}

// TestAgentProviderErrorThroughTheKernel checks that a model endpoint's HTTP 500 ends the run
// with an error event and a notice that says what failed, keeping the user's message.
func TestAgentProviderErrorThroughTheKernel(t *testing.T) {
	gate := make(chan struct{})
	ms := modelserver.Start(t, modelserver.OpenAI, gated(gate, modelserver.Fault(modelserver.FaultHTTP500)))
	s := startServer(t, ms)
	ada := s.user(t, "ada")
	m := await(t, ada.Call(ctx, "addModel", map[string]any{"name": "scripted", "provider": string(modelserver.OpenAI), "baseUrl": ms.URL(), "model": "scripted"}))
	ws := ada.Call(ctx, "createWorkspace", "home")
	chat := await(t, ws.Call(ctx, "newChat", "hello", m.(map[string]any)["id"])).(map[string]any)["id"].(string)
	ev := subscribe(t, ws, chat)
	close(gate)
	if why := ev.done(t); why != "error" {
		t.Fatalf("run ended %q, want error", why)
	}
	e := ev.waitFor(t, "error event", func(e map[string]any) bool { return e["type"] == "error" })
	if !strings.Contains(e["text"].(string), "HTTP 500") {
		t.Errorf("error event = %v", e)
	}
	h := history(t, ws, chat)
	if len(h) != 2 || h[0]["text"] != "hello" || !strings.Contains(h[1]["text"].(string), "the model's reply failed") {
		t.Fatalf("history = %v", h)
	}
}
