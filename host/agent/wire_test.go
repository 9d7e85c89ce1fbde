package agent_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"atelier/host/agent"
	"atelier/host/agent/agenttest"
	"atelier/host/kernel"
	"atelier/tests/modelserver"
)

var wires = []modelserver.Wire{modelserver.OpenAI, modelserver.Anthropic}

// serverRun returns a fake ChatRun whose model is the scripted server s, and a Runner that
// reaches it over the real provider clients and the egress-checked HTTP client.
func serverRun(t *testing.T, s *modelserver.Server, cfg agent.Config) (*agenttest.Run, *agent.Runner) {
	t.Helper()
	run := newRun()
	pc := s.Config()
	run.Spec = kernel.ModelSpec{ID: "m1", Name: "scripted", Provider: pc.Kind, BaseURL: pc.BaseURL, Model: pc.Model, APIKey: pc.APIKey}
	cfg.HTTP = pc.HTTP
	return run, agent.New(cfg)
}

// runBounded runs r on run, bounded in time, and returns how the run ended.
func runBounded(r *agent.Runner, run *agenttest.Run) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return r.Run(ctx, run)
}

// TestOverTheWire runs a whole turn through each wire format: the model writes a file, sees
// the tool's output, and answers; the draft has the file and the server saw the tools, the
// system prompt, the key and the tool result.
func TestOverTheWire(t *testing.T) {
	for _, w := range wires {
		t.Run(string(w), func(t *testing.T) {
			s := modelserver.Start(t, w,
				modelserver.Tools(modelserver.Call("writeFile", `{"gadget":"todo","file":"server.js","content":"export function add() {}"}`)).WithText("Writing."),
				modelserver.Func(func(r modelserver.Request) modelserver.Turn {
					last := r.Messages[len(r.Messages)-1]
					return modelserver.Text("Draft: " + strings.SplitN(last.Text, " ", 2)[0])
				}))
			run, r := serverRun(t, s, agent.Config{})
			run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Author: "ada", Text: "a to-do gadget please"})
			wantEnd(t, runBounded(r, run))
			if d := run.Draft(); d["todo/server.js"] != "export function add() {}" {
				t.Errorf("draft = %v", d)
			}
			ms := run.Messages()
			if last := ms[len(ms)-1]; last.Text != "Draft: todo/server.js" {
				t.Errorf("last message = %+v", last)
			}
			reqs := s.Requests()
			if len(reqs) != 2 || len(reqs[0].Tools) != 9 || !strings.Contains(reqs[0].System, "draft") || reqs[0].APIKey != "test-key" {
				t.Fatalf("requests = %+v", reqs)
			}
			var deltas []string
			for _, e := range run.Events() {
				if e.Type == kernel.EventDelta {
					deltas = append(deltas, e.Text)
				}
			}
			if got := strings.Join(deltas, "|"); got != "Writing.|Draft:| todo/server.js" {
				t.Errorf("deltas = %q", got)
			}
		})
	}
}

// TestMalformedProviderOutput checks that each way a provider's reply can go wrong ends the
// run with a clear error (the kernel's notice), keeps what was stored, and never shows the key.
func TestMalformedProviderOutput(t *testing.T) {
	faults := []struct {
		name    string
		turn    modelserver.Turn
		timeout time.Duration // the model timeout (0: the default)
		wants   []string
	}{
		{"broken SSE", modelserver.Fault(modelserver.FaultBrokenSSE), 0, []string{"model's reply failed", "JSON"}},
		{"invalid tool JSON", modelserver.Fault(modelserver.FaultInvalidToolJSON), 0, []string{"writeFile"}},
		{"5 MB reply", modelserver.Fault(modelserver.FaultHuge), 0, []string{"over 1048576 bytes"}},
		{"stalled stream", modelserver.Fault(modelserver.FaultStall), 300 * time.Millisecond, []string{"no whole reply within 300ms"}},
		{"HTTP 500", modelserver.Fault(modelserver.FaultHTTP500), 0, []string{"500"}},
		{"unknown event shape", modelserver.Fault(modelserver.FaultUnknownShape), 0, []string{"model's reply failed"}},
		{"cut-off stream", modelserver.Fault(modelserver.FaultCutOff), 0, []string{"model's reply failed"}},
	}
	for _, w := range wires {
		for _, f := range faults {
			t.Run(string(w)+"/"+f.name, func(t *testing.T) {
				s := modelserver.Start(t, w, f.turn)
				run, r := serverRun(t, s, agent.Config{ModelTimeout: f.timeout})
				run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Author: "ada", Text: "hello"})
				err := runBounded(r, run)
				wantErr(t, err, f.wants...)
				if strings.Contains(err.Error(), "test-key") {
					t.Errorf("the error shows the key: %q", err)
				}
				ms := run.Messages()
				if ms[0].Text != "hello" {
					t.Errorf("the user's message was lost: %+v", ms)
				}
				for _, m := range ms {
					if len(m.Text) > agent.DefaultMaxReply {
						t.Errorf("stored a %s message of %d bytes", m.Role, len(m.Text))
					}
				}
			})
		}
	}
}

// TestEndlessLoopOverTheWire plays a model that calls a tool that does not exist forever: the
// run ends as stuck after three calls, none of which ran anything.
func TestEndlessLoopOverTheWire(t *testing.T) {
	for _, w := range wires {
		t.Run(string(w), func(t *testing.T) {
			s := modelserver.Start(t, w, modelserver.Forever(modelserver.Tools(modelserver.Call("deployGadget", `{"gadget":"todo"}`))))
			run, r := serverRun(t, s, agent.Config{})
			run.Seed(kernel.ChatMessage{Role: kernel.ChatUser, Text: "deploy it"})
			wantErr(t, runBounded(r, run), "deployGadget with the same arguments 3 times")
			if n := len(s.Requests()); n != 3 {
				t.Errorf("model calls = %d, want 3", n)
			}
			for _, c := range run.Calls() {
				if c != "audit unknownTool" {
					t.Errorf("called %s", c)
				}
			}
		})
	}
}
