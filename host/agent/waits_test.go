package agent_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"atelier/host/agent"
	"atelier/host/agent/agenttest"
	"atelier/host/agent/provider"
	"atelier/host/kernel"
)

// TestRequestConnectionEndsTheRun checks that asking for a connection ends the run (the
// kernel marks it waiting): the calls after it in the same reply are not run, and the model is not called again.
func TestRequestConnectionEndsTheRun(t *testing.T) {
	run := newRun()
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Text: "read my mail"})
	s := agenttest.NewScript(agenttest.Step{Calls: []provider.ToolCall{
		call("c1", "requestConnection", `{"gatekeeper":"mail","binding":"mail","reason":"to read your mail"}`),
		call("c2", "listBindings", `{}`),
	}})
	wantEnd(t, runLoop(context.Background(), run, s, agent.Config{}))
	if got, want := run.Calls(), []string{"requestConnection mail mail"}; !slices.Equal(got, want) {
		t.Errorf("calls = %v, want %v", got, want)
	}
	if len(s.Requests()) != 1 {
		t.Errorf("model calls = %d, want 1", len(s.Requests()))
	}
}

// TestExecuteCodeRunsDry checks that snippets run dry unless the model says dryRun: false; a
// dry run that wrote nothing is a plain result and the run goes on, one that wrote is emitted as
// proposed_change and ends the run (the kernel marks it waiting).
func TestExecuteCodeRunsDry(t *testing.T) {
	run := newRun()
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Text: "move the items"})
	var opts []kernel.CodeOptions
	run.Code = func(code string, o kernel.CodeOptions) (kernel.CodeResult, error) {
		opts = append(opts, o)
		res := kernel.CodeResult{Value: 3}
		if o.DryRun {
			res.DryRun = &kernel.DryRunInfo{}
			if strings.Contains(code, "write") {
				s := "v"
				res.DryRun.ID = "dr_1"
				res.DryRun.Gadgets = []kernel.DryRunGadget{{Gadget: "todo", Added: []kernel.KVChange{{Key: "k", New: &s}}}}
			}
		}
		return res, nil
	}
	s := agenttest.NewScript(
		agenttest.Step{Calls: []provider.ToolCall{call("c1", "executeCode", `{"code":"export default async (env) => env.todo.list()"}`)}},
		agenttest.Step{Calls: []provider.ToolCall{call("c2", "executeCode", `{"code":"read","dryRun":false}`)}},
		agenttest.Step{Calls: []provider.ToolCall{call("c3", "executeCode", `{"code":"write","typescript":true}`)}},
	)
	wantEnd(t, runLoop(context.Background(), run, s, agent.Config{}))
	if len(opts) != 3 || !opts[0].DryRun || opts[1].DryRun || !opts[2].DryRun || !opts[2].TypeScript {
		t.Errorf("options = %+v", opts)
	}
	outs := toolOutputs(run)
	if strings.Contains(outs[0].Text, "dryRun") || !strings.Contains(outs[0].Text, `"value":3`) {
		t.Errorf("empty dry run output = %q, want a plain result", outs[0].Text)
	}
	if !strings.Contains(outs[2].Text, `"dr_1"`) || !strings.Contains(outs[2].Text, "Your turn ends here") {
		t.Errorf("dry run output = %q", outs[2].Text)
	}
	var proposed []string
	for _, e := range run.Events() {
		if e.Type == kernel.EventProposed {
			proposed = append(proposed, e.DryRun.ID)
		}
	}
	if !slices.Equal(proposed, []string{"dr_1"}) {
		t.Errorf("proposed dry runs = %v, want [dr_1]", proposed)
	}
}

