//go:build wasip1

package main

import (
	"fmt"
	"slices"

	"atelier/gadgets/slides-go/bindings"
)

// deck is the resource deck: a handle of one deck by name. It holds no state of its own, so
// every handle of a deck (one per client that opened it) sees the others' changes at once.
type deck struct{ name string }

// load returns the deck's meta, or an error when the deck was deleted.
func (d *deck) load() (*meta, error) {
	m, err := loadMeta(d.name)
	if err == nil && m == nil {
		err = fmt.Errorf("deck %s was deleted; open it again to start it anew", d.name)
	}
	return m, err
}

func (d *deck) Name() string { return d.name }

func (d *deck) Info() (bindings.DeckInfo, error) {
	m, err := d.load()
	if err != nil {
		return bindings.DeckInfo{}, err
	}
	return m.info(d.name), nil
}

func (d *deck) SetTitle(title string) error {
	if err := checkTitle("deck title", title); err != nil {
		return err
	}
	m, err := d.load()
	if err != nil {
		return err
	}
	m.Title = title
	if err := saveMeta(d.name, m); err != nil {
		return err
	}
	return announce(d.name, m, "retitled", nil)
}

func (d *deck) Slides() ([]bindings.Slide, error) {
	m, err := d.load()
	if err != nil {
		return nil, err
	}
	return loadSlides(d.name, m)
}

func (d *deck) AddSlide(s bindings.Slide) (uint32, error) {
	if err := checkSlide(s); err != nil {
		return 0, err
	}
	m, err := d.load()
	if err != nil {
		return 0, err
	}
	if len(m.Order) >= maxSlides {
		return 0, fmt.Errorf("deck %s has %d slides, the most a deck holds", d.name, maxSlides)
	}
	id, index := m.Next, uint32(len(m.Order))
	m.Next++
	m.Order = append(m.Order, id)
	if err := kvBatch([]bindings.Op{slideOp(d.name, id, s), metaOp(d.name, m)}); err != nil {
		return 0, err
	}
	return index, announce(d.name, m, "added", map[string]any{"index": index, "slide": toJSON(s)})
}

func (d *deck) UpdateSlide(index uint32, s bindings.Slide) error {
	if err := checkSlide(s); err != nil {
		return err
	}
	m, err := d.load()
	if err != nil {
		return err
	}
	if err := checkIndex(d.name, m, index); err != nil {
		return err
	}
	if err := kvBatch([]bindings.Op{slideOp(d.name, m.Order[index], s), metaOp(d.name, m)}); err != nil {
		return err
	}
	return announce(d.name, m, "updated", map[string]any{"index": index, "slide": toJSON(s)})
}

func (d *deck) MoveSlide(from, to uint32) error {
	m, err := d.load()
	if err != nil {
		return err
	}
	if err := checkIndex(d.name, m, from); err != nil {
		return err
	}
	if err := checkIndex(d.name, m, to); err != nil {
		return err
	}
	id := m.Order[from]
	m.Order = slices.Insert(slices.Delete(m.Order, int(from), int(from)+1), int(to), id)
	if err := saveMeta(d.name, m); err != nil {
		return err
	}
	return announce(d.name, m, "moved", map[string]any{"from": from, "to": to})
}

func (d *deck) RemoveSlide(index uint32) error {
	m, err := d.load()
	if err != nil {
		return err
	}
	if err := checkIndex(d.name, m, index); err != nil {
		return err
	}
	id := m.Order[index]
	m.Order = slices.Delete(m.Order, int(index), int(index)+1)
	del := bindings.Op{Tag: bindings.OpDelete, Delete: slideKey(d.name, id)}
	if err := kvBatch([]bindings.Op{del, metaOp(d.name, m)}); err != nil {
		return err
	}
	return announce(d.name, m, "removed", map[string]any{"index": index})
}
