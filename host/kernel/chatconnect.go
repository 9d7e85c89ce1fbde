package kernel

import (
	"context"
	"slices"

	"atelier/host/store"
)

// AnswerConnection answers a connection request of the chat's agent: accountID names one of
// the caller's accounts to bind (nil declines). Only the user the request asked may answer.
// For a gadget the account is bound as with bindGatekeeper (build role); for the chat's Code
// Mode it joins the chat's bindings. The agent then resumes, acting as the caller.
func (w *Workspace) AnswerConnection(ctx context.Context, chatID, requestID string, accountID *string) error {
	return w.enterChats(ctx, store.RoleUse, "answerConnection", func(ov *overseer) error {
		c, err := ov.loadChat(chatID)
		if err != nil {
			return err
		}
		i := slices.IndexFunc(c.Requests, func(r store.ChatRequest) bool { return r.ID == requestID })
		if i < 0 || c.Requests[i].User != w.p.userID {
			return fail(CodeNotFound, "chat %s has no connection request %.70q waiting for you", chatID, requestID)
		}
		req := c.Requests[i]
		detail := "declined"
		if accountID != nil {
			detail = "account " + *accountID
			if req.Gadget != "" {
				if err := w.BindGatekeeper(ctx, req.Gadget, req.Binding, *accountID); err != nil {
					return wrapErr(err, "answerConnection")
				}
			} else if err := w.k.validGatekeeperBindings(ctx, w.p.userID, map[string]string{req.Binding: *accountID}); err != nil {
				return wrapErr(err, "answerConnection")
			}
		}
		_, err = ov.updateChat(ctx, chatID, func(c *store.Chat) error {
			c.Requests = slices.DeleteFunc(c.Requests, func(r store.ChatRequest) bool { return r.ID == requestID })
			if accountID != nil && req.Gadget == "" {
				if c.Gatekeepers == nil {
					c.Gatekeepers = map[string]string{}
				}
				c.Gatekeepers[req.Binding] = *accountID
				if len(c.Gatekeepers) > maxCodeGatekeepers {
					return fail(CodeResourceExhausted, "answerConnection: the chat binds %d accounts already, the most Code Mode takes", maxCodeGatekeepers)
				}
			}
			return nil
		})
		if err != nil {
			return wrapErr(err, "answerConnection")
		}
		if err := ov.audit(ctx, w.p, "chat.answerConnection", chatID, req.Gatekeeper+" as "+req.Binding+": "+detail); err != nil {
			return err
		}
		text := w.p.username + " declined the connection of " + req.Gatekeeper + " as " + req.Binding + "."
		if accountID != nil {
			text = w.p.username + " connected " + req.Gatekeeper + " as " + req.Binding + "."
		}
		m, err := ov.appendMessage(ctx, chatID, ChatMessage{Role: ChatNotice, Author: "host", Text: text})
		if err != nil {
			return wrapErr(err, "answerConnection")
		}
		if c.Model != "" {
			w.k.startChatRun(ov, chatID, w.p, m.ID)
		}
		return nil
	})
}
