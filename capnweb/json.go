package capnweb

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// parseList decodes one JSON text of at most maxSize bytes that is an array (as every protocol
// message is) into a slice of nil, bool, float64, string, []any and Object (what
// encoding/json produces for an any, except that objects keep their key order); the array is not boxed into an any, which would cost an
// allocation per message. For valid JSON that is not an array it returns nil. The nesting
// depth is checked while parsing, so that a hostile message cannot make the parser recurse
// deeply. A parser may be reused for further messages (by one goroutine at a time); data is
// not retained.
func (p *jsonParser) parseList(data []byte, maxSize int) ([]any, error) {
	var list []any
	err := p.run(data, maxSize, func() (err error) {
		if p.skipSpace(); p.pos < len(p.data) && p.data[p.pos] == '[' && p.maxDepth > 0 {
			list, err = p.list(1)
			return err
		}
		_, err = p.value(0)
		return err
	})
	return list, err
}

// run parses data with top, which parses the value at the start: the rest must be space.
func (p *jsonParser) run(data []byte, maxSize int, top func() error) error {
	if len(data) > maxSize {
		return badMessage("message of %d bytes exceeds the limit of %d", len(data), maxSize)
	}
	p.data, p.pos = data, 0
	defer func() {
		p.data = nil
		// Do not keep what one large message needed for the rest of the session.
		if cap(p.scratch) > keepBufferSize {
			p.scratch = nil
		}
		if cap(p.stack) > keepBufferSize/16 {
			p.stack = nil
		}
		if cap(p.fields) > keepBufferSize/32 {
			p.fields = nil
		}
	}()
	err := top()
	if err == nil {
		p.skipSpace()
		if p.pos < len(data) {
			err = p.fail("unexpected data after the value")
		}
	}
	if err != nil {
		if err == errJSONTooDeep {
			return badMessage("nesting depth exceeds the limit of %d", p.maxDepth)
		}
		return badMessage("invalid JSON: %v", err)
	}
	return nil
}

// errJSONTooDeep reports nesting beyond the parser's limit.
var errJSONTooDeep = errors.New("too deep")

// jsonParser is a recursive-descent JSON parser over one message (RFC 8259). Strings are copied
// out of data, so data may be reused once parsing is done.
type jsonParser struct {
	data     []byte
	pos      int
	maxDepth int
	scratch  []byte  // reused for strings with escapes
	stack    []any   // elements of the arrays being parsed
	fields   []Field // fields of the objects being parsed
	slab     []any   // the rest of the block small arrays are carved from
}

func (p *jsonParser) fail(what string) error {
	return fmt.Errorf("%s at offset %d", what, p.pos)
}

func (p *jsonParser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses the value at p.pos; depth is the number of arrays and objects around it.
func (p *jsonParser) value(depth int) (any, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '[':
		if depth >= p.maxDepth {
			return nil, errJSONTooDeep
		}
		return p.array(depth + 1)
	case c == '{':
		if depth >= p.maxDepth {
			return nil, errJSONTooDeep
		}
		return p.object(depth + 1)
	case c == '"':
		if w := p.word(); w != nil {
			return w, nil
		}
		s, err := p.str()
		return s, err
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, p.fail("unexpected character")
}

func (p *jsonParser) literal(word string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return p.fail("invalid literal")
	}
	p.pos += len(word)
	return nil
}

func (p *jsonParser) array(depth int) (any, error) {
	list, err := p.list(depth)
	if err != nil {
		return nil, err
	}
	return list, nil
}

// list parses an array. Its elements are collected on p.stack and then copied to a slice carved
// from p.slab, so that small arrays cost no allocation of their own.
func (p *jsonParser) list(depth int) ([]any, error) {
	p.pos++ // '['
	base := len(p.stack)
	defer func() {
		clear(p.stack[base:])
		p.stack = p.stack[:base]
	}()
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return []any{}, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		p.stack = append(p.stack, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unterminated array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			out := p.take(len(p.stack) - base)
			copy(out, p.stack[base:])
			return out, nil
		default:
			return nil, p.fail("expected ',' or ']'")
		}
	}
}

// slabSize is the number of elements in each block that small arrays are carved from.
const slabSize = 64

// take returns a slice of n elements (n > 0) whose capacity is n, so that appending to it never
// touches its neighbours in the block.
func (p *jsonParser) take(n int) []any {
	if n > len(p.slab) {
		if n > slabSize/4 {
			return make([]any, n)
		}
		p.slab = make([]any, slabSize)
	}
	out := p.slab[:n:n]
	p.slab = p.slab[n:]
	return out
}

// object parses an object into an Object, keys in the order written. A repeated key keeps the
// position where it first appeared and takes the last value, as JavaScript's JSON.parse does.
// The fields are collected on p.fields and then copied to an Object of the right size.
func (p *jsonParser) object(depth int) (any, error) {
	p.pos++ // '{'
	base := len(p.fields)
	var index map[string]int // key -> position in p.fields, for objects of many keys
	defer func() {
		clear(p.fields[base:])
		p.fields = p.fields[:base]
	}()
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return Object{}, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a string key")
		}
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':'")
		}
		p.pos++
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		if at := p.findKey(base, k, &index); at >= 0 {
			p.fields[at].Value = v
		} else {
			p.fields = append(p.fields, Field{Key: k, Value: v})
			if index != nil {
				index[k] = len(p.fields) - 1
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unterminated object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return Object(slices.Clone(p.fields[base:])), nil
		default:
			return nil, p.fail("expected ',' or '}'")
		}
	}
}

