package gatekeeper

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"atelier/host/capability/outboundhttp"
	"atelier/host/runtime"
)

// HookGuest is implemented by a Guest whose code can serve hooks (a component exports
// HooksInterface): each method calls the hooks function of the same name for session. A
// guest whose code lacks the export returns ErrNoHooks.
type HookGuest interface {
	SubscribeHook(ctx context.Context, session uint64, h Hook) error
	UnsubscribeHook(ctx context.Context, session uint64, h Hook) error
	// ReceiveHook and PollHook return the event's JSON payload, or nil to drop the event.
	ReceiveHook(ctx context.Context, session uint64, h Hook, header http.Header, body []byte) ([]byte, error)
	PollHook(ctx context.Context, session uint64, h Hook) ([]byte, error)
}

// HookWatcher is implemented by a Guest that pushes the events of notify hooks (a built-in
// gatekeeper such as mcpgk): WatchHook calls fire with each event's JSON payload until stop
// is called or ctx ends. CheckHook refuses a hook the watch could never run (its event or
// params are wrong) when it is registered, before anything is stored.
type HookWatcher interface {
	WatchHook(ctx context.Context, session uint64, h Hook, fire func([]byte)) (stop func(), err error)
	CheckHook(h Hook) error
}

// hookSpec returns the manifest's event of hook h, which must come from one of sources (any
// source when none is given), on an open session.
func (s *Session) hookSpec(h Hook, sources ...string) (HookSpec, error) {
	if s.closed.Load() {
		return HookSpec{}, fmt.Errorf("%s: session %d is closed", s.in.name, s.id)
	}
	spec, ok := s.in.g.Package.Manifest.HookSpec(h.Event)
	if !ok {
		return HookSpec{}, fmt.Errorf("%s: %w: no hook event %q in the manifest of %s", s.in.name, ErrNoHooks, h.Event, s.in.g.Package.Manifest.Name)
	}
	if len(sources) > 0 && !slices.Contains(sources, spec.Source) {
		return HookSpec{}, fmt.Errorf("%s: hook event %q comes from a %s, not a %s", s.in.name, h.Event, spec.Source, sources[0])
	}
	return spec, nil
}

// watches reports whether hook events of spec are pushed by the guest's own watch (a notify
// event of a HookWatcher, such as mcpgk's): WatchHook then subscribes and stop unsubscribes, so
// SubscribeHook and UnsubscribeHook have nothing to do.
func (s *Session) watches(spec HookSpec) bool {
	_, ok := s.in.guest.(HookWatcher)
	return ok && spec.Source == HookNotify
}

// hookGuest returns the guest's HookGuest, or ErrNoHooks.
func (s *Session) hookGuest() (HookGuest, error) {
	hg, ok := s.in.guest.(HookGuest)
	if !ok {
		return nil, fmt.Errorf("%s: %w", s.in.name, ErrNoHooks)
	}
	return hg, nil
}

// serve runs call as a call of the session: the observations and actions it makes are
// attributed to the session, and actions it submitted are drained afterwards (as Call does).
func (s *Session) serve(ctx context.Context, fn string, call func(ctx context.Context) error) error {
	ci := &callInfo{s: s}
	err := call(context.WithValue(ctx, callKey{}, ci))
	if err != nil {
		err = s.in.fail(fn, err)
	}
	if ci.submitted {
		if derr := s.in.queue.Drain(ctx, s.in.name); derr != nil {
			err = joinDrain(err, s.in.name, derr)
		}
	}
	return err
}

// payload checks a guest's event payload: nil or empty drops the event; otherwise it must be
// JSON of at most the account's MaxResult bytes.
func (in *Instance) payload(p []byte) ([]byte, error) {
	if len(p) == 0 {
		return nil, nil
	}
	if int64(len(p)) > in.maxResult {
		return nil, fmt.Errorf("%s: hook payload of %d bytes exceeds the account's limit of %d bytes", in.name, len(p), in.maxResult)
	}
	if !json.Valid(p) {
		return nil, fmt.Errorf("%s: hook payload is not JSON", in.name)
	}
	return p, nil
}

// SubscribeHook lets the gatekeeper set up hook h (for a webhook event, create the service's
// webhook with h.URL and h.Secret; for an event the guest watches, check h's params) on the
// gadget binding's session; an error refuses the hook.
func (s *Session) SubscribeHook(ctx context.Context, h Hook) error {
	if hw, ok := s.in.guest.(HookWatcher); ok {
		if spec, err := s.hookSpec(h); err == nil && s.watches(spec) {
			if err := hw.CheckHook(h); err != nil {
				return s.in.fail("hooks.subscribe", err)
			}
		}
	}
	return s.subscription(ctx, h, "hooks.subscribe", HookGuest.SubscribeHook)
}

// UnsubscribeHook lets the gatekeeper undo SubscribeHook (best effort: the host removes the
// hook whatever it returns).
func (s *Session) UnsubscribeHook(ctx context.Context, h Hook) error {
	return s.subscription(ctx, h, "hooks.unsubscribe", HookGuest.UnsubscribeHook)
}

// subscription runs the guest's subscribe or unsubscribe (call, named fn) for hook h, except
// for the events the guest's own watch subscribes to (watches).
func (s *Session) subscription(ctx context.Context, h Hook, fn string, call func(HookGuest, context.Context, uint64, Hook) error) error {
	spec, err := s.hookSpec(h)
	if err != nil {
		return err
	}
	if s.watches(spec) {
		return nil
	}
	hg, err := s.hookGuest()
	if err != nil {
		return err
	}
	return s.serve(ctx, fn, func(ctx context.Context) error { return call(hg, ctx, s.id, h) })
}

