// Package scrub replaces secret values, and the encodings a service may reflect them in, with
// a fixed marker: in strings (response headers) and in streams (response bodies, across the
// chunks they arrive in). Matching is one pass of an Aho-Corasick automaton over the input,
// so the work is linear in the input's size.
package scrub

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
)

// Marker replaces every occurrence of a needle.
const Marker = "[credential removed by atelier]"

// MinLen is the length under which a value is not scrubbed, nor any encoding of it: a value
// this short occurs by chance in ordinary content (a word, a number, an id), and replacing it
// there would corrupt data while protecting little, since a short secret is guessable anyway.
const MinLen = 8

// Needles returns each value of at least MinLen bytes and its encodings: base64 (standard and
// URL alphabets, with and without padding), URL-encoded (query and path escaping) and
// JSON-escaped (with and without HTML escaping, and with "\/"), without duplicates.
func Needles(values ...string) []string {
	var out []string
	seen := map[string]bool{}
	add := func(s string) {
		if s != "" && !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	for _, v := range values {
		if len(v) < MinLen {
			continue
		}
		add(v)
		for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
			add(enc.EncodeToString([]byte(v)))
		}
		add(url.QueryEscape(v))
		add(url.PathEscape(v))
		for _, html := range []bool{true, false} {
			j := jsonEscape(v, html)
			add(j)
			add(strings.ReplaceAll(j, "/", `\/`))
		}
	}
	return out
}

// jsonEscape returns v as the inside of a JSON string.
func jsonEscape(v string, html bool) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(html)
	_ = enc.Encode(v) // a string always encodes
	return strings.TrimSuffix(strings.TrimPrefix(strings.TrimSuffix(b.String(), "\n"), `"`), `"`)
}

// Matcher finds needles in input. It is immutable and safe for concurrent use.
type Matcher struct {
	nodes []node
	// root is the root's transitions, a table as the root has many (0: stay at the root);
	// any other node keeps its few children in a list.
	root   [256]int32
	maxLen int
}

// node is a state of the automaton: the needle prefix it has read. It takes a fixed few
// bytes, so that an automaton costs memory in proportion to its needles' total length (each
// of a credential's encodings adds about its length in nodes).
type node struct {
	child   int32 // the first child (0: none; the root is nobody's child)
	sibling int32 // the parent's next child
	fail    int32 // the longest proper suffix of this prefix that is a prefix of some needle
	dict    int32 // the nearest node down the fail links where a needle ends (0: none)
	end     int32 // the length of the needle ending here (0: none)
	b       byte  // the byte leading here from the parent
}

// New returns a Matcher of needles, or nil when there are none (a nil Matcher matches
// nothing).
func New(needles []string) *Matcher {
	m := &Matcher{nodes: []node{{}}}
	for _, s := range needles {
		if s == "" {
			continue
		}
		cur := int32(0)
		for i := 0; i < len(s); i++ {
			nx := m.child(cur, s[i])
			if nx == 0 {
				nx = int32(len(m.nodes))
				m.nodes = append(m.nodes, node{sibling: m.nodes[cur].child, b: s[i]})
				m.nodes[cur].child = nx
				if cur == 0 {
					m.root[s[i]] = nx
				}
			}
			cur = nx
		}
		m.nodes[cur].end = int32(len(s))
		m.maxLen = max(m.maxLen, len(s))
	}
	if m.maxLen == 0 {
		return nil
	}
	// Breadth first, so that a node's fail link (shallower) is done before it.
	queue := []int32{}
	for c := m.nodes[0].child; c != 0; c = m.nodes[c].sibling {
		queue = append(queue, c)
	}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for c := m.nodes[v].child; c != 0; c = m.nodes[c].sibling {
			f := m.step(m.nodes[v].fail, m.nodes[c].b)
			m.nodes[c].fail, m.nodes[c].dict = f, m.nodes[f].dict
			if m.nodes[f].end > 0 {
				m.nodes[c].dict = f
			}
			queue = append(queue, c)
		}
	}
	return m
}

