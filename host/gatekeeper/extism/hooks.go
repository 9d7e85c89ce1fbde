package extism

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"

	"atelier/host/gatekeeper"
)

var _ gatekeeper.HookGuest = (*Guest)(nil)

// hookIn is the input of the hook plugin functions.
type hookIn struct {
	Session uint64        `json:"session"`
	Hook    hookRecord    `json:"hook"`
	Headers []headerField `json:"headers,omitempty"`
	Body    []byte        `json:"body,omitempty"` // base64
}

// hookRecord is a gatekeeper.Hook as the plugin gets it (secret in base64).
type hookRecord struct {
	ID     string `json:"id"`
	Event  string `json:"event"`
	Params string `json:"params"`
	URL    string `json:"url"`
	Secret []byte `json:"secret"`
}

type headerField struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

func record(h gatekeeper.Hook) hookRecord {
	return hookRecord{ID: h.ID, Event: h.Event, Params: h.Params, URL: h.URL, Secret: h.Secret}
}

// hookCall calls hook function fn and returns its output: a payload, or nil for none.
func (g *Guest) hookCall(ctx context.Context, fn string, in hookIn) ([]byte, error) {
	if !g.hooks {
		return nil, gatekeeper.ErrNoHooks
	}
	input, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	out, err := g.callRaw(ctx, fn, input)
	if err != nil {
		return nil, err
	}
	if out = bytes.TrimSpace(out); len(out) == 0 || string(out) == "null" {
		return nil, nil
	}
	return out, nil
}

// SubscribeHook calls hook_subscribe.
func (g *Guest) SubscribeHook(ctx context.Context, session uint64, h gatekeeper.Hook) error {
	_, err := g.hookCall(ctx, "hook-subscribe", hookIn{Session: session, Hook: record(h)})
	return err
}

// UnsubscribeHook calls hook_unsubscribe.
func (g *Guest) UnsubscribeHook(ctx context.Context, session uint64, h gatekeeper.Hook) error {
	_, err := g.hookCall(ctx, "hook-unsubscribe", hookIn{Session: session, Hook: record(h)})
	return err
}

// ReceiveHook calls hook_receive with the request's headers (sorted by name) and body.
func (g *Guest) ReceiveHook(ctx context.Context, session uint64, h gatekeeper.Hook, header http.Header, body []byte) ([]byte, error) {
	in := hookIn{Session: session, Hook: record(h), Body: body}
	for _, l := range gatekeeper.HeaderLines(header) {
		in.Headers = append(in.Headers, headerField{l.Name, l.Value})
	}
	return g.hookCall(ctx, "hook-receive", in)
}

// PollHook calls hook_poll.
func (g *Guest) PollHook(ctx context.Context, session uint64, h gatekeeper.Hook) ([]byte, error) {
	return g.hookCall(ctx, "hook-poll", hookIn{Session: session, Hook: record(h)})
}
