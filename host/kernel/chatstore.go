package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"atelier/host/store"
)

// Bounds of chats. A hostile participant (a person, or a model that answers without end) can
// make a chat hold at most maxChatMessages messages and maxChatBytes bytes, and a workspace at
// most maxChats chats; past them writes are refused with RESOURCE_EXHAUSTED.
const (
	maxChatText      = 256 << 10 // a message's text; an agent's longer text is cut with a note
	maxChatToolCalls = 32        // tool calls of one assistant message
	maxChatToolArgs  = 64 << 10  // one tool call's JSON arguments
	maxChatMessages  = 10000     // messages of one chat
	maxChatBytes     = 16 << 20  // stored bytes of one chat's messages
	maxChats         = 200       // chats of one workspace
	maxChatTitle     = 200       // a chat's title, in bytes
	chatPage         = 50        // messages per getChatHistory page
)

// chatTopic is the hub topic of a chat's events.
func chatTopic(ws store.WorkspaceID, chat string) string {
	return "chat/" + string(ws) + "/" + chat
}

// loadChat returns chat id of the workspace: NOT_FOUND, with the same words whether it never
// existed or belongs to another workspace (chats are stored per workspace).
func (ov *overseer) loadChat(id string) (store.Chat, error) {
	c, err := ov.ws.Chat(id)
	if errors.Is(err, store.ErrNotFound) {
		return store.Chat{}, fail(CodeNotFound, "workspace %s has no chat %.80q (see listChats)", ov.id, id)
	}
	return c, err
}

// cutText cuts s to at most n bytes on a rune boundary, with a note saying how much was cut.
func cutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	note := fmt.Sprintf("\n[... %d bytes cut: the text exceeded %d bytes]", len(s)-n, n)
	cut := n - len(note)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + note
}

// checkMessage bounds a message before it is stored. A person's text past maxChatText is
// refused; the agent's is cut with a note (a tool's output may be large), so that the run
// goes on. Tool calls are bounded in number and size.
func checkMessage(m *ChatMessage) error {
	switch m.Role {
	case ChatUser, ChatAssistant, ChatTool, ChatSummary, ChatNotice:
	default:
		return fail(CodeInvalidArgument, "chat message role %.40q: want user, assistant, tool, summary or notice", m.Role)
	}
	m.Text = strings.ToValidUTF8(m.Text, "\uFFFD")
	if len(m.Text) > maxChatText {
		if m.Role == ChatUser {
			return fail(CodeResourceExhausted, "a message of %d bytes: at most %d; send a shorter one or split it", len(m.Text), maxChatText)
		}
		m.Text = cutText(m.Text, maxChatText)
	}
	if len(m.ToolCalls) > maxChatToolCalls {
		return fail(CodeResourceExhausted, "an assistant message with %d tool calls: at most %d", len(m.ToolCalls), maxChatToolCalls)
	}
	for _, c := range m.ToolCalls {
		if len(c.Args) > maxChatToolArgs || len(c.ID) > 256 || len(c.Name) > 256 {
			return fail(CodeResourceExhausted, "tool call %.40q: arguments of %d bytes (at most %d), or an id or name past 256 bytes", c.Name, len(c.Args), maxChatToolArgs)
		}
	}
	if len(m.ToolCallID) > 256 || len(m.ToolName) > 256 || len(m.Author) > 256 {
		return fail(CodeInvalidArgument, "a chat message's tool call id, tool name or author is longer than 256 bytes")
	}
	return nil
}

// appendMessage stores m as chat id's next message (setting its ID and Time) and publishes it.
func (ov *overseer) appendMessage(ctx context.Context, id string, m ChatMessage) (ChatMessage, error) {
	if err := checkMessage(&m); err != nil {
		return ChatMessage{}, err
	}
	unlock := ov.k.chats.lock(chatKey{ov.id, id})
	defer unlock()
	c, err := ov.loadChat(id)
	if err != nil {
		return ChatMessage{}, err
	}
	m.ID = c.LastMessage + 1
	m.Time = time.Now().UTC()
	data, err := json.Marshal(m)
	if err != nil {
		return ChatMessage{}, fmt.Errorf("encode a message of chat %s: %w", id, err)
	}
	if c.Messages >= maxChatMessages || c.Bytes+int64(len(data)) > maxChatBytes {
		return ChatMessage{}, fail(CodeResourceExhausted, "chat %s is full (%d messages, %d bytes; at most %d and %d): start a new chat", id, c.Messages, c.Bytes, maxChatMessages, maxChatBytes)
	}
	c.LastMessage, c.Messages, c.Bytes, c.Updated = m.ID, c.Messages+1, c.Bytes+int64(len(data)), m.Time
	if err := ov.write(ctx, store.PutChatMessage(store.ChatMessage{Chat: id, ID: m.ID, Data: data}), store.PutChat(c)); err != nil {
		return ChatMessage{}, wrapErr(err, "store a message of chat %s", id)
	}
	ov.k.hub.publish(chatTopic(ov.id, id), ChatEvent{Type: EventMessage, Chat: id, Message: &m})
	return m, nil
}

// messages returns the newest limit messages of chat id below before (0: the newest), oldest
// first.
func (ov *overseer) messages(id string, before uint64, limit int) ([]ChatMessage, error) {
	recs, err := ov.ws.ChatMessages(id, before, limit)
	if err != nil {
		return nil, err
	}
	out := make([]ChatMessage, len(recs))
	for i, r := range recs {
		if err := json.Unmarshal(r.Data, &out[i]); err != nil {
			return nil, fmt.Errorf("message %d of chat %s is corrupt: %w", r.ID, id, err)
		}
	}
	return out, nil
}

// chatInfo describes chat c, with its run's state.
func (ov *overseer) chatInfo(ctx context.Context, c store.Chat) ChatInfo {
	key := chatKey{ov.id, c.ID}
	info := ChatInfo{ID: c.ID, Workspace: string(ov.id), Title: c.Title, ModelID: c.Model, Creator: ov.k.username(ctx, c.Creator),
		Created: c.Created, Updated: c.Updated, Running: ov.k.chats.running(key)}
	switch {
	case len(c.Requests) > 0:
		info.Waiting = "connection"
	case !info.Running:
		if ok, err := ov.ws.HasDraft(c.ID); err == nil && ok {
			info.Waiting = "draft"
		}
	}
	return info
}

// publishStatus publishes chat id's info as a "status" event (when someone listens).
func (ov *overseer) publishStatus(ctx context.Context, id string) {
	topic := chatTopic(ov.id, id)
	if !ov.k.hub.watched(topic) {
		return
	}
	c, err := ov.loadChat(id)
	if err != nil {
		return
	}
	info := ov.chatInfo(ctx, c)
	ov.k.hub.publish(topic, ChatEvent{Type: EventStatus, Chat: id, Info: &info})
}

// updateChat changes chat id's record with change, under the chat's lock.
func (ov *overseer) updateChat(ctx context.Context, id string, change func(c *store.Chat) error) (store.Chat, error) {
	unlock := ov.k.chats.lock(chatKey{ov.id, id})
	defer unlock()
	c, err := ov.loadChat(id)
	if err != nil {
		return store.Chat{}, err
	}
	if err := change(&c); err != nil {
		return store.Chat{}, err
	}
	c.Updated = time.Now().UTC()
	if err := ov.write(ctx, store.PutChat(c)); err != nil {
		return store.Chat{}, wrapErr(err, "update chat %s", id)
	}
	return c, nil
}
