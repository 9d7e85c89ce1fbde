package provider

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// sseEvent is one server-sent event: its "event:" name ("" when it had none) and its data
// lines joined by "\n". data is valid until the next call of next.
type sseEvent struct {
	name string
	data []byte
}

// sseReader splits a text/event-stream into events (the WHATWG format: "field: value" lines,
// a blank line ends an event, ":" starts a comment). Lines end with "\n" or "\r\n"; a lone
// "\r" and a field other than event, data, id and retry (which no provider sends, but an
// HTML page or a proxy's error text does) are refused as malformed. The body it reads is
// bounded by a meteredBody, so no line or event grows past the reply bound.
type sseReader struct {
	r *bufio.Reader
	// wire names the provider in errors.
	wire string
	key  scrubber
	// line and data are reused between lines and events.
	line, data []byte
}

func newSSEReader(r io.Reader, wire string, key scrubber) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 16<<10), wire: wire, key: key}
}

// next returns the next event with data. It returns io.EOF at the end of the stream; an event
// cut off by the end is dropped, as the format says.
func (s *sseReader) next() (sseEvent, error) {
	ev := sseEvent{data: s.data[:0]}
	hasData := false
	for {
		line, err := s.readLine()
		if err != nil {
			return sseEvent{}, err
		}
		if len(line) == 0 {
			if hasData {
				s.data = ev.data
				return ev, nil
			}
			ev = sseEvent{data: ev.data[:0]}
			continue
		}
		if line[0] == ':' {
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.name = string(value)
		case "data":
			if hasData {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...)
			hasData = true
		case "id", "retry":
		default:
			return sseEvent{}, fail(ErrMalformed, fmt.Sprintf("%s: the event stream has a line of unknown field %q; is the base URL a streaming model endpoint?", s.wire, s.key.text(truncate(field))))
		}
	}
}

// readLine returns the next line without its ending. A last line without an ending counts
// as a line; after it, io.EOF.
func (s *sseReader) readLine() ([]byte, error) {
	s.line = s.line[:0]
	for {
		chunk, err := s.r.ReadSlice('\n')
		s.line = append(s.line, chunk...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err == io.EOF && len(s.line) > 0 {
			break
		}
		return nil, err
	}
	line := bytes.TrimSuffix(s.line, []byte("\n"))
	line = bytes.TrimSuffix(line, []byte("\r"))
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, fail(ErrMalformed, s.wire+": the event stream ends lines with a lone carriage return, which no provider sends; is the base URL a streaming model endpoint?")
	}
	return line, nil
}

// truncate bounds b for quoting in an error.
func truncate(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "…"
	}
	return string(b)
}