// ReceiveHook hands an inbound webhook request of hook h, whose signature the caller has
// verified (HookSignature.Verify), to the gatekeeper and returns the JSON payload for the
// gadget's method; nil drops the event. Call it on a session for caller "hook:<id>".
func (s *Session) ReceiveHook(ctx context.Context, h Hook, header http.Header, body []byte) (payload []byte, err error) {
	if _, err := s.hookSpec(h, HookWebhook); err != nil {
		return nil, err
	}
	hg, err := s.hookGuest()
	if err != nil {
		return nil, err
	}
	var p []byte
	if err := s.serve(ctx, "hooks.receive", func(ctx context.Context) (err error) {
		p, err = hg.ReceiveHook(ctx, s.id, h, header, body)
		return err
	}); err != nil {
		return nil, err
	}
	return s.in.payload(p)
}

// PollHook asks the gatekeeper what is new for poll hook h and returns the JSON payload for
// the gadget's method, or nil when nothing is. Call it on a session for caller "hook:<id>".
func (s *Session) PollHook(ctx context.Context, h Hook) (payload []byte, err error) {
	if _, err := s.hookSpec(h, HookPoll); err != nil {
		return nil, err
	}
	hg, err := s.hookGuest()
	if err != nil {
		return nil, err
	}
	var p []byte
	if err := s.serve(ctx, "hooks.poll", func(ctx context.Context) (err error) {
		p, err = hg.PollHook(ctx, s.id, h)
		return err
	}); err != nil {
		return nil, err
	}
	return s.in.payload(p)
}

// WatchHook starts pushing the events of notify hook h: fire gets each event's JSON payload
// (payloads that are not JSON or exceed the account's MaxResult are dropped) until stop is
// called or ctx ends. It returns ErrNoHooks when the guest pushes no events (HookWatcher).
func (s *Session) WatchHook(ctx context.Context, h Hook, fire func(payload []byte)) (stop func(), err error) {
	if _, err := s.hookSpec(h, HookNotify); err != nil {
		return nil, err
	}
	hw, ok := s.in.guest.(HookWatcher)
	if !ok {
		return nil, fmt.Errorf("%s: %w", s.in.name, ErrNoHooks)
	}
	stop, err = hw.WatchHook(context.WithValue(ctx, callKey{}, &callInfo{s: s}), s.id, h, func(p []byte) {
		if p, err := s.in.payload(p); err == nil && p != nil {
			fire(p)
		}
	})
	if err != nil {
		return nil, s.in.fail("watch hook", err)
	}
	return stop, nil
}

// hookRecord is h as the WIT record `hooks.hook`.
func hookRecord(h Hook) map[string]any {
	secret := h.Secret
	if secret == nil {
		secret = []byte{}
	}
	return map[string]any{"id": h.ID, "event": h.Event, "params": h.Params, "url": h.URL, "secret": secret}
}

func (g *componentGuest) SubscribeHook(ctx context.Context, session uint64, h Hook) error {
	if !g.hooks {
		return ErrNoHooks
	}
	_, err := g.callIn(ctx, HooksInterface, "subscribe", session, hookRecord(h))
	return err
}

func (g *componentGuest) UnsubscribeHook(ctx context.Context, session uint64, h Hook) error {
	if !g.hooks {
		return ErrNoHooks
	}
	_, err := g.callIn(ctx, HooksInterface, "unsubscribe", session, hookRecord(h))
	return err
}

func (g *componentGuest) ReceiveHook(ctx context.Context, session uint64, h Hook, header http.Header, body []byte) ([]byte, error) {
	if !g.hooks {
		return nil, ErrNoHooks
	}
	headers := []any{}
	for _, l := range HeaderLines(header) {
		headers = append(headers, map[string]any{"name": l.Name, "value": l.Value})
	}
	if body == nil {
		body = []byte{}
	}
	return optionalPayload(g.callIn(ctx, HooksInterface, "receive", session, hookRecord(h), headers, body))
}

func (g *componentGuest) PollHook(ctx context.Context, session uint64, h Hook) ([]byte, error) {
	if !g.hooks {
		return nil, ErrNoHooks
	}
	return optionalPayload(g.callIn(ctx, HooksInterface, "poll", session, hookRecord(h)))
}

// HeaderLines returns the lines of h sorted by name (values of one name in their order): the
// headers a guest's receive gets.
func HeaderLines(h http.Header) []outboundhttp.Header {
	names := make([]string, 0, len(h))
	for name := range h {
		names = append(names, name)
	}
	slices.Sort(names)
	var out []outboundhttp.Header
	for _, name := range names {
		for _, v := range h[name] {
			out = append(out, outboundhttp.Header{Name: name, Value: v})
		}
	}
	return out
}

// optionalPayload converts the option<string> of receive and poll.
func optionalPayload(v any, err error) ([]byte, error) {
	if err != nil || v == nil {
		return nil, err
	}
	s, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("hook payload: want option<string>, got %T", v)
	}
	return []byte(s), nil
}

// maxResult returns the bound of limits' results (runtime.DefaultMaxResult when unset).
func maxResult(l runtime.Limits) int64 {
	if l.MaxResult <= 0 {
		return runtime.DefaultMaxResult
	}
	return l.MaxResult
}
