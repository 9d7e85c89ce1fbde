package kernel

import (
	"context"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"atelier/capnweb"
	"atelier/host/store"
)

// Chats of a workspace (docs/agent.md): any collaborator (role use) reads and writes the
// messages of every chat of the workspace; a chat's title and deletion are for its creator or
// the owner. Chats are for people: an agent token (and a chat's own run) is refused here.

// enterChats runs fn on the overseer once the caller, a person, has role need.
func (w *Workspace) enterChats(ctx context.Context, need store.Role, what string, fn func(ov *overseer) error) error {
	return w.enterChatsAs(ctx, need, what, func(ov *overseer, _ store.Role) error { return fn(ov) })
}

// enterChatsAs is enterChats for fn that needs the caller's role.
func (w *Workspace) enterChatsAs(ctx context.Context, need store.Role, what string, fn func(ov *overseer, role store.Role) error) error {
	if w.p.agent != nil || w.p.chat != "" {
		return fail(CodeForbidden, "%s: chats are for people; an agent's token cannot reach them", what)
	}
	return w.enterAs(ctx, need, what, fn)
}

// NewChat starts a chat with the caller's first message; modelID names the model that
// answers (nil: a chat between people). With a model the agent starts at once.
func (w *Workspace) NewChat(ctx context.Context, message string, modelID *string) (ChatInfo, error) {
	var info ChatInfo
	model := ""
	if modelID != nil {
		model = *modelID
		if model == "" || len(model) > 128 {
			return info, fail(CodeInvalidArgument, "newChat: model id %.70q: want a model's id from listModels, or null for a chat between people", model)
		}
	}
	first := ChatMessage{Role: ChatUser, Author: w.p.username, Text: message}
	if err := checkMessage(&first); err != nil {
		return info, wrapErr(err, "newChat")
	}
	err := w.enterChats(ctx, store.RoleUse, "newChat", func(ov *overseer) error {
		if model != "" {
			// The model must be one the user may use; the key is not needed here.
			if _, err := w.k.chatModel(ctx, w.p.userID, model); err != nil {
				return wrapErr(err, "newChat")
			}
		}
		c, err := ov.createChat(ctx, w.p, message, model)
		if err != nil {
			return err
		}
		m, err := ov.appendMessage(ctx, c.ID, first)
		if err != nil {
			_ = ov.write(ctx, store.DeleteChat(c.ID))
			return wrapErr(err, "newChat")
		}
		if model != "" {
			w.k.startChatRun(ov, c.ID, w.p, m.ID)
		}
		if c, err = ov.loadChat(c.ID); err != nil {
			return err
		}
		info = ov.chatInfo(ctx, c)
		return nil
	})
	return info, err
}

// createChat stores a new chat of p's (its title from the first message), refusing past
// maxChats chats in the workspace.
func (ov *overseer) createChat(ctx context.Context, p *principal, message, model string) (store.Chat, error) {
	if strings.TrimSpace(message) == "" {
		return store.Chat{}, fail(CodeInvalidArgument, "newChat: the first message is empty")
	}
	unlock := ov.k.chats.lock(chatKey{ov.id, ""})
	defer unlock()
	chats, err := ov.ws.Chats()
	if err != nil {
		return store.Chat{}, wrapErr(err, "newChat")
	}
	if len(chats) >= maxChats {
		return store.Chat{}, fail(CodeResourceExhausted, "workspace %s has %d chats, the most it may hold: delete one (deleteChat) first", ov.id, len(chats))
	}
	now := time.Now().UTC()
	c := store.Chat{ID: store.NewID("ch"), Title: titleOf(message), Model: model, Creator: p.userID, Created: now, Updated: now}
	if err := ov.write(ctx, store.PutChat(c), auditEntry(p, "chat.create", c.ID, "model "+model)); err != nil {
		return store.Chat{}, wrapErr(err, "newChat")
	}
	return c, nil
}

// titleOf makes a chat's first title from its first message: the first line, cut to 60 bytes.
func titleOf(message string) string {
	t := strings.TrimSpace(strings.ToValidUTF8(message, ""))
	if i := strings.IndexAny(t, "\r\n"); i >= 0 {
		t = t[:i]
	}
	t = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, t)
	if len(t) > 60 {
		cut := 60
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		t = t[:cut] + "…"
	}
	return t
}

// SendChatMessage adds the caller's message to a chat and returns it as stored. In a chat
// with a model it starts the agent; when a run is under way the message is kept and the agent
// answers it in a run that follows (unless the current run answered it already).
func (w *Workspace) SendChatMessage(ctx context.Context, chatID, text string) (ChatMessage, error) {
	var m ChatMessage
	err := w.enterChats(ctx, store.RoleUse, "sendChatMessage", func(ov *overseer) error {
		if strings.TrimSpace(text) == "" {
			return fail(CodeInvalidArgument, "sendChatMessage: the message is empty")
		}
		c, err := ov.loadChat(chatID)
		if err != nil {
			return err
		}
		if m, err = ov.appendMessage(ctx, chatID, ChatMessage{Role: ChatUser, Author: w.p.username, Text: text}); err != nil {
			return wrapErr(err, "sendChatMessage")
		}
		if c.Model != "" {
			w.k.startChatRun(ov, chatID, w.p, m.ID)
		}
		return nil
	})
	return m, err
}

