package kernel

import (
	"bytes"
	"encoding/base64"
	"maps"
	"slices"
	"unicode/utf8"
)

// diff describes the fork's writes against the committed values they replace, in key order;
// a write that changes nothing is left out.
func (f *forkKV) diff(gadget string) DryRunGadget {
	d := DryRunGadget{Gadget: gadget, Added: []KVChange{}, Changed: []KVChange{}, Removed: []KVChange{}}
	for _, k := range slices.Sorted(maps.Keys(f.writes)) {
		old, v := f.olds[k], f.writes[k]
		switch {
		case !old.ok && v != nil:
			d.Added = append(d.Added, kvChange(k, nil, v))
		case old.ok && v == nil:
			d.Removed = append(d.Removed, kvChange(k, old.val, nil))
		case old.ok && !bytes.Equal(old.val, v):
			d.Changed = append(d.Changed, kvChange(k, old.val, v))
		}
	}
	return d
}

// changes reports whether the fork would change the committed state.
func (f *forkKV) changes() bool {
	d := f.diff("")
	return len(d.Added)+len(d.Changed)+len(d.Removed) > 0
}

// kvChange shows one written key: as text when the key and both values are text, else all
// three in base64 with Binary set.
func kvChange(key string, old, new []byte) KVChange {
	bin := !isText([]byte(key)) || !isText(old) || !isText(new)
	show := func(b []byte) *string {
		if b == nil {
			return nil
		}
		s := string(b)
		if bin {
			s = base64.StdEncoding.EncodeToString(b)
		}
		return &s
	}
	c := KVChange{Key: key, Old: show(old), New: show(new), Binary: bin}
	if bin {
		c.Key = base64.StdEncoding.EncodeToString([]byte(key))
	}
	return c
}

// isText reports whether b is UTF-8 without control characters other than tab and line
// breaks.
func isText(b []byte) bool {
	if !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if (r < 0x20 && r != '\t' && r != '\n' && r != '\r') || r == 0x7f {
			return false
		}
	}
	return true
}
