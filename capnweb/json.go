package capnweb

import (
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// parseJSON decodes one message after checking its size and nesting depth, so that a hostile
// message cannot make the decoder recurse deeply or allocate without bound.
func parseJSON(data []byte, lim Limits) (any, error) {
	if len(data) > lim.MaxMessageSize {
		return nil, badMessage("message of %d bytes exceeds the limit of %d", len(data), lim.MaxMessageSize)
	}
	if d := jsonDepth(data); d > lim.MaxDepth {
		return nil, badMessage("nesting depth exceeds the limit of %d", lim.MaxDepth)
	}
	var v any
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, badMessage("invalid JSON: %v", err)
	}
	return v, nil
}

// jsonDepth returns the maximum bracket nesting of a JSON text, ignoring brackets in strings.
func jsonDepth(data []byte) int {
	depth, maxDepth, inString, escaped := 0, 0, false, false
	for _, c := range data {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			if depth > maxDepth {
				maxDepth = depth
			}
		case c == ']' || c == '}':
			depth--
		}
	}
	return maxDepth
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