// child is the child of state v on b, 0 when it has none.
func (m *Matcher) child(v int32, b byte) int32 {
	if v == 0 {
		return m.root[b]
	}
	for c := m.nodes[v].child; c != 0; c = m.nodes[c].sibling {
		if m.nodes[c].b == b {
			return c
		}
	}
	return 0
}

// step is the automaton's transition from state on b.
func (m *Matcher) step(state int32, b byte) int32 {
	for state != 0 {
		if nx := m.child(state, b); nx != 0 {
			return nx
		}
		state = m.nodes[state].fail
	}
	return m.root[b]
}

// String returns s with every needle replaced by Marker, and the number of replacements.
func (m *Matcher) String(s string) (string, int) {
	if m == nil {
		return s, 0
	}
	var best []int
	out, _, n := m.replace(nil, &best, []byte(s), true)
	return string(out), n
}

// replace appends buf to dst with the needles replaced, leftmost first and, of those starting
// at one place, the longest. Unless final, it stops before the last maxLen-1 bytes, where a
// needle may begin that the next input completes (a needle starting earlier lies wholly in
// buf); it returns how much of buf it consumed. best is scratch space: per start, the length
// of the longest needle there.
func (m *Matcher) replace(dst []byte, scratch *[]int, buf []byte, final bool) (out []byte, consumed, n int) {
	best := slices.Grow((*scratch)[:0], len(buf))[:len(buf)]
	clear(best)
	*scratch = best
	state := int32(0)
	for i := 0; i < len(buf); i++ {
		state = m.step(state, buf[i])
		o := state
		if m.nodes[o].end == 0 {
			o = m.nodes[o].dict
		}
		for ; o != 0; o = m.nodes[o].dict { // the needles ending here, longest first
			l := int(m.nodes[o].end)
			if start := i + 1 - l; l > best[start] {
				best[start] = l
			}
		}
	}
	cut := len(buf)
	if !final {
		cut = max(0, len(buf)-(m.maxLen-1))
	}
	i := 0
	for i < cut {
		if l := best[i]; l > 0 {
			dst = append(dst, Marker...)
			i += l
			n++
			continue
		}
		j := i + 1
		for j < cut && best[j] == 0 {
			j++
		}
		dst = append(dst, buf[i:j]...)
		i = j
	}
	return dst, i, n
}

// Writer writes to an underlying writer what is written to it, with the needles replaced,
// also those split across writes. It holds back up to maxLen-1 bytes (and batches small
// writes) until it has more input or Close.
type Writer struct {
	m       *Matcher
	w       io.Writer
	pending []byte
	out     []byte
	best    []int
	n       int
}

// NewWriter returns a Writer of m onto w; a nil m passes everything through.
func (m *Matcher) NewWriter(w io.Writer) *Writer { return &Writer{m: m, w: w} }

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	if w.m == nil {
		return w.w.Write(p)
	}
	w.pending = append(w.pending, p...)
	// Scanning only once pending is twice the held-back tail keeps the total work linear: each
	// pass consumes at least half of what it scans.
	if len(w.pending) >= max(4096, 2*w.m.maxLen) {
		if err := w.flush(false); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// Close writes what is held back. It does not close the underlying writer.
func (w *Writer) Close() error {
	if w.m == nil {
		return nil
	}
	return w.flush(true)
}

// Replaced returns the number of replacements made so far.
func (w *Writer) Replaced() int { return w.n }

func (w *Writer) flush(final bool) error {
	out, consumed, n := w.m.replace(w.out[:0], &w.best, w.pending, final)
	w.out, w.n = out, w.n+n
	w.pending = append(w.pending[:0], w.pending[consumed:]...)
	if _, err := w.w.Write(out); err != nil {
		return fmt.Errorf("scrub: %w", err)
	}
	return nil
}
