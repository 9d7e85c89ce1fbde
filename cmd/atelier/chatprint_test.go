package main

import (
	"strings"
	"testing"
	"time"

	"atelier/host/kernel"
)

func TestChatPrinterStreamsAndDedupes(t *testing.T) {
	var out strings.Builder
	p := newChatPrinter(&out, "ada", false)
	p.message(kernel.ChatMessage{ID: 1, Role: kernel.ChatUser, Author: "ada", Text: "make a to-do gadget"})
	p.message(kernel.ChatMessage{ID: 2, Role: kernel.ChatUser, Author: "bob", Text: "and\x1b[2Jcolours"})
	p.delta("Sure, ")
	p.delta("writing it.")
	p.message(kernel.ChatMessage{ID: 3, Role: kernel.ChatAssistant, Text: "Sure, writing it.", ToolCalls: []kernel.ChatToolCall{
		{ID: "c1", Name: "writeFile", Args: `{"gadget":"todo","file":"server.js","content":"export class Gadget {\n}"}`},
	}})
	p.message(kernel.ChatMessage{ID: 4, Role: kernel.ChatTool, ToolCallID: "c1", ToolName: "writeFile", Text: "wrote server.js"})
	p.tool(kernel.ChatToolEvent{ID: "c2", Name: "editFile", Args: `{"file":"x"}`, Output: "no match\nof old", IsError: true})
	p.message(kernel.ChatMessage{ID: 6, Role: kernel.ChatTool, ToolCallID: "c2", ToolName: "editFile", Text: "no match\nof old", IsError: true})
	p.message(kernel.ChatMessage{ID: 3, Role: kernel.ChatAssistant, Text: "Sure, writing it."}) // again, from the history
	p.message(kernel.ChatMessage{ID: 5, Role: kernel.ChatNotice, Text: "stopped by ada"})
	want := "bob: and\uFFFD[2Jcolours\n" +
		"agent: Sure, writing it.\n" +
		`  [tool] writeFile(content="export class Gadget {\n}" file="server.js" gadget="todo") ok` + "\n" +
		`  [tool] editFile(file="x") failed: no match` + "\n" +
		"-- stopped by ada\n"
	if out.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestChatPrinterVerboseToolOutput(t *testing.T) {
	var out strings.Builder
	p := newChatPrinter(&out, "ada", true)
	p.tool(kernel.ChatToolEvent{ID: "c1", Name: "executeCode", Args: "not json", Output: "line 1\nline 2\n"})
	want := "  [tool] executeCode(not json) ok\n    line 1\n    line 2\n"
	if out.String() != want {
		t.Fatalf("printed %q, want %q", out.String(), want)
	}
}

func TestChatPrinterDraftAndDryRun(t *testing.T) {
	var out strings.Builder
	p := newChatPrinter(&out, "ada", false)
	p.draft(kernel.DraftInfo{
		Chat:       "ch_1",
		NewGadgets: []kernel.DraftGadget{{Name: "todo"}},
		Files:      []kernel.DraftFile{{Gadget: "todo", File: "server.js", Status: "added", Diff: "--- /dev/null\n+++ b/server.js\n@@ -0,0 +1 @@\n+export class Gadget {}"}},
		Stale:      []string{"notes"},
	})
	old, changed := "1", "2"
	p.dryRun(kernel.DryRunInfo{
		ID:      "dr_1",
		Expires: time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local),
		Gadgets: []kernel.DryRunGadget{{Gadget: "todo", Added: []kernel.KVChange{{Key: "item/2", New: &changed}}, Changed: []kernel.KVChange{{Key: "n", Old: &old, New: &changed}}, Removed: []kernel.KVChange{{Key: "item/1", Old: &old}}}},
		Actions: []kernel.DryRunAction{{Binding: "mail", Gatekeeper: "gmail", Account: "acc_1", Method: "send", Args: `["hi"]`}},
	})
	want := "== proposed change\nnew gadget todo\n-- todo/server.js (added)\n--- /dev/null\n+++ b/server.js\n@@ -0,0 +1 @@\n+export class Gadget {}\n" +
		"stale: notes moved since the draft was made; the agent must redo its edits\n" +
		"== dry run dr_1 (held until 03:04:05)\ngadget todo:\n" +
		"  + \"item/2\" = \"2\"\n  ~ \"n\": \"1\" -> \"2\"\n  - \"item/1\" (was \"1\")\n" +
		"would ask mail: gmail.send([\"hi\"]) as account acc_1\n"
	if out.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", out.String(), want)
	}
}

func TestChatPrinterConnection(t *testing.T) {
	var out strings.Builder
	p := newChatPrinter(&out, "ada", false)
	req := kernel.ConnectionRequest{ID: "cr_1", Gatekeeper: "gmail", Binding: "mail", Reason: "to send the digest"}
	p.connection(req, []kernel.AccountInfo{{ID: "a1", Name: "gmail", Resource: "https://mail/ada"}, {ID: "a2", Name: "gmail", Resource: "https://mail/work"}})
	p.connection(req, nil)
	want := "== the agent asks to connect gmail as binding \"mail\" of Code Mode: to send the digest\n" +
		"  1) gmail https://mail/ada\n  2) gmail https://mail/work\n" +
		"== the agent asks to connect gmail as binding \"mail\" of Code Mode: to send the digest\n" +
		"you have no account on this gatekeeper (connect one in the workshop first)\n"
	if out.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
