package agent

import (
	"context"
	"fmt"

	"atelier/host/agent/provider"
	"atelier/host/kernel"
)

// maxNameInMessage bounds how much of a model-chosen tool name goes into messages and audit.
const maxNameInMessage = 64

// call runs one tool call through the ChatRun: it emits tool_started, runs the tool (an
// unknown tool or invalid arguments are a tool error for the model, not a failure of the run),
// emits tool_finished with the bounded output, and stores it as a tool message; a dry run that
// waits for the person is emitted as proposed_change. It reports whether the run now waits for
// a person, and returns an error that ends the run: the call could not be stored, ctx was
// cancelled, or the model is stuck repeating a failing call.
func (l *loop) call(ctx context.Context, c provider.ToolCall, note string) (bool, error) {
	l.emit(kernel.ChatEvent{Type: kernel.EventToolStarted, Tool: &kernel.ChatToolEvent{ID: c.ID, Name: c.Name, Args: string(c.Args)}})
	out, wait, err := l.do(ctx, c)
	if wait.dryRun != nil {
		l.emit(kernel.ChatEvent{Type: kernel.EventProposed, DryRun: wait.dryRun})
	}
	if err != nil {
		out = err.Error()
	}
	out = boundOutput(out, l.cfg.MaxToolOutput) + note
	isErr := err != nil
	l.emit(kernel.ChatEvent{Type: kernel.EventToolFinished, Tool: &kernel.ChatToolEvent{ID: c.ID, Name: c.Name, Output: out, IsError: isErr}})
	m := kernel.ChatMessage{Role: kernel.ChatTool, Author: author, Text: out, ToolCallID: c.ID, ToolName: c.Name, IsError: isErr}
	if _, serr := l.run.Append(context.WithoutCancel(ctx), m); serr != nil {
		return false, fmt.Errorf("store the output of %s: %w", c.Name, serr)
	}
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if stuck := l.track(c, isErr); stuck {
		return false, fmt.Errorf("the model called %s with the same arguments %d times in a row and it failed each time (last: %s); say how to go on", cutUTF8(c.Name, maxNameInMessage), maxSameFailures, cutUTF8(out, 512))
	}
	return wait.waits(), nil
}

// do runs the tool c names, if it is one of the tools and its arguments were within bounds.
func (l *loop) do(ctx context.Context, c provider.ToolCall) (string, wait, error) {
	if n, ok := l.oversize[c.ID]; ok {
		return "", wait{}, fmt.Errorf("the arguments of this %s call are %d bytes, over the %d a call may have; it was not run: write big files in parts (writeFile a first part, then editFile to add the rest)", cutUTF8(c.Name, maxNameInMessage), n, l.cfg.MaxToolArgs)
	}
	t, ok := findTool(c.Name)
	if !ok {
		name := cutUTF8(c.Name, maxNameInMessage)
		if err := l.run.Audit(ctx, "unknownTool", fmt.Sprintf("refused a call of unknown tool %q", name)); err != nil {
			return "", wait{}, fmt.Errorf("unknown tool %q (and the audit failed: %v)", name, err)
		}
		return "", wait{}, fmt.Errorf("unknown tool %q; the tools are %s", name, toolNames)
	}
	return t.do(ctx, l.run, c.Args)
}

// track counts failures of the same call in a row and says when the model is stuck.
func (l *loop) track(c provider.ToolCall, failed bool) bool {
	if !failed {
		l.lastFailure, l.failures = "", 0
		return false
	}
	key := c.Name + "\x00" + string(c.Args)
	if key != l.lastFailure {
		l.lastFailure, l.failures = key, 0
	}
	l.failures++
	return l.failures >= maxSameFailures
}
