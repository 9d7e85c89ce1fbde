package jsruntime

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

var errNoMappings = errors.New("source map without mappings")

// sourceMap maps positions in stripped TypeScript back to the source (source map v3, only the
// parts esbuild writes for one file: "sources" and "mappings").
type sourceMap struct {
	source string      // the original file's name
	lines  [][]segment // by generated line (0-based), sorted by column
}

// segment maps a generated column of a line to a position in the source (all 0-based).
type segment struct{ genCol, srcLine, srcCol int }

func parseSourceMap(text []byte) (*sourceMap, error) {
	var raw struct {
		Sources  []string `json:"sources"`
		Mappings string   `json:"mappings"`
	}
	if err := json.Unmarshal(text, &raw); err != nil {
		return nil, fmt.Errorf("source map: %w", err)
	}
	if len(raw.Sources) != 1 {
		return nil, fmt.Errorf("source map: %d sources, want 1", len(raw.Sources))
	}
	if raw.Mappings == "" {
		return nil, errNoMappings
	}
	m := &sourceMap{source: raw.Sources[0], lines: [][]segment{nil}}
	var srcLine, srcCol, genCol int
	var fields [5]int
	for i := 0; i < len(raw.Mappings); {
		switch raw.Mappings[i] {
		case ';':
			m.lines = append(m.lines, nil)
			genCol = 0
			i++
			continue
		case ',':
			i++
			continue
		}
		n := 0
		for i < len(raw.Mappings) && raw.Mappings[i] != ',' && raw.Mappings[i] != ';' {
			v, next, err := vlq(raw.Mappings, i)
			if err != nil {
				return nil, err
			}
			if n < len(fields) {
				fields[n] = v
			}
			n++
			i = next
		}
		genCol += fields[0]
		if n < 4 { // a segment without a source position
			continue
		}
		srcLine += fields[2] // fields[1] moves the source index, which stays 0 with one source
		srcCol += fields[3]
		last := len(m.lines) - 1
		m.lines[last] = append(m.lines[last], segment{genCol: genCol, srcLine: srcLine, srcCol: srcCol})
	}
	for _, l := range m.lines {
		sort.SliceStable(l, func(a, b int) bool { return l[a].genCol < l[b].genCol })
	}
	return m, nil
}

const base64Digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// vlq decodes the base64 VLQ number at s[i:] and returns it with the index after it.
func vlq(s string, i int) (int, int, error) {
	var v, shift int
	for {
		if i >= len(s) {
			return 0, i, fmt.Errorf("source map: truncated number")
		}
		d := strings.IndexByte(base64Digits, s[i])
		if d < 0 {
			return 0, i, fmt.Errorf("source map: bad character %q", s[i])
		}
		i++
		v |= (d & 31) << shift
		shift += 5
		if d&32 == 0 {
			break
		}
		if shift > 30 {
			return 0, i, fmt.Errorf("source map: number too large")
		}
	}
	if v&1 != 0 {
		return -(v >> 1), i, nil
	}
	return v >> 1, i, nil
}

// lookup maps a 1-based line and column of the generated code to the source's.
func (m *sourceMap) lookup(line, col int) (int, int, bool) {
	if line < 1 || line > len(m.lines) {
		return 0, 0, false
	}
	segs := m.lines[line-1]
	i := sort.Search(len(segs), func(i int) bool { return segs[i].genCol > col-1 }) - 1
	if i < 0 {
		if len(segs) == 0 {
			return 0, 0, false
		}
		i = 0
	}
	s := segs[i]
	return s.srcLine + 1, s.srcCol + 1, true
}

// position matches "file.js:line:column" as QuickJS writes it in stacks and messages.
var position = regexp.MustCompile(`([A-Za-z0-9_.\-/]+\.js):(\d+):(\d+)`)

// mapPositions rewrites the positions in text that fall in a stripped file to the source's
// name, line and column. maps is keyed by the name the file was loaded under.
func mapPositions(text string, maps map[string]*sourceMap) string {
	if len(maps) == 0 {
		return text
	}
	return position.ReplaceAllStringFunc(text, func(p string) string {
		sub := position.FindStringSubmatch(p)
		m := maps[sub[1]]
		if m == nil {
			return p
		}
		line, _ := strconv.Atoi(sub[2])
		col, _ := strconv.Atoi(sub[3])
		l, c, ok := m.lookup(line, col)
		if !ok {
			return m.source + ":?"
		}
		return fmt.Sprintf("%s:%d:%d", m.source, l, c)
	})
}
