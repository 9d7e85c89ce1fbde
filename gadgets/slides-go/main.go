//go:build wasip1

// Command slides-go is a shared slides app (wit/slides.wit) written against bindings that
// `atelier bindgen` generated into ./bindings: decks of markdown slides kept in the gadget's kv
// state, edited through `deck` resources that clients hold as Cap'n Web stubs, with every
// change published as an event on `deck/NAME` and a deck sent as one note through a gatekeeper
// binding. client.js is its browser UI. Regenerate the bindings after changing the WIT with
//
//	atelier bindgen --lang go --world slides --package bindings --out gadgets/slides-go/bindings gadgets/slides-go/wit wit/gadget wit/host
//
// and build the component with `sdk/build-gadget.sh gadgets/slides-go OUT.wasm`.
package main

import (
	"fmt"
	"time"

	"atelier/gadgets/slides-go/bindings"
)

func main() {}

func init() { bindings.ExportDecks(decks{}) }

// decks implements the exported interface decks (bindings.Decks).
type decks struct{}

// Open returns a handle of the deck called name, creating the deck when it does not exist.
func (decks) Open(name string) (bindings.Deck, error) {
	if err := checkName(name); err != nil {
		return nil, err
	}
	m, err := loadMeta(name)
	if err != nil {
		return nil, err
	}
	if m == nil {
		all, err := kvList(deckPrefix, maxDecks)
		if err != nil {
			return nil, err
		}
		if len(all) >= maxDecks {
			return nil, fmt.Errorf("cannot create deck %s: the gadget holds %d decks, the most it keeps", name, maxDecks)
		}
		m = &meta{Title: name, Order: []uint32{}, Next: 1}
		if err := saveMeta(name, m); err != nil {
			return nil, err
		}
		if err := announce(name, m, "created", nil); err != nil {
			return nil, err
		}
		bindings.LogWrite(bindings.LevelInfo, "created deck "+name)
	}
	return &deck{name: name}, nil
}

// ListDecks returns every deck in name order.
func (decks) ListDecks() ([]bindings.DeckInfo, error) {
	entries, err := kvList(deckPrefix, maxDecks)
	if err != nil {
		return nil, err
	}
	out := make([]bindings.DeckInfo, 0, len(entries))
	for _, e := range entries {
		name := e.Key[len(deckPrefix):]
		m, err := decodeMeta(name, e.Value)
		if err != nil {
			return nil, err
		}
		out = append(out, m.info(name))
	}
	return out, nil
}

// DeleteDeck deletes the deck and its slides in one batch; false when there is no such deck.
func (decks) DeleteDeck(name string) (bool, error) {
	if err := checkName(name); err != nil {
		return false, err
	}
	m, err := loadMeta(name)
	if err != nil || m == nil {
		return false, err
	}
	slides, err := kvList(slidePrefix(name), maxSlides+1)
	if err != nil {
		return false, err
	}
	ops := []bindings.Op{{Tag: bindings.OpDelete, Delete: deckKey(name)}}
	for _, e := range slides {
		ops = append(ops, bindings.Op{Tag: bindings.OpDelete, Delete: e.Key})
	}
	if err := kvBatch(ops); err != nil {
		return false, err
	}
	m.Order, m.UpdatedMs = nil, uint64(time.Now().UnixMilli())
	if err := announce(name, m, "deleted", nil); err != nil {
		return false, err
	}
	bindings.LogWrite(bindings.LevelInfo, "deleted deck "+name)
	return true, nil
}
