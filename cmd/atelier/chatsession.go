package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"atelier/capnweb"
	"atelier/host/kernel"
)

// stopTimeout bounds the stopAgent call made on Ctrl-C (the command's own context is done then).
const stopTimeout = 5 * time.Second

// question is something the chat asks the person once the agent is done: show prints what
// it is about, answer gets the line they typed.
type question struct {
	prompt string
	show   func()
	answer func(ctx context.Context, line string) error
}

// chatSession is one terminal chat: it prints the chat's events and turns the lines typed
// into messages and answers. It is turn-based: lines wait while the agent works, so that a
// script's lines ("make a gadget", "y") meet the turn they were written for.
type chatSession struct {
	c       *client
	ws      *capnweb.Promise
	p       *chatPrinter
	asJSON  bool
	std     streams
	events  chan map[string]any
	chat    kernel.ChatInfo
	running bool
	asks    []question      // what to ask once the agent is done
	asked   bool            // asks[0] was put to the person
	draft   string          // the draft last asked about (JSON), not to ask twice of the same
	dries   map[string]bool // the dry runs asked about, by id
}

func newChatSession(ctx context.Context, c *client, ws *capnweb.Promise, verbose, asJSON bool) (*chatSession, error) {
	me, err := await[struct {
		Username string `json:"username"`
	}](ctx, c, c.api.Call(ctx, "whoami"))
	if err != nil {
		return nil, err
	}
	std := stdio(ctx)
	return &chatSession{c: c, ws: ws, p: newChatPrinter(std.out, me.Username, verbose), asJSON: asJSON, std: std, events: make(chan map[string]any, 256), dries: map[string]bool{}}, nil
}

// run chats in chat id, or (id "") in a new chat with model that the first line starts.
func (s *chatSession) run(ctx context.Context, id, model string) error {
	lines := readLines(s.std.in)
	if id == "" {
		s.say("New chat: type your message (Ctrl-D ends).")
		line, ok := firstMessage(ctx, lines)
		if !ok {
			return nil
		}
		info, err := await[kernel.ChatInfo](ctx, s.c, s.ws.Call(ctx, "newChat", line, model))
		if err != nil {
			return err
		}
		id = info.ID
		s.say("chat " + info.ID)
	}
	sub, err := await[*capnweb.Stub](ctx, s.c, s.ws.Call(ctx, "subscribeChat", id, s.deliver))
	if err != nil {
		return err
	}
	defer sub.Dispose()
	if err := s.load(ctx, id); err != nil {
		return err
	}
	eof := false
	for {
		if !s.running {
			if eof {
				s.leave(id)
				return nil
			}
			if len(s.asks) > 0 && !s.asked {
				if !s.asJSON { // the events were printed as they are
					s.asks[0].show()
				}
				s.say(s.asks[0].prompt)
				s.asked = true
			}
		}
		var in <-chan string
		if !s.running {
			in = lines
		}
		select {
		case <-ctx.Done():
			return s.interrupt(id)
		case <-s.c.sess.Done():
			return s.c.explain(s.c.sess.Err())
		case ev := <-s.events:
			if err := s.event(ctx, ev); err != nil {
				return err
			}
		case line, ok := <-in:
			if !ok {
				eof = true
				continue
			}
			if err := s.line(ctx, id, line); err != nil {
				s.p.notice(err.Error())
			}
		}
	}
}

// firstMessage returns the first line that is not blank, or false at the end of input or on Ctrl-C.
func firstMessage(ctx context.Context, lines <-chan string) (string, bool) {
	for {
		select {
		case <-ctx.Done():
			return "", false
		case l, ok := <-lines:
			if !ok {
				return "", false
			}
			if l = strings.TrimSpace(l); l != "" {
				return l, true
			}
		}
	}
}

// line handles a line the person typed: the answer to the question put, else a message.
func (s *chatSession) line(ctx context.Context, id, line string) error {
	if len(s.asks) > 0 {
		q := s.asks[0]
		s.asks, s.asked = s.asks[1:], false
		return q.answer(ctx, line)
	}
	if strings.TrimSpace(line) == "" {
		return nil
	}
	if _, err := await[kernel.ChatMessage](ctx, s.c, s.ws.Call(ctx, "sendChatMessage", id, line)); err != nil {
		return err
	}
	s.running = s.chat.ModelID != ""
	return nil
}

