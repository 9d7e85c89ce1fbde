//go:build wasip1

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"atelier/gadgets/slides-go/bindings"
)

// The kv layout: one key per deck holding its title and the order of its slides, and one key
// per slide, so that editing a slide writes only that slide and the deck's key. Changes that
// touch both (adding, removing, deleting a deck) are one atomic batch.
//
//	deck/NAME        meta (JSON)
//	slide/NAME/ID    slideJSON (JSON); ID is a number that never changes or comes back
const deckPrefix = "deck/"

func deckKey(name string) string     { return deckPrefix + name }
func slidePrefix(name string) string { return "slide/" + name + "/" }
func slideKey(name string, id uint32) string {
	return slidePrefix(name) + strconv.FormatUint(uint64(id), 10)
}

// meta is a deck's own key: its title and its slides' ids in presentation order.
type meta struct {
	Title     string   `json:"title"`
	Order     []uint32 `json:"order"`
	Next      uint32   `json:"next"` // the id of the next slide added
	UpdatedMs uint64   `json:"updated-ms"`
}

// info returns the deck's DeckInfo.
func (m *meta) info(name string) bindings.DeckInfo {
	return bindings.DeckInfo{Name: name, Title: m.Title, Slides: uint32(len(m.Order)), UpdatedMs: m.UpdatedMs}
}

// slideJSON is a slide as stored and as events carry it: the shape a Cap'n Web client sees.
type slideJSON struct {
	Title  string  `json:"title"`
	Body   string  `json:"body"`
	Layout string  `json:"layout"`
	Notes  *string `json:"notes"`
}

func toJSON(s bindings.Slide) slideJSON {
	return slideJSON{Title: s.Title, Body: s.Body, Layout: s.Layout.String(), Notes: s.Notes}
}

// layouts are the layouts by their WIT names.
var layouts = map[string]bindings.Layout{}

func init() {
	for l := bindings.LayoutTitle; l <= bindings.LayoutSection; l++ {
		layouts[l.String()] = l
	}
}

func (s slideJSON) slide() (bindings.Slide, error) {
	l, ok := layouts[s.Layout]
	if !ok {
		return bindings.Slide{}, fmt.Errorf("stored slide has an unknown layout %q", s.Layout)
	}
	return bindings.Slide{Title: s.Title, Body: s.Body, Layout: l, Notes: s.Notes}, nil
}

// loadMeta returns the deck's meta, or nil when there is no such deck.
func loadMeta(name string) (*meta, error) {
	v, err := bindings.KvGet(deckKey(name))
	if err != nil {
		return nil, kvErr("read deck "+name, err)
	}
	if v == nil {
		return nil, nil
	}
	return decodeMeta(name, *v)
}

func decodeMeta(name string, v []byte) (*meta, error) {
	var m meta
	if err := json.Unmarshal(v, &m); err != nil {
		return nil, fmt.Errorf("deck %s is stored damaged: %v", name, err)
	}
	return &m, nil
}

// metaOp returns the batch step that stores m as the deck's meta, stamped now.
func metaOp(name string, m *meta) bindings.Op {
	m.UpdatedMs = uint64(time.Now().UnixMilli())
	v, _ := json.Marshal(m) // a struct of strings and numbers always encodes
	return bindings.Op{Tag: bindings.OpSet, Set: bindings.Entry{Key: deckKey(name), Value: v}}
}

// saveMeta stores m as the deck's meta, stamped now.
func saveMeta(name string, m *meta) error { return kvBatch([]bindings.Op{metaOp(name, m)}) }

// slideOp returns the batch step that stores s as slide id of the deck.
func slideOp(name string, id uint32, s bindings.Slide) bindings.Op {
	v, _ := json.Marshal(toJSON(s))
	return bindings.Op{Tag: bindings.OpSet, Set: bindings.Entry{Key: slideKey(name, id), Value: v}}
}

// loadSlides returns the deck's slides in m's order (one kv list call).
func loadSlides(name string, m *meta) ([]bindings.Slide, error) {
	entries, err := kvList(slidePrefix(name), maxSlides+1)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string][]byte, len(entries))
	for _, e := range entries {
		byKey[e.Key] = e.Value
	}
	out := make([]bindings.Slide, 0, len(m.Order))
	for _, id := range m.Order {
		v, ok := byKey[slideKey(name, id)]
		if !ok {
			return nil, fmt.Errorf("deck %s is stored damaged: slide %d is missing", name, id)
		}
		var sj slideJSON
		if err := json.Unmarshal(v, &sj); err != nil {
			return nil, fmt.Errorf("deck %s is stored damaged: slide %d: %v", name, id, err)
		}
		s, err := sj.slide()
		if err != nil {
			return nil, fmt.Errorf("deck %s: slide %d: %w", name, id, err)
		}
		out = append(out, s)
	}
	return out, nil
}

func kvList(prefix string, limit uint32) ([]bindings.Entry, error) {
	entries, err := bindings.KvList(prefix, limit)
	if err != nil {
		return nil, kvErr("list "+prefix, err)
	}
	return entries, nil
}

func kvBatch(ops []bindings.Op) error {
	if err := bindings.KvBatch(ops); err != nil {
		return kvErr("store the change", err)
	}
	return nil
}

// kvErr describes a failed kv call with the kv error's case and message (for example
// "store the change: quota-exceeded: ...", when a deck outgrows the gadget's storage quota).
func kvErr(what string, err error) error {
	var re *bindings.ResultError[bindings.Error]
	if !errors.As(err, &re) {
		return fmt.Errorf("%s: %v", what, err)
	}
	msg := re.Value.InvalidKey
	switch re.Value.Tag {
	case bindings.ErrorQuotaExceeded:
		msg = re.Value.QuotaExceeded
	case bindings.ErrorIo:
		msg = re.Value.Io
	}
	return fmt.Errorf("%s: %s: %s", what, re.Value.Tag, msg)
}
