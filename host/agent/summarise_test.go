package agent_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"atelier/host/agent"
	"atelier/host/agent/agenttest"
	"atelier/host/kernel"
)

// longHistory seeds run with n exchanges of about size bytes each.
func longHistory(run *agenttest.Run, n, size int) {
	for range n {
		run.Seed(
			kernel.ChatMessage{Role: kernel.ChatUser, Author: "ada", Text: strings.Repeat("u", size)},
			kernel.ChatMessage{Role: kernel.ChatAssistant, Author: "agent", Text: strings.Repeat("a", size)},
		)
	}
	run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Author: "ada", Text: "and now the latest request"})
}

// TestSummarisesWhenTheWindowFills checks that a conversation over 75% of the window is
// summarised by a model call (in parts when longer than half the window), the summary is
// stored, and the next call starts from it.
func TestSummarisesWhenTheWindowFills(t *testing.T) {
	run := newRun()
	run.Spec.ContextWindow = 4096 // 3072 tokens of budget, 8 KiB parts
	longHistory(run, 6, 2000)     // about 24 KB: 3 parts
	s := agenttest.NewScript(
		agenttest.Step{Text: []string{"part one"}},
		agenttest.Step{Text: []string{"parts one and two"}},
		agenttest.Step{Text: []string{"all of it; latest: and now the latest request"}},
		agenttest.Step{Text: []string{"answer"}},
	)
	wantEnd(t, runLoop(context.Background(), run, s, agent.Config{}))
	reqs := s.Requests()
	if len(reqs) != 4 {
		t.Fatalf("model calls = %d, want 3 summary parts and the answer", len(reqs))
	}
	for i, r := range reqs[:3] {
		if len(r.Tools) != 0 || !strings.HasPrefix(r.Messages[0].Text, "Summarise this conversation") {
			t.Errorf("request %d is not a summary request", i)
		}
		if len(r.Messages[0].Text) > 4096*4 {
			t.Errorf("summary request %d is %d bytes, over the window", i, len(r.Messages[0].Text))
		}
	}
	if !strings.Contains(reqs[1].Messages[0].Text, "part one") || !strings.Contains(reqs[2].Messages[0].Text, "and now the latest request") {
		t.Errorf("summary parts do not carry the summary so far and the newest messages")
	}
	last := reqs[3].Messages
	if len(last) != 1 || !strings.Contains(last[0].Text, "all of it; latest") {
		t.Errorf("answer request starts with %+v, want the summary", last)
	}
	var summaries int
	for _, m := range run.Messages() {
		if m.Role == kernel.ChatSummary {
			summaries++
		}
	}
	if summaries != 1 || len(run.Messages()) != 13+2 {
		t.Errorf("stored %d summaries and %d messages; nothing before must be dropped", summaries, len(run.Messages()))
	}
}

// TestSummaryFailureEndsTheRun checks that a failed summary ends the run with an error saying
// so, and that a conversation that cannot fit even after summarising is refused, not cut.
func TestSummaryFailureEndsTheRun(t *testing.T) {
	t.Run("summary fails", func(t *testing.T) {
		run := newRun()
		run.Spec.ContextWindow = 4096
		longHistory(run, 3, 2000)
		err := runLoop(context.Background(), run, agenttest.NewScript(agenttest.Step{Err: errors.New("HTTP 500 from the model server")}), agent.Config{})
		wantErr(t, err, "summarising it failed: HTTP 500", "nothing was cut")
	})
	t.Run("does not fit", func(t *testing.T) {
		run := newRun()
		run.Spec.ContextWindow = 8192 // 6144 tokens of budget: 24 KiB
		run.Workspace.Declarations = strings.Repeat("declare const x: number;\n", 40<<10/25)
		longHistory(run, 1, 100)
		s := agenttest.NewScript(agenttest.Step{Text: []string{"short summary"}})
		wantErr(t, runLoop(context.Background(), run, s, agent.Config{}), "even after summarising")
	})
}

// TestSummaryIsBounded checks that a conversation too long to summarise in a bounded number
// of model calls ends the run with an error, without calling the model.
func TestSummaryIsBounded(t *testing.T) {
	run := newRun()
	run.Spec.ContextWindow = 2048 // 4 KiB parts
	longHistory(run, 40, 2000)    // 160 KB: about 40 parts
	s := agenttest.NewScript()
	wantErr(t, runLoop(context.Background(), run, s, agent.Config{}), "more than the 16 that are summarised in one go")
	if len(s.Requests()) != 0 {
		t.Errorf("model calls = %d, want none", len(s.Requests()))
	}
}
