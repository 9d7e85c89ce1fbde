//go:build wasip1

package main

import (
	"fmt"
	"strings"

	"atelier/gadgets/slides-go/bindings"
)

// Limits of what the gadget keeps. A slide's JSON stays well under the host's 1 MiB kv value,
// and a deck's meta (4 bytes or so per slide) too.
const (
	maxDecks  = 500
	maxSlides = 200
	maxName   = 64
	maxTitle  = 200
	maxBody   = 16 << 10
	maxNotes  = 4 << 10
)

// checkName refuses a deck name that is not 1 to 64 of a-z, 0-9, '-' and '_' starting with a
// letter or digit: names are parts of kv keys and event topics.
func checkName(name string) error {
	ok := name != "" && len(name) <= maxName
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case (c == '-' || c == '_') && i > 0:
		default:
			ok = false
		}
	}
	if !ok {
		return fmt.Errorf("deck name %q: use 1 to %d of a-z, 0-9, - and _, starting with a letter or digit", name, maxName)
	}
	return nil
}

// checkTitle refuses a title that is empty, too long or not one line; what says whose title.
func checkTitle(what, title string) error {
	switch {
	case strings.TrimSpace(title) == "":
		return fmt.Errorf("%s is empty", what)
	case len(title) > maxTitle:
		return fmt.Errorf("%s is %d bytes, at most %d", what, len(title), maxTitle)
	case strings.ContainsAny(title, "\r\n"):
		return fmt.Errorf("%s must be one line", what)
	}
	return nil
}

// checkSlide refuses a slide whose fields are out of bounds.
func checkSlide(s bindings.Slide) error {
	if err := checkTitle("slide title", s.Title); err != nil {
		return err
	}
	if len(s.Body) > maxBody {
		return fmt.Errorf("slide body is %d bytes, at most %d", len(s.Body), maxBody)
	}
	if s.Notes != nil && len(*s.Notes) > maxNotes {
		return fmt.Errorf("slide notes are %d bytes, at most %d", len(*s.Notes), maxNotes)
	}
	return nil
}

// checkIndex refuses an index past the deck's last slide.
func checkIndex(name string, m *meta, index uint32) error {
	if int(index) >= len(m.Order) {
		return fmt.Errorf("deck %s has no slide %d (it has %d, numbered from 0)", name, index, len(m.Order))
	}
	return nil
}