// ChatHistory is a page of a chat's messages.
type ChatHistory struct {
	// Messages are oldest first.
	Messages []ChatMessage `json:"messages"`
	// More says older messages exist: ask again with before set to Messages[0].ID.
	More bool `json:"more"`
}

// GetChatHistory returns up to 50 messages of a chat with ids below before (nil: the newest),
// oldest first.
func (w *Workspace) GetChatHistory(ctx context.Context, chatID string, before *uint64) (ChatHistory, error) {
	out := ChatHistory{Messages: []ChatMessage{}}
	bound := uint64(0)
	if before != nil {
		if *before <= 1 {
			return out, nil
		}
		bound = *before
	}
	err := w.enterChats(ctx, store.RoleUse, "getChatHistory", func(ov *overseer) error {
		if _, err := ov.loadChat(chatID); err != nil {
			return err
		}
		ms, err := ov.messages(chatID, bound, chatPage+1)
		if err != nil {
			return wrapErr(err, "getChatHistory")
		}
		if len(ms) > chatPage {
			out.More, ms = true, ms[1:]
		}
		out.Messages = append(out.Messages, ms...)
		return nil
	})
	return out, err
}

// SubscribeChat calls cb(event) with the chat's events (ChatEvent); the caller's role is
// checked again before every delivery.
func (w *Workspace) SubscribeChat(ctx context.Context, chatID string, cb *capnweb.Stub) (*Subscription, error) {
	check := func(ctx context.Context) error {
		return w.enterChats(ctx, store.RoleUse, "subscribeChat", func(ov *overseer) error {
			_, err := ov.loadChat(chatID)
			return err
		})
	}
	if err := check(ctx); err != nil {
		return nil, err
	}
	return w.k.hub.subscribe(chatTopic(w.id, chatID), w.id, "", cb, func() error { return check(context.Background()) })
}

// ListChats lists the workspace's chats, the most recently active first.
func (w *Workspace) ListChats(ctx context.Context) ([]ChatInfo, error) {
	out := []ChatInfo{}
	err := w.enterChats(ctx, store.RoleUse, "listChats", func(ov *overseer) error {
		cs, err := ov.ws.Chats()
		if err != nil {
			return wrapErr(err, "listChats")
		}
		for _, c := range cs {
			out = append(out, ov.chatInfo(ctx, c))
		}
		return nil
	})
	slices.SortStableFunc(out, func(a, b ChatInfo) int { return b.Updated.Compare(a.Updated) })
	return out, err
}

// GetChat describes one chat, with the connection requests of its agent that wait for the
// caller's answer (answerConnection).
func (w *Workspace) GetChat(ctx context.Context, chatID string) (ChatInfo, error) {
	var info ChatInfo
	err := w.enterChats(ctx, store.RoleUse, "getChat", func(ov *overseer) error {
		c, err := ov.loadChat(chatID)
		if err != nil {
			return err
		}
		info = ov.chatInfo(ctx, c)
		for _, r := range c.Requests {
			if r.User == w.p.userID {
				info.Connections = append(info.Connections, ConnectionRequest{ID: r.ID, Gatekeeper: r.Gatekeeper, Binding: r.Binding, Gadget: r.Gadget, Reason: r.Reason})
			}
		}
		return nil
	})
	return info, err
}

// chatOwned returns chat id if the caller started it or owns the workspace (FORBIDDEN else).
func (w *Workspace) chatOwned(ov *overseer, role store.Role, id, what string) (store.Chat, error) {
	c, err := ov.loadChat(id)
	if err != nil {
		return c, err
	}
	if c.Creator != w.p.userID && role != store.RoleOwner {
		return c, fail(CodeForbidden, "%s: only the chat's creator or the workspace's owner may do this", what)
	}
	return c, nil
}

// SetChatTitle renames a chat (its creator or the workspace's owner).
func (w *Workspace) SetChatTitle(ctx context.Context, chatID, title string) error {
	if err := validTitle("chat title", title, maxChatTitle); err != nil {
		return err
	}
	err := w.enterChatsAs(ctx, store.RoleUse, "setChatTitle", func(ov *overseer, role store.Role) error {
		if _, err := w.chatOwned(ov, role, chatID, "setChatTitle"); err != nil {
			return err
		}
		_, err := ov.updateChat(ctx, chatID, func(c *store.Chat) error {
			c.Title = title
			return nil
		})
		if err == nil {
			ov.publishStatus(ctx, chatID)
		}
		return err
	})
	return err
}

// DeleteChat deletes a chat with its messages and draft, stopping its agent (its creator or
// the workspace's owner).
func (w *Workspace) DeleteChat(ctx context.Context, chatID string) error {
	return w.enterChatsAs(ctx, store.RoleUse, "deleteChat", func(ov *overseer, role store.Role) error {
		if _, err := w.chatOwned(ov, role, chatID, "deleteChat"); err != nil {
			return err
		}
		key := chatKey{ov.id, chatID}
		w.k.chats.cancel(key, errRunDeleted)
		unlock := w.k.chats.lock(key)
		err := ov.write(ctx, store.DeleteChat(chatID), auditEntry(w.p, "chat.delete", chatID, ""))
		unlock()
		if err != nil {
			return wrapErr(err, "deleteChat")
		}
		topic := chatTopic(ov.id, chatID)
		w.k.hub.cancelWhere(func(s *Subscription) bool { return s.topic == topic })
		return nil
	})
}
