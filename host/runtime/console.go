package runtime

import "bytes"

// MaxConsoleLine is the longest console line; longer output is split into several lines.
const MaxConsoleLine = 8 << 10

// ConsoleLine is one line of an instance's console.
type ConsoleLine struct {
	// Instance is InstanceConfig.Name.
	Instance string
	// Stream is "stdout", "stderr", or "log" for atelier:host/log lines.
	Stream string
	// Level is the log level of "log" lines ("debug", "info", "warn", "error"); empty otherwise.
	Level string
	// Text is the line without its newline. It may be invalid UTF-8 for stdout/stderr.
	Text string
}

func (in *Instance) console(l ConsoleLine) {
	if in.cfg.Console == nil {
		return
	}
	l.Instance = in.cfg.Name
	in.cfg.Console(l)
}

// lineWriter splits a guest output stream into console lines.
type lineWriter struct {
	inst   *Instance
	stream string
	buf    []byte
}

// Write never fails; it copies p (which points into guest-owned memory).
func (w *lineWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.buf = append(w.buf, p...)
			for len(w.buf) >= MaxConsoleLine {
				w.emit(w.buf[:MaxConsoleLine])
				w.buf = append(w.buf[:0], w.buf[MaxConsoleLine:]...)
			}
			break
		}
		w.buf = append(w.buf, p[:i]...)
		w.emit(w.buf)
		w.buf = w.buf[:0]
		p = p[i+1:]
	}
	return n, nil
}

func (w *lineWriter) emit(line []byte) {
	for len(line) > MaxConsoleLine {
		w.inst.console(ConsoleLine{Stream: w.stream, Text: string(line[:MaxConsoleLine])})
		line = line[MaxConsoleLine:]
	}
	w.inst.console(ConsoleLine{Stream: w.stream, Text: string(line)})
}

// flush emits a last unterminated line.
func (w *lineWriter) flush() {
	if len(w.buf) > 0 {
		w.emit(w.buf)
		w.buf = nil
	}
}
