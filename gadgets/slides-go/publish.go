//go:build wasip1

package main

import (
	"encoding/json"
	"fmt"
	"strings"

	"atelier/gadgets/slides-go/bindings"
)

// Publish sends the deck as one markdown note through the gatekeeper bound as binding: it
// calls the binding's add(title, body) and returns the id of the action that the call queued.
func (d *deck) Publish(binding string) (uint64, error) {
	if strings.TrimSpace(binding) == "" {
		return 0, fmt.Errorf("publish deck %s: name the gatekeeper binding to publish through (for example \"notes\")", d.name)
	}
	m, err := d.load()
	if err != nil {
		return 0, err
	}
	slides, err := loadSlides(d.name, m)
	if err != nil {
		return 0, err
	}
	if len(slides) == 0 {
		return 0, fmt.Errorf("publish deck %s: it has no slides yet", d.name)
	}
	args, _ := json.Marshal([]string{m.Title, markdown(d.name, m.Title, slides)})
	res, err := bindings.BindingsCall(binding, "add", string(args))
	if err != nil {
		return 0, fmt.Errorf("publish deck %s through %q: %v", d.name, binding, err) // %v, not %w: see announce
	}
	var queued struct {
		Action *uint64 `json:"action"`
	}
	if json.Unmarshal([]byte(res), &queued) != nil || queued.Action == nil {
		return 0, fmt.Errorf("publish deck %s through %q: its add returned %.200s, not a queued action {action: id}", d.name, binding, res)
	}
	bindings.LogWrite(bindings.LevelInfo, fmt.Sprintf("deck %s sent through %s as action %d", d.name, binding, *queued.Action))
	return *queued.Action, announce(d.name, m, "published", map[string]any{"binding": binding, "action": *queued.Action})
}

// markdown renders a deck as one markdown document: each slide a second-level heading, its
// body, and its notes as a quote, slides separated by rules.
func markdown(name, title string, slides []bindings.Slide) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d slides from the deck `%s` (%s)*\n", len(slides), name, title)
	for _, s := range slides {
		fmt.Fprintf(&b, "\n---\n\n## %s\n", s.Title)
		if body := strings.TrimSpace(s.Body); body != "" {
			b.WriteString("\n" + body + "\n")
		}
		if s.Notes != nil && strings.TrimSpace(*s.Notes) != "" {
			b.WriteString("\n> **Notes:** " + strings.ReplaceAll(strings.TrimSpace(*s.Notes), "\n", "\n> ") + "\n")
		}
	}
	return b.String()
}