// interrupt ends the session on Ctrl-C, stopping the agent first if it works.
func (s *chatSession) interrupt(id string) error {
	s.p.endStream()
	if !s.running {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	if _, err := await[any](ctx, s.c, s.ws.Call(ctx, "stopAgent", id)); err != nil {
		return fmt.Errorf("stop the agent: %w", err)
	}
	s.say("stopped the agent")
	return nil
}

// leave ends the session at the end of input, saying what still waits for the person.
func (s *chatSession) leave(id string) {
	if len(s.asks) > 0 {
		s.say(fmt.Sprintf("%d question(s) left unanswered: go on with atelier chat --chat %s, or in the workshop", len(s.asks), id))
	}
}

// readLines sends the lines of r on the channel it returns, closed at the end of r.
func readLines(r io.Reader) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

// yes reports whether an answer to a [y/N] question is yes.
func yes(line string) bool {
	a := strings.ToLower(strings.TrimSpace(line))
	return a == "y" || a == "yes"
}

// deliver is the subscription's callback: it hands events to the loop.
func (s *chatSession) deliver(ctx context.Context, ev map[string]any) {
	select {
	case s.events <- ev:
	case <-ctx.Done():
	}
}

// load shows where the chat stands: its last messages, whether the agent works, its draft.
func (s *chatSession) load(ctx context.Context, id string) error {
	info, err := await[kernel.ChatInfo](ctx, s.c, s.ws.Call(ctx, "getChat", id))
	if err != nil {
		return err
	}
	hist, err := await[struct {
		Messages []kernel.ChatMessage `json:"messages"`
	}](ctx, s.c, s.ws.Call(ctx, "getChatHistory", id))
	if err != nil {
		return err
	}
	// Of the dry runs in the history, only the latest since the person last wrote, if it has
	// not expired, may still be held.
	var held *kernel.DryRunInfo
	for i, m := range hist.Messages {
		if d := dryRunOf(m); d != nil {
			held = d
		} else if m.Role == kernel.ChatUser {
			held = nil
		}
		s.emit(kernel.ChatEvent{Type: kernel.EventMessage, Chat: id, Message: &hist.Messages[i]}, nil)
	}
	if held != nil && time.Now().Before(held.Expires) {
		s.dryRun(*held)
	}
	// A person's message last in a chat with a model is one the agent is about to answer.
	last := len(hist.Messages) - 1
	s.chat = info
	s.running = info.Running || info.ModelID != "" && last >= 0 && hist.Messages[last].Role == kernel.ChatUser
	d, err := await[kernel.DraftInfo](ctx, s.c, s.ws.Call(ctx, "getDraft", id))
	if err != nil {
		return err
	}
	s.proposed(id, d)
	return nil
}

// say writes a line of the session's own (not the chat's) for the person.
func (s *chatSession) say(text string) {
	w := s.std.out
	if s.asJSON {
		w = s.std.err
	}
	s.p.endStream()
	fmt.Fprintln(w, text)
}

// emit prints an event: raw as JSON (ev itself when raw is nil), or as text.
func (s *chatSession) emit(ev kernel.ChatEvent, raw map[string]any) {
	if s.asJSON {
		var b []byte
		if raw != nil {
			b, _ = json.Marshal(raw)
		} else {
			b, _ = json.Marshal(ev)
		}
		fmt.Fprintln(s.std.out, string(b))
		return
	}
	switch ev.Type {
	case kernel.EventMessage:
		s.p.message(*ev.Message)
	case kernel.EventDelta:
		s.p.delta(ev.Text)
	case kernel.EventToolFinished:
		s.p.tool(*ev.Tool)
	case kernel.EventError:
		s.p.notice("error: " + ev.Text)
	case kernel.EventDone:
		if why, ok := doneText[ev.Text]; ok {
			s.p.notice(why)
		}
	case kernel.EventApproval:
		if ev.Connection == nil {
			s.p.notice("a gatekeeper action waits for approval in the workshop's Approvals tab")
		}
	}
}

// event handles one event of the subscription.
func (s *chatSession) event(ctx context.Context, raw map[string]any) error {
	var ev kernel.ChatEvent
	b, err := json.Marshal(raw)
	if err == nil {
		err = json.Unmarshal(b, &ev)
	}
	if err != nil {
		return fmt.Errorf("the server sent an event this client cannot read: %w", err)
	}
	if ev.Type == kernel.EventMessage && ev.Message == nil || ev.Type == kernel.EventToolFinished && ev.Tool == nil {
		return fmt.Errorf("the server sent a %q event without its content", ev.Type)
	}
	s.emit(ev, raw)
	switch ev.Type {
	case kernel.EventMessage:
		if d := dryRunOf(*ev.Message); d != nil { // its event may have come before this session subscribed
			s.dryRun(*d)
		}
	case kernel.EventDelta, kernel.EventToolStarted, kernel.EventToolFinished:
		s.running = true
	case kernel.EventDone, kernel.EventError:
		s.running = false
	case kernel.EventStatus:
		if ev.Info != nil {
			s.chat = *ev.Info
		}
	case kernel.EventProposed:
		if ev.Draft != nil {
			s.proposed(ev.Chat, *ev.Draft)
		}
		if ev.DryRun != nil {
			s.dryRun(*ev.DryRun)
		}
	case kernel.EventApproval:
		if ev.Connection != nil {
			return s.connection(ctx, ev.Chat, *ev.Connection)
		}
	}
	return nil
}

const draftQuestion = "accept this draft? [y/N]"

// doneText says why a run ended, by its reason (an "end" says nothing).
var doneText = map[string]string{"stopped": "the agent was stopped", "waiting": "the agent waits for you", "turns": "the agent stopped: it used all its turns"}

// proposed queues the question of the chat's draft in place of an earlier version of it.
func (s *chatSession) proposed(id string, d kernel.DraftInfo) {
	key, _ := json.Marshal(d)
	if len(d.Files) == 0 && len(d.NewGadgets) == 0 || string(key) == s.draft {
		return
	}
	s.draft = string(key)
	for i, q := range s.asks {
		if q.prompt == draftQuestion && !(i == 0 && s.asked) {
			s.asks = append(s.asks[:i], s.asks[i+1:]...)
			break
		}
	}
	s.asks = append(s.asks, question{prompt: draftQuestion, show: func() { s.p.draft(d) }, answer: func(ctx context.Context, line string) error {
		s.draft = ""
		if !yes(line) {
			if _, err := await[any](ctx, s.c, s.ws.Call(ctx, "rejectDraft", id)); err != nil {
				return err
			}
			s.say("draft rejected")
			return nil
		}
		deployed, err := await[[]kernel.GadgetInfo](ctx, s.c, s.ws.Call(ctx, "acceptDraft", id))
		if err != nil {
			return err
		}
		for _, g := range deployed {
			s.say(fmt.Sprintf("deployed %s version %d", g.Name, g.Current))
		}
		return nil
	}})
}

// dryRunOf returns the dry run an executeCode tool message holds, or nil: its output is the
// CodeResult as JSON, then a blank line and a note (an output cut short holds none).
func dryRunOf(m kernel.ChatMessage) *kernel.DryRunInfo {
	if m.Role != kernel.ChatTool || m.ToolName != "executeCode" {
		return nil
	}
	result, _, _ := strings.Cut(m.Text, "\n\n")
	var r kernel.CodeResult
	if json.Unmarshal([]byte(result), &r) != nil || r.DryRun == nil || r.DryRun.ID == "" {
		return nil
	}
	return r.DryRun
}

// dryRun queues the question of a dry run, once: commit or discard.
func (s *chatSession) dryRun(d kernel.DryRunInfo) {
	if s.dries[d.ID] {
		return
	}
	s.dries[d.ID] = true
	s.asks = append(s.asks, question{prompt: fmt.Sprintf("commit dry run %s? [y/N]", d.ID), show: func() { s.p.dryRun(d) }, answer: func(ctx context.Context, line string) error {
		if !yes(line) {
			if _, err := await[any](ctx, s.c, s.ws.Call(ctx, "discardDryRun", d.ID)); err != nil {
				return err
			}
			s.say("dry run discarded")
			return nil
		}
		r, err := await[struct {
			Actions []any `json:"actions"`
		}](ctx, s.c, s.ws.Call(ctx, "commitDryRun", d.ID))
		if err != nil {
			return err
		}
		s.say(fmt.Sprintf("committed; %d gatekeeper action(s) wait for approval", len(r.Actions)))
		return nil
	}})
}

// connection queues the question of a connection request: which of the user's accounts of
// its gatekeeper to bind, by number, or none.
func (s *chatSession) connection(ctx context.Context, id string, req kernel.ConnectionRequest) error {
	all, err := await[[]kernel.AccountInfo](ctx, s.c, s.c.api.Call(ctx, "listAccounts"))
	if err != nil {
		return err
	}
	var accounts []kernel.AccountInfo
	for _, a := range all {
		if a.Gatekeeper == req.Gatekeeper || a.Name == req.Gatekeeper {
			accounts = append(accounts, a)
		}
	}
	s.asks = append(s.asks, question{prompt: "account number to connect (empty declines):", show: func() { s.p.connection(req, accounts) }, answer: func(ctx context.Context, line string) error {
		var account any // null declines
		if line = strings.TrimSpace(line); line != "" {
			n, err := strconv.Atoi(line)
			if err != nil || n < 1 || n > len(accounts) {
				return fmt.Errorf("no account %q: the request stays open (answer it in the workshop)", line)
			}
			account = accounts[n-1].ID
		}
		_, err := await[any](ctx, s.c, s.ws.Call(ctx, "answerConnection", id, req.ID, account))
		return err
	}})
	return nil
}
