package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// echoAgent answers with the text of the newest person's message it reads; mode switches it to
// block until its run is cancelled, to wait for gate first, or to panic.
type echoAgent struct {
	mode    atomic.Value // "", "block", "gate", "panic"
	gate    chan struct{}
	started chan string // the chatting user of each run
}

func newEchoAgent() *echoAgent {
	a := &echoAgent{gate: make(chan struct{}), started: make(chan string, 16)}
	a.mode.Store("")
	return a
}

func (a *echoAgent) Run(ctx context.Context, run kernel.ChatRun) error {
	a.started <- run.Chat().ID
	switch a.mode.Load() {
	case "block":
		<-ctx.Done()
		return ctx.Err()
	case "gate":
		select {
		case <-a.gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	case "panic":
		panic("scripted panic")
	}
	if _, err := run.Append(ctx, kernel.ChatMessage{Role: kernel.ChatUser, Text: "spoofed"}); err == nil {
		return errors.New("the agent could write a person's message")
	}
	wc, err := run.Context(ctx)
	if err != nil {
		return err
	}
	if wc.Instructions != "be brief" || wc.Workspace.Name != "home" {
		return errors.New("the workspace context lacks the instructions or the workspace")
	}
	h, err := run.History(ctx)
	if err != nil {
		return err
	}
	last := ""
	for _, m := range h {
		if m.Role == kernel.ChatUser {
			last = m.Text
		}
	}
	run.Emit(kernel.ChatEvent{Type: kernel.EventDelta, Text: "echo"})
	run.Emit(kernel.ChatEvent{Type: kernel.EventDone, Text: "forged"}) // the kernel's own: dropped
	_, err = run.Append(ctx, kernel.ChatMessage{Role: kernel.ChatAssistant, Text: "echo: " + last})
	return err
}

func TestChatAgentRunsStopsRetriesAndSurvivesPanics(t *testing.T) {
	agent := newEchoAgent()
	s := chatServer(t, filepath.Join(t.TempDir(), "a.db"), agent)
	ws := s.user(t, "ada").Call(ctx, "createWorkspace", "home")

	agent.mode.Store("block")
	chatID := await(t, ws.Call(ctx, "newChat", "hi", "m1")).(map[string]any)["id"].(string)
	<-agent.started
	events := newCollector()
	await(t, ws.Call(ctx, "subscribeChat", chatID, events.fn))
	if info := await(t, ws.Call(ctx, "getChat", chatID)).(map[string]any); info["running"] != true || info["modelId"] != "m1" {
		t.Fatalf("getChat during a run = %v", info)
	}
	refused(t, ws.Call(ctx, "retryAgent", chatID), "FAILED_PRECONDITION", "stopAgent first")
	await(t, ws.Call(ctx, "stopAgent", chatID))
	if why := events.done(t, 1); why != "stopped" {
		t.Fatalf("the stopped run ended with %q", why)
	}
	if got := lastText(t, ws, chatID); got != "The agent was stopped." {
		t.Fatalf("after a stop the chat ends with %q", got)
	}

	agent.mode.Store("")
	await(t, ws.Call(ctx, "retryAgent", chatID))
	if why := events.done(t, 2); why != "end" {
		t.Fatalf("the retried run ended with %q", why)
	}
	<-agent.started
	events.waitFor(t, "a delta", func(e map[string]any) bool { return e["type"] == "delta" && e["text"] == "echo" })
	if got := lastText(t, ws, chatID); got != "echo: hi" {
		t.Fatalf("the agent answered %q", got)
	}

	// A message sent during a run that the agent reads is answered once; one sent after it
	// read the history starts one more run.
	agent.mode.Store("gate")
	await(t, ws.Call(ctx, "sendChatMessage", chatID, "one"))
	<-agent.started
	await(t, ws.Call(ctx, "sendChatMessage", chatID, "two"))
	agent.mode.Store("")
	agent.gate <- struct{}{}
	if why := events.done(t, 3); why != "end" {
		t.Fatalf("the gated run ended with %q", why)
	}
	if got := lastText(t, ws, chatID); got != "echo: two" {
		t.Fatalf("the agent answered %q", got)
	}
	select {
	case <-agent.started:
		t.Fatal("a message the agent read started another run")
	default:
	}

	// A panic in the agent is an error in the chat, and the host goes on.
	agent.mode.Store("panic")
	await(t, ws.Call(ctx, "sendChatMessage", chatID, "crash"))
	if why := events.done(t, 4); why != "error" {
		t.Fatalf("the panicking run ended with %q", why)
	}
	e := events.waitFor(t, "the error event", func(e map[string]any) bool { return e["type"] == "error" })
	if !strings.Contains(e["text"].(string), "the agent crashed (scripted panic)") {
		t.Fatalf("error event = %v", e)
	}
	agent.mode.Store("")
	await(t, ws.Call(ctx, "sendChatMessage", chatID, "still there?"))
	if why := events.done(t, 5); why != "end" || lastText(t, ws, chatID) != "echo: still there?" {
		t.Fatalf("after a panic the next run ended with %q", why)
	}
	got := events.Got()
	for _, e := range got {
		if e["type"] == "done" && e["text"] == "forged" {
			t.Fatal("the agent forged a kernel event")
		}
	}

	// Without an agent, a chat with a model gets a notice saying so.
	s2 := chatServer(t, filepath.Join(t.TempDir(), "b.db"), nil)
	ws2 := s2.user(t, "ada").Call(ctx, "createWorkspace", "home")
	chat2 := await(t, ws2.Call(ctx, "newChat", "anyone?", "m1")).(map[string]any)["id"].(string)
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(lastText(t, ws2, chat2), "runs no agent"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("without an agent the chat ends with %q", lastText(t, ws2, chat2))
		}
	}
	refused(t, ws2.Call(ctx, "newChat", "hi", "m2"), "NOT_FOUND", "no model")
}

