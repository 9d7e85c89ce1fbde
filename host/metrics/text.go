package metrics

import (
	"bufio"
	"io"
	"strconv"
	"strings"
)

// ContentType is the media type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// The metric types of a family's TYPE line.
const (
	Counter = "counter"
	Gauge   = "gauge"
	Hist    = "histogram"
)

// Label is one label of a sample.
type Label struct{ Name, Value string }

// TextWriter writes metric families in the Prometheus text exposition format. Write a
// family's header with Family, then its samples; the first write error is kept and returned by
// Flush, so callers need not check every line.
type TextWriter struct {
	w   *bufio.Writer
	err error
}

// NewTextWriter returns a TextWriter on w.
func NewTextWriter(w io.Writer) *TextWriter { return &TextWriter{w: bufio.NewWriter(w)} }

// Family starts a metric family: its HELP and TYPE lines.
func (t *TextWriter) Family(name, typ, help string) {
	t.put("# HELP " + name + " " + helpEscaper.Replace(help) + "\n# TYPE " + name + " " + typ + "\n")
}

// Sample writes one sample of the family name.
func (t *TextWriter) Sample(name string, labels []Label, value float64) {
	t.put(name + labelText(labels, "", "") + " " + strconv.FormatFloat(value, 'g', -1, 64) + "\n")
}

// Histogram writes the samples of a histogram (family name, of type Hist) in seconds: the
// cumulative buckets by upper bound, +Inf, the sum and the count.
func (t *TextWriter) Histogram(name string, labels []Label, s HistogramSnapshot) {
	var cum uint64
	for i, n := range s.Counts {
		cum += n
		le := "+Inf"
		if i < len(Bounds) {
			le = strconv.FormatFloat(Bounds[i].Seconds(), 'g', -1, 64)
		}
		t.put(name + "_bucket" + labelText(labels, "le", le) + " " + strconv.FormatUint(cum, 10) + "\n")
	}
	t.put(name + "_sum" + labelText(labels, "", "") + " " + strconv.FormatFloat(s.Sum.Seconds(), 'g', -1, 64) + "\n")
	t.put(name + "_count" + labelText(labels, "", "") + " " + strconv.FormatUint(cum, 10) + "\n")
}

// Flush writes what is buffered and returns the first error.
func (t *TextWriter) Flush() error {
	if t.err == nil {
		t.err = t.w.Flush()
	}
	return t.err
}

func (t *TextWriter) put(s string) {
	if t.err == nil {
		_, t.err = t.w.WriteString(s)
	}
}

var (
	helpEscaper  = strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	valueEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)
)

// labelText renders {a="x",b="y"} with an extra label (extra "" for none).
func labelText(labels []Label, extra, extraValue string) string {
	if len(labels) == 0 && extra == "" {
		return ""
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, l := range labels {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(l.Name + `="` + valueEscaper.Replace(l.Value) + `"`)
	}
	if extra != "" {
		if len(labels) > 0 {
			b.WriteByte(',')
		}
		b.WriteString(extra + `="` + valueEscaper.Replace(extraValue) + `"`)
	}
	b.WriteByte('}')
	return b.String()
}