// TestToolOutputIsBounded checks that a huge file comes back to the model (and into the chat)
// cut to MaxToolOutput with a note, and that calls past MaxToolCalls in one reply are not run.
func TestToolOutputIsBounded(t *testing.T) {
	run := newRun()
	run.Spec.ContextWindow = 200_000 // 16 outputs of 16 KiB fit without a summary
	run.Files["todo/big.js"] = strings.Repeat("x", 1<<20)
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Text: "read"})
	var calls []provider.ToolCall
	for range 20 {
		calls = append(calls, call("", "readFile", `{"gadget":"todo","file":"big.js"}`))
	}
	s := agenttest.NewScript(agenttest.Step{Calls: calls}, agenttest.Step{Text: []string{"big"}})
	wantEnd(t, runLoop(context.Background(), run, s, agent.Config{}))
	outs := toolOutputs(run)
	if len(outs) != agent.DefaultMaxToolCalls || len(run.Calls()) != agent.DefaultMaxToolCalls {
		t.Fatalf("ran %d calls, stored %d outputs, want %d", len(run.Calls()), len(outs), agent.DefaultMaxToolCalls)
	}
	for _, m := range outs {
		if len(m.Text) > agent.DefaultMaxToolOutput+512 || !strings.Contains(m.Text, "[output cut: the first 16384 of 1048576 bytes") {
			t.Fatalf("output of %d bytes: %q", len(m.Text), m.Text[len(m.Text)-200:])
		}
	}
	if last := outs[len(outs)-1].Text; !strings.Contains(last, "4 more tool calls of this reply were not run") {
		t.Errorf("last output lacks the note of dropped calls: %q", last[len(last)-200:])
	}
	for _, e := range run.Events() {
		if e.Type == kernel.EventToolFinished && len(e.Tool.Output) > agent.DefaultMaxToolOutput+512 {
			t.Errorf("tool_finished carries %d bytes", len(e.Tool.Output))
		}
	}
}

// TestStopDuringATool cancels the run while a tool runs: its output is still stored, the run
// ends as stopped, and neither the next call nor the model is run.
func TestStopDuringATool(t *testing.T) {
	run := newRun()
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Text: "read"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	run.OnEmit = func(e kernel.ChatEvent) {
		if e.Type == kernel.EventToolStarted {
			cancel()
		}
	}
	s := agenttest.NewScript(
		agenttest.Step{Calls: []provider.ToolCall{call("c1", "readFile", `{"gadget":"todo","file":"server.js"}`), call("c2", "listBindings", `{}`)}},
		agenttest.Step{Text: []string{"never"}},
	)
	if err := runLoop(ctx, run, s, agent.Config{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Run ended with %v, want it stopped", err)
	}
	var roles []string
	for _, m := range run.Messages() {
		roles = append(roles, m.Role)
	}
	if got := strings.Join(roles, " "); got != "user assistant tool" {
		t.Errorf("messages = %s", got)
	}
	if len(s.Requests()) != 1 {
		t.Errorf("model calls = %d, want 1", len(s.Requests()))
	}
}

// TestEmptyReplyStoresNothing checks that a reply with no text and no tool calls ends the
// turn without storing an empty message.
func TestEmptyReplyStoresNothing(t *testing.T) {
	run := newRun()
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Text: "hi"})
	wantEnd(t, runLoop(context.Background(), run, agenttest.NewScript(agenttest.Step{}), agent.Config{}))
	if n := len(run.Messages()); n != 1 {
		t.Errorf("stored %d messages, want only the user's", n)
	}
}

// TestOversizeArgumentsAreNotRun checks that a call whose arguments are over MaxToolArgs is
// stored with {} and not run, and the model is told to write in parts; the run goes on.
func TestOversizeArgumentsAreNotRun(t *testing.T) {
	run := newRun()
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Text: "write a big file"})
	big := `{"gadget":"todo","file":"big.js","content":"` + strings.Repeat("x", agent.DefaultMaxToolArgs) + `"}`
	s := agenttest.NewScript(agenttest.Step{Calls: []provider.ToolCall{call("c1", "writeFile", big)}}, agenttest.Step{Text: []string{"ok"}})
	wantEnd(t, runLoop(context.Background(), run, s, agent.Config{}))
	if len(run.Calls()) != 0 {
		t.Errorf("calls = %v, want none", run.Calls())
	}
	ms := run.Messages()
	if ms[1].ToolCalls[0].Args != "{}" {
		t.Errorf("stored arguments of %d bytes", len(ms[1].ToolCalls[0].Args))
	}
	if out := toolOutputs(run)[0]; !out.IsError || !strings.Contains(out.Text, "write big files in parts") {
		t.Errorf("tool output = %+v", out)
	}
}