func TestChatConnectionRequestWaitsForTheUser(t *testing.T) {
	agent := newScriptAgent()
	s := chatServer(t, filepath.Join(t.TempDir(), "a.db"), agent)
	ada, bob := s.user(t, "ada"), s.user(t, "bob")
	ws := ada.Call(ctx, "createWorkspace", "home")
	id := await(t, ws.Call(ctx, "info")).(map[string]any)["id"].(string)
	await(t, ws.Call(ctx, "addCollaborator", "bob", "build"))

	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		return errors.Join(
			want(run.RequestConnection(ctx, kernel.ConnectionRequest{Gatekeeper: "mail", Binding: "Bad Name"}), "binding name"),
			want(run.RequestConnection(ctx, kernel.ConnectionRequest{Gatekeeper: "mail", Binding: "mail", Gadget: "nope"}), "no gadget"),
			run.RequestConnection(ctx, kernel.ConnectionRequest{Gatekeeper: "mail", Binding: "mail", Reason: strings.Repeat("r", 5000)}),
		)
	})
	chat := await(t, ws.Call(ctx, "newChat", "send the mail", nil)).(map[string]any)["id"].(string)
	// A chat between people gets no agent; asking for one is refused.
	refused(t, ws.Call(ctx, "retryAgent", chat), "FAILED_PRECONDITION", "between people")

	chat = await(t, ws.Call(ctx, "newChat", "send the mail", "m1")).(map[string]any)["id"].(string)
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	info := await(t, ws.Call(ctx, "getChat", chat)).(map[string]any)
	for deadline := time.Now().Add(10 * time.Second); info["running"] == true; info = await(t, ws.Call(ctx, "getChat", chat)).(map[string]any) {
		if time.Now().After(deadline) {
			t.Fatal("the waiting run did not end")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if info["waiting"] != "connection" {
		t.Fatalf("getChat of a chat waiting for a connection = %v", info)
	}

	// Only the user asked may answer; declining resumes the agent, which reads the answer.
	sub := newCollector()
	await(t, ws.Call(ctx, "subscribeChat", chat, sub.fn))
	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		return run.RequestConnection(ctx, kernel.ConnectionRequest{Gatekeeper: "mail", Binding: "mail"})
	})
	await(t, ws.Call(ctx, "retryAgent", chat))
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	e := sub.waitFor(t, "approval_needed", func(e map[string]any) bool { return e["type"] == "approval_needed" })
	reqID := e["connection"].(map[string]any)["id"].(string)
	if why := sub.done(t, 1); why != "waiting" {
		t.Fatalf("the run that asked for a connection ended with %q", why)
	}
	bws := bob.Call(ctx, "openWorkspace", id)
	// getChat brings the waiting requests back (a reloaded page shows them), to the user asked
	// only.
	asked := func(ws *capnweb.Promise) []any {
		c, _ := await(t, ws.Call(ctx, "getChat", chat)).(map[string]any)["connections"].([]any)
		return c
	}
	if c := asked(ws); len(c) != 2 || c[1].(map[string]any)["id"] != reqID {
		t.Fatalf("getChat's connections for the user asked = %v, want the two requests, the last %s", c, reqID)
	}
	if c := asked(bws); len(c) != 0 {
		t.Fatalf("getChat shows bob the requests that ask ada: %v", c)
	}
	refused(t, bws.Call(ctx, "answerConnection", chat, reqID, nil), "NOT_FOUND", "waiting for you")
	refused(t, ws.Call(ctx, "answerConnection", chat, reqID, "acct_not_mine"), "NOT_FOUND", "no account")
	agent.set(func(ctx context.Context, run kernel.ChatRun) error {
		h, err := run.History(ctx)
		if err != nil || !strings.Contains(h[len(h)-1].Text, "ada declined the connection of mail as mail") {
			return fmt.Errorf("the resumed agent did not read the answer: %v", err)
		}
		return nil
	})
	await(t, ws.Call(ctx, "answerConnection", chat, reqID, nil))
	if err := agent.result(t); err != nil {
		t.Fatal(err)
	}
	refused(t, ws.Call(ctx, "answerConnection", chat, reqID, nil), "NOT_FOUND", "waiting for you")
}
