package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/agent"
	"atelier/host/agent/agenttest"
	"atelier/host/agent/provider"
	"atelier/host/auth"
	"atelier/host/gateway"
	"atelier/host/kernel"
	"atelier/host/store"
	"atelier/tests/modelserver"
)

// agentRun returns an in-memory ChatRun of a small workspace with the user's message stored.
func agentRun() *agenttest.Run {
	run := &agenttest.Run{
		Info: kernel.ChatInfo{ID: "ch_1", Workspace: "w", Creator: "ada"},
		Spec: kernel.ModelSpec{ID: "m1", Name: "bench"},
		Workspace: kernel.WorkspaceContext{
			Workspace: kernel.WorkspaceInfo{Name: "home"}, Role: "owner",
			Gadgets:      []kernel.GadgetInfo{{Name: "todo", Current: 1}},
			Bindings:     []kernel.BindingInfo{{Name: "todo", Gadget: "todo", Methods: []string{"add", "list"}}},
			Declarations: "declare const todo: { add(text: string): Promise<void>; list(): Promise<string[]> }",
		},
	}
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Author: "ada", Text: "what can you call?"})
	return run
}

// BenchmarkAgentTurn measures the agent loop's own cost per model turn, the model excluded:
// each run is two turns of an instant in-process scripted model (a listBindings call, then a
// text reply of three pieces) against an in-memory ChatRun. It reports the time and the heap
// allocations per turn (the in-memory ChatRun's and the setup of each run included; the goal
// is 2 ms a turn).
func BenchmarkAgentTurn(b *testing.B) {
	const turns = 2
	ctx := context.Background()
	var script *agenttest.Script
	r := agent.New(agent.Config{Clients: func(kernel.ModelSpec) (provider.Client, error) { return script, nil }})
	call := provider.ToolCall{ID: "c1", Name: "listBindings", Args: json.RawMessage(`{}`)}
	b.ReportAllocs()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		run := agentRun()
		script = agenttest.NewScript(
			agenttest.Step{Calls: []provider.ToolCall{call}},
			agenttest.Step{Text: []string{"You can ", "call todo.add ", "and todo.list."}},
		)
		if err := r.Run(ctx, run); err != nil {
			b.Fatal(err)
		}
		if ms := run.Messages(); len(ms) != 4 {
			b.Fatalf("the run stored %d messages, want 4", len(ms))
		}
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(turns*b.N), "ns/turn")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(turns*b.N), "allocs/turn")
}

// BenchmarkAgentDelta measures the delay the host adds between a provider's token and the
// chat's delta event: the scripted model server writes one text delta per iteration on its
// SSE stream (Anthropic format, over loopback HTTP), and the time runs until the agent loop
// emits it as a "delta" event, through the real provider client. It reports the p50 and p99.
func BenchmarkAgentDelta(b *testing.B) {
	pieces := make(chan string)
	s := modelserver.Start(b, modelserver.Anthropic, modelserver.Stream(pieces))
	pc := s.Config()
	run := agentRun()
	run.Spec = kernel.ModelSpec{Name: "scripted", Provider: pc.Kind, BaseURL: pc.BaseURL, Model: pc.Model, APIKey: pc.APIKey}
	got := make(chan time.Time, 1)
	run.OnEmit = func(e kernel.ChatEvent) {
		if e.Type == kernel.EventDelta {
			got <- time.Now()
		}
	}
	r := agent.New(agent.Config{HTTP: pc.HTTP})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ended := make(chan error, 1)
	go func() { ended <- r.Run(ctx, run) }()

	var delays []time.Duration
	for b.Loop() {
		sent := time.Now()
		select {
		case pieces <- "token ":
		case err := <-ended:
			b.Fatalf("the run ended early: %v; %+v", err, run.Messages())
		}
		select {
		case at := <-got:
			delays = append(delays, at.Sub(sent))
		case err := <-ended:
			b.Fatalf("the run ended early: %v; %+v", err, run.Messages())
		}
	}
	close(pieces)
	if err := <-ended; err != nil {
		b.Fatal(err)
	}
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkAgentDeltaKernel measures the same delay through the whole server path a browser
// sees: the scripted model server writes a text delta, the provider client parses it, the agent
// loop emits it, the kernel publishes it to the chat's subscribers, and the delta event reaches
// a subscribeChat callback over Cap'n Web on a WebSocket. It reports the p50 and p99.
func BenchmarkAgentDeltaKernel(b *testing.B) {
	pieces := make(chan string)
	ms := modelserver.Start(b, modelserver.Anthropic, modelserver.Stream(pieces))
	db, err := store.Open(filepath.Join(b.TempDir(), "a.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	k := kernel.New(kernel.Config{Store: db, Password: auth.TestParams, Agent: agent.New(agent.Config{HTTP: ms.Config().HTTP})})
	defer k.Close()
	srv := httptest.NewServer(gateway.New(gateway.Config{Kernel: k}))
	defer srv.Close()
	ctx := context.Background()
	sess, err := capnweb.DialWebSocket(ctx, "ws"+strings.TrimPrefix(srv.URL, "http")+"/api", capnweb.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer sess.Close()
	root := sess.Main()
	tok, err := root.Call(ctx, "signup", "ada", "password-ada").Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ada := root.Call(ctx, "authenticate", tok)
	m, err := ada.Call(ctx, "addModel", map[string]any{"name": "scripted", "provider": "anthropic", "baseUrl": ms.URL(), "model": "scripted"}).Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ws := ada.Call(ctx, "createWorkspace", "home")
	chat, err := ws.Call(ctx, "newChat", "stream to me", m.(map[string]any)["id"]).Await(ctx)
	if err != nil {
		b.Fatal(err)
	}
	got := make(chan time.Time, 1)
	onEvent := func(e map[string]any) {
		if e["type"] == "delta" {
			got <- time.Now()
		}
	}
	if _, err := ws.Call(ctx, "subscribeChat", chat.(map[string]any)["id"], onEvent).Await(ctx); err != nil {
		b.Fatal(err)
	}

	var delays []time.Duration
	timeout := time.After(5 * time.Minute)
	for b.Loop() {
		sent := time.Now()
		pieces <- "token "
		select {
		case at := <-got:
			delays = append(delays, at.Sub(sent))
		case <-timeout:
			b.Fatal("no delta event within 5 minutes")
		}
	}
	close(pieces)
	slices.Sort(delays)
	b.ReportMetric(float64(delays[len(delays)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(delays[len(delays)*99/100].Microseconds()), "p99-µs")
}
