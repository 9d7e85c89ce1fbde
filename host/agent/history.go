package agent

import (
	"encoding/json"
	"strings"

	"atelier/host/agent/provider"
	"atelier/host/kernel"
)

// Texts the conversation sent to the model carries for messages that are not the model's own.
const (
	summaryIntro = "Summary of the conversation before this point, written earlier by you:\n\n"
	noticeIntro  = "[host notice] "
	notRun       = "not run: the run ended before this tool call"
)

// conversation turns a chat's history (oldest first, from the newest summary on) into the
// messages sent to the model. Providers want a strict shape, so it keeps one: every tool call
// of an assistant message is answered by one tool message right after it (a call the run never
// got to is answered "not run"), a tool message that answers no such call becomes user text,
// a summary or a host notice becomes user text, consecutive user texts are joined, and tool
// arguments that are not a JSON object are sent as {} (the model was told so when it sent them).
func conversation(history []kernel.ChatMessage) []provider.Message {
	out := make([]provider.Message, 0, len(history))
	var pending []provider.ToolCall // calls of the last assistant message not yet answered
	closePending := func() {
		for _, c := range pending {
			out = append(out, provider.Message{Role: provider.RoleTool, Text: notRun, ToolCallID: c.ID, ToolName: c.Name, IsError: true})
		}
		pending = nil
	}
	userText := func(text string) {
		closePending()
		if n := len(out); n > 0 && out[n-1].Role == provider.RoleUser {
			out[n-1].Text += "\n\n" + text
			return
		}
		out = append(out, provider.Message{Role: provider.RoleUser, Text: text})
	}
	for _, m := range history {
		switch m.Role {
		case kernel.ChatUser:
			userText(m.Text)
		case kernel.ChatSummary:
			userText(summaryIntro + m.Text)
		case kernel.ChatNotice:
			userText(noticeIntro + m.Text)
		case kernel.ChatAssistant:
			closePending()
			msg := provider.Message{Role: provider.RoleAssistant, Text: m.Text}
			for _, c := range m.ToolCalls {
				msg.ToolCalls = append(msg.ToolCalls, provider.ToolCall{ID: c.ID, Name: c.Name, Args: objectArgs(c.Args)})
			}
			out = append(out, msg)
			pending = msg.ToolCalls
		case kernel.ChatTool:
			i := indexCall(pending, m.ToolCallID)
			if i < 0 {
				userText("[output of an earlier " + m.ToolName + " call] " + m.Text)
				continue
			}
			// Answer the calls before it that were skipped, in their order.
			for _, c := range pending[:i] {
				out = append(out, provider.Message{Role: provider.RoleTool, Text: notRun, ToolCallID: c.ID, ToolName: c.Name, IsError: true})
			}
			out = append(out, provider.Message{Role: provider.RoleTool, Text: m.Text, ToolCallID: m.ToolCallID, ToolName: pending[i].Name, IsError: m.IsError})
			pending = pending[i+1:]
		}
	}
	closePending()
	return out
}

func indexCall(calls []provider.ToolCall, id string) int {
	for i, c := range calls {
		if c.ID == id {
			return i
		}
	}
	return -1
}

// objectArgs returns args when it is a JSON object, else {}.
func objectArgs(args string) json.RawMessage {
	trimmed := strings.TrimSpace(args)
	if strings.HasPrefix(trimmed, "{") && json.Valid([]byte(trimmed)) {
		return json.RawMessage(trimmed)
	}
	return json.RawMessage(`{}`)
}
