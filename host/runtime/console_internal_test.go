package runtime

import (
	"strings"
	"testing"
)

func TestLineWriter(t *testing.T) {
	var got []ConsoleLine
	in := &Instance{cfg: InstanceConfig{Name: "i", Console: func(l ConsoleLine) { got = append(got, l) }}}
	w := &lineWriter{inst: in, stream: "stdout"}
	long := strings.Repeat("y", MaxConsoleLine+3)
	for _, chunk := range []string{"a", "b\nc\n\n", long[:5], long[5:], "\nend"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
	}
	w.flush()
	var texts []string
	for _, l := range got {
		if l.Instance != "i" || l.Stream != "stdout" {
			t.Fatalf("line %+v", l)
		}
		texts = append(texts, l.Text)
	}
	want := []string{"ab", "c", "", long[:MaxConsoleLine], "yyy", "end"}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Fatalf("got %q, want %q", texts, want)
	}
}
