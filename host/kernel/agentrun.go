package kernel

import (
	"context"
	"strings"
	"time"

	"atelier/host/store"
)

// Bounds of what a run publishes as transient events.
const (
	maxDelta      = 64 << 10 // one text delta
	maxToolOutput = 64 << 10 // a tool event's output (the tool message keeps up to maxChatText)
	maxReason     = 1000     // a connection request's reason
	maxRequests   = 8        // connection requests waiting in one chat
)

// agentRun is the kernel's ChatRun: one run of a chat's agent, acting as the chatting user
// through w (whose principal is the user's forChat principal).
type agentRun struct {
	w      *Workspace
	live   *liveRun
	chatID string
	info   ChatInfo
	model  ModelSpec
}

// enter runs fn on the overseer once the user's current role includes need. Losing all access
// ends the run (its context is cancelled); a role too weak for need is only this call's error.
func (r *agentRun) enter(ctx context.Context, need store.Role, what string, fn func(ov *overseer) error) error {
	return r.w.k.withCachedOverseer(ctx, r.w.id, &r.w.ov, func(ov *overseer) error {
		meta, role, err := ov.access(r.w.p)
		if err != nil {
			r.live.cancel(errRunAccessLost)
			return err
		}
		if !role.Allows(need) {
			return fail(CodeForbidden, "%s needs the %s role in workspace %s; %s has %s, so this agent cannot do it (ask a builder to)", what, need, ov.id, r.w.p.username, role)
		}
		if err := ov.observerGate(ctx, r.w.p, meta); err != nil {
			return err
		}
		return fn(ov)
	})
}

// tool is enter for a tool call, which it audits with the chat named.
func (r *agentRun) tool(ctx context.Context, need store.Role, what, detail string, fn func(ov *overseer) error) error {
	return r.enter(ctx, need, what, func(ov *overseer) error {
		if err := fn(ov); err != nil {
			_ = ov.audit(ctx, r.w.p, "chat.tool", what, cutText(detail+"; failed: "+err.Error(), 500))
			return err
		}
		return ov.audit(ctx, r.w.p, "chat.tool", what, detail)
	})
}

// Chat implements ChatRun.
func (r *agentRun) Chat() ChatInfo { return r.info }

// Model implements ChatRun.
func (r *agentRun) Model() ModelSpec { return r.model }

// History implements ChatRun: the messages from the newest summary on, read page by page
// backwards (a chat holds at most maxChatBytes, which bounds the read).
func (r *agentRun) History(ctx context.Context) ([]ChatMessage, error) {
	var out []ChatMessage
	err := r.enter(ctx, store.RoleUse, "read the chat", func(ov *overseer) error {
		before := uint64(0)
		for {
			page, err := ov.messages(r.chatID, before, 200)
			if err != nil {
				return wrapErr(err, "read the history of chat %s", r.chatID)
			}
			for i := len(page) - 1; i >= 0; i-- {
				if page[i].Role == ChatSummary {
					out = append(page[i:], out...)
					return nil
				}
			}
			out = append(page, out...)
			if len(page) < 200 {
				return nil
			}
			before = page[0].ID
		}
	})
	if len(out) > 0 {
		r.w.k.chats.mu.Lock()
		r.live.seen = max(r.live.seen, out[len(out)-1].ID)
		r.w.k.chats.mu.Unlock()
	}
	return out, err
}

// Append implements ChatRun. The agent writes assistant, tool, summary and notice messages
// only (never a person's), as "agent".
func (r *agentRun) Append(ctx context.Context, m ChatMessage) (ChatMessage, error) {
	if m.Role == ChatUser {
		return ChatMessage{}, fail(CodeInvalidArgument, "the agent may not write a person's message")
	}
	m.Author = "agent"
	var out ChatMessage
	err := r.enter(ctx, store.RoleUse, "write to the chat", func(ov *overseer) error {
		var err error
		out, err = ov.appendMessage(ctx, r.chatID, m)
		return err
	})
	return out, err
}

// Emit implements ChatRun: it publishes text deltas, tool calls starting and finishing, and
// dry runs waiting; other types are the kernel's and are dropped, and long texts are cut.
func (r *agentRun) Emit(e ChatEvent) {
	switch e.Type {
	case EventDelta:
		e = ChatEvent{Type: e.Type, Text: cutText(e.Text, maxDelta)}
	case EventToolStarted, EventToolFinished:
		if e.Tool == nil {
			return
		}
		t := *e.Tool
		t.Args, t.Output = cutText(t.Args, maxChatToolArgs), cutText(t.Output, maxToolOutput)
		e = ChatEvent{Type: e.Type, Tool: &t}
	case EventProposed:
		if e.DryRun == nil {
			return
		}
		e = ChatEvent{Type: e.Type, DryRun: e.DryRun}
	default:
		r.w.k.log.Warn("a chat's agent emitted an event type the kernel keeps for itself; dropped", "type", e.Type, "chat", r.chatID)
		return
	}
	e.Chat = r.chatID
	r.w.k.hub.publish(chatTopic(r.w.id, r.chatID), e)
}

