package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"atelier/host/agent/provider"
	"atelier/host/kernel"
)

// author is the Author of what the agent stores.
const author = "agent"

// loop is the state of one run.
type loop struct {
	cfg    Config
	run    kernel.ChatRun
	chat   string
	spec   kernel.ModelSpec
	client provider.Client
	system string

	lastFailure string // the last failed call (tool and arguments)
	failures    int    // how many times in a row it failed
	// oversize holds the size of the arguments of this turn's calls that were over
	// MaxToolArgs, by call id: they are stored as {} and not run.
	oversize map[string]int
}

// loop calls the model and runs its tool calls, turn after turn.
func (l *loop) loop(ctx context.Context) error {
	for turn := 0; ; turn++ {
		if ctx.Err() != nil {
			return stopped(ctx)
		}
		if turn == l.cfg.MaxTurns {
			return turnLimit(l.cfg.MaxTurns)
		}
		msgs, err := l.messages(ctx)
		if err != nil {
			return end(ctx, err)
		}
		reply, partial, err := l.stream(ctx, msgs)
		if err != nil {
			if partial != "" {
				if _, aerr := l.run.Append(context.WithoutCancel(ctx), kernel.ChatMessage{Role: kernel.ChatAssistant, Author: author, Text: partial}); aerr != nil {
					return fmt.Errorf("store the partial reply: %w (after: %v)", aerr, err)
				}
			}
			return end(ctx, fmt.Errorf("the model's reply failed: %w", err))
		}
		calls, dropped := l.callsOf(reply, turn)
		if reply.Text == "" && len(calls) == 0 {
			return nil // nothing said: nothing to store
		}
		if _, err := l.run.Append(ctx, assistantMessage(reply.Text, calls)); err != nil {
			return end(ctx, fmt.Errorf("store the model's reply: %w", err))
		}
		if len(calls) == 0 {
			return nil
		}
		for i, c := range calls {
			note := ""
			if i == len(calls)-1 && dropped > 0 {
				note = fmt.Sprintf("\n[%d more tool calls of this reply were not run: at most %d a reply]", dropped, l.cfg.MaxToolCalls)
			}
			waits, err := l.call(ctx, c, note)
			if err != nil {
				return end(ctx, err)
			}
			if waits {
				return nil
			}
		}
	}
}

// callsOf returns the tool calls of reply to run (at most MaxToolCalls, each with an id, the
// arguments of each over MaxToolArgs replaced by {} and noted in oversize) and how many were
// dropped.
func (l *loop) callsOf(reply provider.Reply, turn int) ([]provider.ToolCall, int) {
	calls := reply.ToolCalls
	dropped := 0
	if len(calls) > l.cfg.MaxToolCalls {
		dropped = len(calls) - l.cfg.MaxToolCalls
		calls = calls[:l.cfg.MaxToolCalls]
	}
	calls = append([]provider.ToolCall(nil), calls...)
	clear(l.oversize)
	for i := range calls {
		if calls[i].ID == "" {
			calls[i].ID = fmt.Sprintf("call_%d_%d", turn, i)
		}
		if n := len(calls[i].Args); n > l.cfg.MaxToolArgs {
			if l.oversize == nil {
				l.oversize = map[string]int{}
			}
			l.oversize[calls[i].ID] = n
			calls[i].Args = json.RawMessage(`{}`)
		}
	}
	return calls, dropped
}

// assistantMessage is the message that stores a reply: its text and the calls run from it.
func assistantMessage(text string, calls []provider.ToolCall) kernel.ChatMessage {
	m := kernel.ChatMessage{Role: kernel.ChatAssistant, Author: author, Text: text}
	for _, c := range calls {
		m.ToolCalls = append(m.ToolCalls, kernel.ChatToolCall{ID: c.ID, Name: c.Name, Args: string(c.Args)})
	}
	return m
}

// stream calls the model with msgs, emitting each piece of text as a "delta" event as it
// arrives; it returns the reply, and on failure the text streamed so far.
func (l *loop) stream(ctx context.Context, msgs []provider.Message) (provider.Reply, string, error) {
	cctx, cancel := context.WithTimeout(ctx, l.cfg.ModelTimeout)
	defer cancel()
	var text strings.Builder
	req := provider.Request{System: l.system, Messages: msgs, Tools: toolDefs}
	reply, err := l.client.Stream(cctx, req, func(e provider.Event) error {
		if e.Kind != provider.EventText || e.Text == "" {
			return nil
		}
		if text.Len()+len(e.Text) > l.cfg.MaxReply {
			return fmt.Errorf("the reply is over %d bytes", l.cfg.MaxReply)
		}
		text.WriteString(e.Text)
		l.emit(kernel.ChatEvent{Type: kernel.EventDelta, Text: e.Text})
		return nil
	})
	if ctx.Err() == nil && cctx.Err() != nil {
		err = fmt.Errorf("no whole reply within %s; the model or its server may be overloaded, try again later", l.cfg.ModelTimeout)
	}
	if err != nil {
		return provider.Reply{}, text.String(), err
	}
	size := len(reply.Text)
	for _, c := range reply.ToolCalls {
		size += len(c.Name) + len(c.Args)
	}
	if size > l.cfg.MaxReply {
		return provider.Reply{}, text.String(), fmt.Errorf("the reply is over %d bytes", l.cfg.MaxReply)
	}
	return reply, "", nil
}

// end returns why the run ended after err: stopped when ctx was cancelled, else err.
func end(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return stopped(ctx)
	}
	return err
}

// stopped is the error of a run whose ctx was cancelled (stopAgent, the chat deleted, access
// lost): the kernel tells the chat from the cause.
func stopped(ctx context.Context) error {
	return fmt.Errorf("the run was stopped: %w", context.Cause(ctx))
}

// turnLimit ends a run that made MaxTurns model calls; it is kernel.ErrTurnLimit, whose text
// the kernel stores as the notice.
type turnLimit int

func (n turnLimit) Error() string {
	return fmt.Sprintf("stopped after %d turns; say 'continue' to go on", int(n))
}

// Is makes errors.Is(err, kernel.ErrTurnLimit) hold.
func (turnLimit) Is(target error) bool { return target == kernel.ErrTurnLimit }

// emit publishes e as an event of the chat.
func (l *loop) emit(e kernel.ChatEvent) {
	e.Chat = l.chat
	l.run.Emit(e)
}