// findKey returns the position in p.fields of key among the fields of the object that starts
// at base, or -1. Small objects are scanned; from objectIndexMin keys on, *index (built here)
// keeps lookups constant-time, so that a hostile message with many keys costs linear time.
func (p *jsonParser) findKey(base int, key string, index *map[string]int) int {
	fields := p.fields[base:]
	if *index == nil && len(fields) < objectIndexMin {
		for i := range fields {
			if fields[i].Key == key {
				return base + i
			}
		}
		return -1
	}
	if *index == nil {
		*index = make(map[string]int, 2*len(fields))
		for i := range fields {
			(*index)[fields[i].Key] = base + i
		}
	}
	if at, ok := (*index)[key]; ok {
		return at
	}
	return -1
}

// number parses a JSON number as a float64. Integers of up to 15 digits, the common case, are
// converted without strconv.
func (p *jsonParser) number() (any, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	intStart := i
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.fail("invalid number")
	}
	intEnd := i
	simple := true
	if i < len(d) && d[i] == '.' {
		simple = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.fail("invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		simple = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.fail("invalid number")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	p.pos = i
	if simple && intEnd-intStart <= 15 {
		var n int64
		for _, c := range d[intStart:intEnd] {
			n = n*10 + int64(c-'0')
		}
		if d[start] == '-' {
			if n == 0 {
				return math.Copysign(0, -1), nil
			}
			n = -n
		} else if n < int64(len(smallNumbers)) {
			return smallNumbers[n], nil
		}
		return float64(n), nil
	}
	f, err := strconv.ParseFloat(string(d[start:i]), 64)
	if err != nil {
		p.pos = start
		return nil, p.fail("number out of range")
	}
	return f, nil
}

// str parses a string. Like encoding/json it turns invalid UTF-8 and unpaired surrogate escapes
// into U+FFFD.
func (p *jsonParser) str() (string, error) {
	p.pos++ // opening quote
	d := p.data
	start := p.pos
	i := p.pos
	for i < len(d) {
		c := d[i]
		if c == '"' {
			p.pos = i + 1
			return string(d[start:i]), nil
		}
		if c == '\\' || c < 0x20 || c >= utf8.RuneSelf {
			break
		}
		i++
	}
	b := append(p.scratch[:0], d[start:i]...)
	for i < len(d) {
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.scratch = b
			return string(b), nil
		case c < 0x20:
			p.pos = i
			return "", p.fail("control character in string")
		case c == '\\':
			if i+1 >= len(d) {
				p.pos = i
				return "", p.fail("unterminated escape")
			}
			i++
			switch e := d[i]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, ok := hex4(d[i+1:])
				if !ok {
					p.pos = i
					return "", p.fail("invalid \\u escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2, ok := rune(0), false
					if i+6 < len(d) && d[i+1] == '\\' && d[i+2] == 'u' {
						r2, ok = hex4(d[i+3:])
					}
					if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				p.pos = i
				return "", p.fail("invalid escape")
			}
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRune(d[i:])
			if r == utf8.RuneError && size == 1 {
				b = utf8.AppendRune(b, utf8.RuneError)
			} else {
				b = append(b, d[i:i+size]...)
			}
			i += size
		}
	}
	p.pos = i
	return "", p.fail("unterminated string")
}

// word returns the string at p.pos, already boxed, if it is one of the protocol's words and
// holds no escape (most messages consist of little else than such words and small numbers).
func (p *jsonParser) word() any {
	rest := p.data[p.pos+1:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 || end > len("undefined") {
		return nil
	}
	var w any
	switch string(rest[:end]) { // compiled without a conversion
	case "push":
		w = "push"
	case "pull":
		w = "pull"
	case "resolve":
		w = "resolve"
	case "reject":
		w = "reject"
	case "release":
		w = "release"
	case "pipeline":
		w = "pipeline"
	case "import":
		w = "import"
	case "export":
		w = "export"
	case "promise":
		w = "promise"
	case "error":
		w = "error"
	case "undefined":
		w = "undefined"
	default:
		return nil
	}
	p.pos += end + 2
	return w
}

// smallNumbers holds the float64 values 0..1023 already boxed, so that ids and small integers
// are parsed without an allocation.
var smallNumbers = func() (out [1024]any) {
	for i := range out {
		out[i] = float64(i)
	}
	return out
}()

// hex4 decodes the four hex digits at the start of b.
func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// appendJSONString appends s as a JSON string the way JavaScript's JSON.stringify writes it: only
// quotes, backslashes and control characters are escaped; invalid UTF-8 becomes U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendJSONNumber appends a finite float64 in ECMAScript's Number-to-String format (the format
// encoding/json also uses); -0 is written as 0.
func appendJSONNumber(b []byte, f float64) []byte {
	if f == 0 {
		return append(b, '0')
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs < 1e-6 || abs >= 1e21 {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// Turn "1e-07" into "1e-7".
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
