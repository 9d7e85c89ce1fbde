//go:build wasip1

package main

import (
	"bytes"
	"encoding/json"
	"fmt"

	"atelier/gadgets/slides-go/bindings"
)

// maxPayload is the host's default limit of an event payload (atelier:host/events).
const maxPayload = 64 << 10

// announce tells the deck's subscribers about a change: on topic deck/NAME, the JSON object
// {kind, deck: {name, title, slides, updated-ms}, ...fields}. A slide whose JSON would make the
// payload too large is left out (the event says only where the change was; a client reads the
// slides again).
func announce(name string, m *meta, kind string, fields map[string]any) error {
	ev := map[string]any{"kind": kind, "deck": map[string]any{
		"name": name, "title": m.Title, "slides": len(m.Order), "updated-ms": m.UpdatedMs,
	}}
	for k, v := range fields {
		ev[k] = v
	}
	payload := encode(ev)
	if len(payload) > maxPayload {
		delete(ev, "slide")
		payload = encode(ev)
	}
	if err := bindings.EventsPublish("deck/"+name, string(payload)); err != nil {
		// %v, not %w: an exported function returns a wrapped *ResultError[string] of an
		// import as the error itself, without the context added here.
		return fmt.Errorf("publish the change of deck %s: %v", name, err)
	}
	return nil
}

// encode returns v as JSON without HTML escaping (markdown is full of < and >).
func encode(v any) []byte {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	e.Encode(v) // maps of strings, numbers and slideJSON always encode
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
