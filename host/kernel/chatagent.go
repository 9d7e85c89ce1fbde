package kernel

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"atelier/host/store"
)

// The runs of a chat's agent. A user's message in a chat with a model starts a run (so do
// retryAgent and accepting a connection request); a chat has at most one run at a time. A
// message that arrives during a run is stored at once and marks the run: when it ends (not
// stopped), a new run starts if the agent did not read that message (ChatRun.History) during
// the run, so it is answered once. A run acts as the chatting user (the one whose
// message or answer started it) with that user's current role, and its context is cancelled
// by stopAgent, deleteChat, the user's loss of access, the kernel's Close, and (cluster mode)
// the loss of the workspace's lease: a run does not follow its workspace to another node.

// stopWait bounds how long stopAgent waits for the stopped run to end.
const stopWait = 10 * time.Second

// startChatRun starts a run of chat id for user p, or marks the running one to run again
// unless its agent reads message msg, the message that asks for the run.
func (k *Kernel) startChatRun(ov *overseer, id string, p *principal, msg uint64) {
	key := chatKey{ov.id, id}
	s := &k.chats
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if r := s.runs[key]; r != nil {
		r.pending = max(r.pending, msg)
		r.waiting = false // a person acted: the chat does not wait any more
		return
	}
	if s.runs == nil {
		s.runs = map[chatKey]*liveRun{}
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	r := &liveRun{cancel: cancel, done: make(chan struct{}), p: p.forChat(id)}
	s.runs[key] = r
	s.wg.Add(1)
	go k.runChat(ctx, ov.id, id, r)
}

// runChat runs chat id's agent until no message waits for it, then forgets the run.
func (k *Kernel) runChat(ctx context.Context, ws store.WorkspaceID, id string, r *liveRun) {
	defer k.chats.wg.Done()
	defer r.cancel(nil)
	w := &Workspace{k: k, p: r.p, id: ws}
	for {
		w.publishStatus(id)
		err := k.runOnce(ctx, w, id, r)
		w.endRun(ctx, id, r, err)
		if !k.runAgain(ctx, w, id, r) {
			w.publishStatus(id)
			return
		}
	}
}

// runAgain reports whether chat id must run once more (a person added a message the agent did
// not read), else forgets the run.
func (k *Kernel) runAgain(ctx context.Context, w *Workspace, id string, r *liveRun) bool {
	s := &k.chats
	s.mu.Lock()
	defer s.mu.Unlock()
	if ctx.Err() != nil || r.waiting || r.pending <= r.seen {
		delete(s.runs, chatKey{w.id, id})
		close(r.done)
		return false
	}
	return true
}

// runOnce makes one call of the kernel's AgentRunner; a panic in it becomes an error.
func (k *Kernel) runOnce(ctx context.Context, w *Workspace, id string, r *liveRun) (err error) {
	if k.cfg.Agent == nil {
		return fail(CodeFailedPrecondition, "this server runs no agent, so nobody answers in chats with a model; the messages are kept (ask the admin to configure the agent)")
	}
	var c store.Chat
	var info ChatInfo
	if err := w.enter(ctx, store.RoleUse, "the chat's agent", func(ov *overseer) error {
		var err error
		if c, err = ov.loadChat(id); err == nil {
			info = ov.chatInfo(ctx, c)
		}
		return err
	}); err != nil {
		return err
	}
	spec, err := k.chatModel(ctx, r.p.userID, c.Model)
	if err != nil {
		return err
	}
	run := &agentRun{w: w, live: r, chatID: id, model: spec, info: info}
	defer func() {
		if p := recover(); p != nil {
			k.log.Error("the chat's agent panicked", "workspace", w.id, "chat", id, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("the agent crashed (%v); the chat is kept: retry, or report it to the admin", p)
		}
	}()
	return k.cfg.Agent.Run(ctx, run)
}

// endRun tells the chat how run ended: a notice and an "error" event for an error, a notice
// for a stop, and a "done" event.
func (w *Workspace) endRun(ctx context.Context, id string, r *liveRun, err error) {
	cause := context.Cause(ctx)
	why, notice := "end", ""
	switch {
	case errors.Is(cause, errRunDeleted) || errors.Is(cause, errRunClosed) || errors.Is(cause, errRunMoved):
		return // nobody is left to tell, or the chat's store is closing or written elsewhere now
	case errors.Is(cause, errRunStopped):
		why, notice = "stopped", "The agent was stopped."
	case errors.Is(cause, errRunAccessLost):
		why, notice = "error", fmt.Sprintf("The agent stopped: %s no longer has access to this workspace.", r.p.username)
	case errors.Is(err, ErrTurnLimit):
		why, notice = "turns", err.Error()
	case err != nil:
		why, notice = "error", "The agent failed: "+err.Error()
	case r.waiting:
		why = "waiting"
	}
	// The notice is written with a context of its own: the run's may be cancelled already.
	wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = w.k.withCachedOverseer(wctx, w.id, &w.ov, func(ov *overseer) error {
		if notice != "" {
			if _, err := ov.appendMessage(wctx, id, ChatMessage{Role: ChatNotice, Author: "host", Text: notice}); err != nil {
				w.k.log.Warn("chat notice not stored", "workspace", w.id, "chat", id, "err", err)
			}
		}
		topic := chatTopic(ov.id, id)
		if why == "error" {
			w.k.hub.publish(topic, ChatEvent{Type: EventError, Chat: id, Text: notice})
		}
		w.k.hub.publish(topic, ChatEvent{Type: EventDone, Chat: id, Text: why})
		return nil
	})
}

// publishStatus publishes chat id's info as a "status" event.
func (w *Workspace) publishStatus(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = w.k.withCachedOverseer(ctx, w.id, &w.ov, func(ov *overseer) error {
		ov.publishStatus(ctx, id)
		return nil
	})
}

// StopAgent stops the chat's agent run, if one is under way, and returns once it ended.
func (w *Workspace) StopAgent(ctx context.Context, chatID string) error {
	var ended <-chan struct{}
	err := w.enterChats(ctx, store.RoleUse, "stopAgent", func(ov *overseer) error {
		if _, err := ov.loadChat(chatID); err != nil {
			return err
		}
		if ended = w.k.chats.cancel(chatKey{ov.id, chatID}, errRunStopped); ended != nil {
			return ov.audit(ctx, w.p, "chat.stop", chatID, "")
		}
		return nil
	})
	if err != nil || ended == nil {
		return err
	}
	// The run ends at its next step (a stream read, a tool call's end); wait for it, so that
	// the chat no longer shows as running when stopAgent returns.
	select {
	case <-ended:
		return nil
	case <-time.After(stopWait):
		return fail(CodeUnavailable, "stopAgent: the agent of chat %s was told to stop but has not ended within %s; it ends when its current tool call does", chatID, stopWait)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// RetryAgent starts the chat's agent again (after an error or a stop), acting as the caller.
func (w *Workspace) RetryAgent(ctx context.Context, chatID string) error {
	return w.enterChats(ctx, store.RoleUse, "retryAgent", func(ov *overseer) error {
		c, err := ov.loadChat(chatID)
		if err != nil {
			return err
		}
		if c.Model == "" {
			return fail(CodeFailedPrecondition, "retryAgent: chat %s is between people (it has no model)", chatID)
		}
		if w.k.chats.running(chatKey{ov.id, chatID}) {
			return fail(CodeFailedPrecondition, "retryAgent: the agent is running in chat %s; stopAgent first", chatID)
		}
		w.k.startChatRun(ov, chatID, w.p, 0)
		return nil
	})
}