// chatGatekeepers returns the accounts the user bound to the chat's Code Mode.
func (r *agentRun) chatGatekeepers(ov *overseer) (map[string]string, error) {
	c, err := ov.loadChat(r.chatID)
	return c.Gatekeepers, err
}

// ListBindings implements ChatRun: the user's bindings, with the chat's gatekeeper accounts.
func (r *agentRun) ListBindings(ctx context.Context) (out []BindingInfo, err error) {
	err = r.tool(ctx, store.RoleUse, "listBindings", "", func(ov *overseer) error {
		gks, err := r.chatGatekeepers(ov)
		if err == nil {
			out, err = r.w.listBindings(ctx, gks)
		}
		return err
	})
	return out, err
}

// DescribeBinding implements ChatRun.
func (r *agentRun) DescribeBinding(ctx context.Context, name string) (out string, err error) {
	err = r.tool(ctx, store.RoleUse, "describeBinding", cutText(name, 100), func(ov *overseer) error {
		gks, err := r.chatGatekeepers(ov)
		if err == nil {
			out, err = r.w.describeBinding(ctx, gks, name)
		}
		return err
	})
	return out, err
}

// ExecuteCode implements ChatRun: Workspace.ExecuteCode as the user, with the chat's
// gatekeeper accounts (the agent cannot name accounts itself). It is audited by executeCode.
// A dry run it holds marks the run waiting (the agent emits it as "proposed_change").
func (r *agentRun) ExecuteCode(ctx context.Context, code string, opts CodeOptions) (CodeResult, error) {
	if len(opts.Gatekeepers) > 0 {
		return CodeResult{}, fail(CodeForbidden, "executeCode: the agent's gatekeeper accounts come from connection requests the user accepted (requestConnection), not from options")
	}
	err := r.enter(ctx, store.RoleUse, "executeCode", func(ov *overseer) error {
		var err error
		opts.Gatekeepers, err = r.chatGatekeepers(ov)
		return err
	})
	if err != nil {
		return CodeResult{}, err
	}
	res, err := r.w.executeCode(ctx, code, opts, "chat")
	if err == nil && res.DryRun != nil && res.DryRun.ID != "" {
		// A held dry run waits for the user to commit or discard it: the run ends its turn.
		r.w.k.chats.mu.Lock()
		r.live.waiting = true
		r.w.k.chats.mu.Unlock()
	}
	return res, err
}

// ListBlueprints implements ChatRun: the user's blueprints.
func (r *agentRun) ListBlueprints(ctx context.Context) ([]BlueprintInfo, error) {
	var out []BlueprintInfo
	err := r.tool(ctx, store.RoleUse, "listBlueprints", "", func(*overseer) error {
		var err error
		out, err = r.w.ListBlueprints(ctx)
		return err
	})
	return out, err
}

// RequestConnection implements ChatRun: it stores the request, marks the run waiting, and
// publishes "approval_needed". The user's answer (answerConnection) resumes the chat.
func (r *agentRun) RequestConnection(ctx context.Context, req ConnectionRequest) error {
	if req.Binding != "" {
		if err := validName("binding", req.Binding); err != nil {
			return err
		}
	}
	if req.Gatekeeper == "" || len(req.Gatekeeper) > 128 || req.Binding == "" || len(req.Gadget) > 64 {
		return fail(CodeInvalidArgument, "requestConnection: name the gatekeeper (at most 128 bytes), the binding, and the gadget (or none for Code Mode)")
	}
	req.Reason = cutText(strings.ToValidUTF8(req.Reason, ""), maxReason)
	req.ID = store.NewID("cr")
	detail := "gatekeeper " + req.Gatekeeper + " as " + req.Binding
	return r.tool(ctx, store.RoleUse, "requestConnection", detail, func(ov *overseer) error {
		if req.Gadget != "" {
			if _, err := ov.gadgetByName(req.Gadget); err != nil {
				return err
			}
		}
		_, err := ov.updateChat(ctx, r.chatID, func(c *store.Chat) error {
			if len(c.Requests) >= maxRequests {
				return fail(CodeResourceExhausted, "requestConnection: %d requests wait for the user already; wait for the answers", len(c.Requests))
			}
			c.Requests = append(c.Requests, store.ChatRequest{ID: req.ID, User: r.w.p.userID, Gatekeeper: req.Gatekeeper, Binding: req.Binding,
				Gadget: req.Gadget, Reason: req.Reason, Created: time.Now().UTC()})
			return nil
		})
		if err != nil {
			return err
		}
		r.w.k.chats.mu.Lock()
		r.live.waiting = true
		r.w.k.chats.mu.Unlock()
		ov.k.hub.publish(chatTopic(ov.id, r.chatID), ChatEvent{Type: EventApproval, Chat: r.chatID, Connection: &req})
		ov.publishStatus(ctx, r.chatID)
		return nil
	})
}

// Audit implements ChatRun.
func (r *agentRun) Audit(ctx context.Context, tool, detail string) error {
	return r.enter(ctx, store.RoleUse, "audit", func(ov *overseer) error {
		return ov.audit(ctx, r.w.p, "chat.tool", cutText(tool, 100), cutText(detail, 1000))
	})
}
