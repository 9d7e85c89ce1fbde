package agent

import (
	"strings"
	"testing"

	"atelier/host/kernel"
)

// TestConversationShape checks that the history becomes a conversation of the shape providers
// accept: every tool call answered right after its assistant message (a call never run is
// answered "not run"), a stray tool output and host notices as user text, consecutive user
// texts joined, and arguments that are not a JSON object sent as {}.
func TestConversationShape(t *testing.T) {
	h := []kernel.ChatMessage{
		{Role: kernel.ChatSummary, Text: "earlier work"},
		{Role: kernel.ChatTool, ToolCallID: "old", ToolName: "readFile", Text: "stray"},
		{Role: kernel.ChatUser, Author: "ada", Text: "make a to-do gadget"},
		{Role: kernel.ChatAssistant, Text: "on it", ToolCalls: []kernel.ChatToolCall{
			{ID: "a", Name: "readFile", Args: `{"gadget":"x","file":"y"}`},
			{ID: "b", Name: "writeFile", Args: `{"gadget":`},
			{ID: "c", Name: "listBindings", Args: `[1]`},
		}},
		{Role: kernel.ChatTool, ToolCallID: "b", ToolName: "writeFile", Text: "bad args", IsError: true},
		{Role: kernel.ChatNotice, Text: "the agent was stopped"},
		{Role: kernel.ChatUser, Text: "continue"},
	}
	got := conversation(h)
	var roles []string
	for _, m := range got {
		roles = append(roles, m.Role)
	}
	want := "user assistant tool tool tool user"
	if strings.Join(roles, " ") != want {
		t.Fatalf("roles = %v, want %s", roles, want)
	}
	if u := got[0].Text; !strings.HasPrefix(u, summaryIntro+"earlier work") || !strings.Contains(u, "stray") || !strings.HasSuffix(u, "make a to-do gadget") {
		t.Errorf("first user text = %q", u)
	}
	if got[2].ToolCallID != "a" || got[2].Text != notRun || !got[2].IsError {
		t.Errorf("skipped call a answered %+v, want not run", got[2])
	}
	if got[3].ToolCallID != "b" || got[3].Text != "bad args" {
		t.Errorf("call b answered %+v", got[3])
	}
	if got[4].ToolCallID != "c" || got[4].Text != notRun {
		t.Errorf("unanswered call c answered %+v", got[4])
	}
	for _, c := range got[1].ToolCalls {
		if c.Name != "readFile" && string(c.Args) != "{}" {
			t.Errorf("args of %s sent as %s, want {}", c.Name, c.Args)
		}
	}
	if u := got[5].Text; u != noticeIntro+"the agent was stopped\n\ncontinue" {
		t.Errorf("last user text = %q", u)
	}
}

// TestBoundOutput checks that a long output is cut on a character boundary with a note, and a
// short one is kept whole.
func TestBoundOutput(t *testing.T) {
	if got := boundOutput("short", 16); got != "short" {
		t.Errorf("short output became %q", got)
	}
	long := strings.Repeat("é", 20) // 40 bytes
	got := boundOutput(long, 15)
	head, _, ok := strings.Cut(got, "\n[output cut")
	if !ok || head != strings.Repeat("é", 7) || !strings.Contains(got, "15 of 40 bytes") {
		t.Errorf("bounded output = %q", got)
	}
}

// TestToolSchemas checks that every tool's schema is an object schema and the list is exactly
// the agreed one.
func TestToolSchemas(t *testing.T) {
	want := "listBindings, describeBinding, executeCode, readFile, writeFile, editFile, createGadget, listBlueprints, requestConnection"
	if toolNames != want {
		t.Errorf("tools = %s, want %s", toolNames, want)
	}
	for _, d := range toolDefs {
		if !strings.HasPrefix(string(d.Schema), `{"type":"object"`) {
			t.Errorf("schema of %s = %s", d.Name, d.Schema)
		}
	}
}
