package agenttest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"atelier/host/agent/provider"
)

// Step is one scripted reply: its text, streamed in pieces, and its tool calls; or a failure.
type Step struct {
	// Text is streamed one piece per event.
	Text []string
	// Calls are the reply's tool calls.
	Calls []provider.ToolCall
	// Err, when set, is returned after Text was streamed (a broken stream).
	Err error
	// Stall blocks after Text until the call's ctx ends, and returns its error.
	Stall bool
}

// ErrNoStep is returned when the script has no reply left.
var ErrNoStep = errors.New("agenttest: the script has no reply left")

// Script is a provider.Client that replies with its Steps in order and records each request.
type Script struct {
	mu       sync.Mutex
	steps    []Step
	requests []provider.Request
}

// NewScript returns a Script of steps.
func NewScript(steps ...Step) *Script { return &Script{steps: steps} }

// Requests returns the requests made so far.
func (s *Script) Requests() []provider.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]provider.Request(nil), s.requests...)
}

// Stream implements provider.Client.
func (s *Script) Stream(ctx context.Context, req provider.Request, onEvent func(provider.Event) error) (provider.Reply, error) {
	s.mu.Lock()
	s.requests = append(s.requests, req)
	if len(s.steps) == 0 {
		s.mu.Unlock()
		return provider.Reply{}, ErrNoStep
	}
	st := s.steps[0]
	s.steps = s.steps[1:]
	s.mu.Unlock()
	for _, piece := range st.Text {
		if err := onEvent(provider.Event{Kind: provider.EventText, Text: piece}); err != nil {
			return provider.Reply{}, err
		}
	}
	if st.Stall {
		<-ctx.Done()
		return provider.Reply{}, ctx.Err()
	}
	if st.Err != nil {
		return provider.Reply{}, st.Err
	}
	reply := provider.Reply{Text: strings.Join(st.Text, ""), ToolCalls: st.Calls, Stop: provider.StopEnd}
	if len(st.Calls) > 0 {
		reply.Stop = provider.StopToolUse
	}
	return reply, nil
}
