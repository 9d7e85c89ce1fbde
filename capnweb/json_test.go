package capnweb

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"atelier/capnweb/ordered"
)

// parseJSON parses one message with a fresh parser.
func parseJSON(data []byte, lim Limits) (any, error) {
	p := jsonParser{maxDepth: lim.MaxDepth}
	return p.parse(data, lim.MaxMessageSize)
}

// parse is parseList for any JSON text.
func (p *jsonParser) parse(data []byte, maxSize int) (any, error) {
	var v any
	err := p.run(data, maxSize, func() (err error) {
		v, err = p.value(0)
		return err
	})
	return v, err
}

// TestParseList checks that parseList agrees with parse on every case: the same array, nil
// for another value, an error for the same texts.
func TestParseList(t *testing.T) {
	lim := DefaultLimits()
	for _, c := range append(jsonCases, `["push",["pipeline",0,["add"],[1,2]]]`, `[[[[1]]]]`) {
		want, wantErr := parseJSON([]byte(c), lim)
		p := jsonParser{maxDepth: lim.MaxDepth}
		got, err := p.parseList([]byte(c), lim.MaxMessageSize)
		if (err != nil) != (wantErr != nil) {
			t.Errorf("%q: parseList error %v, parse error %v", c, err, wantErr)
			continue
		}
		if list, isList := want.([]any); isList && !reflect.DeepEqual(got, list) {
			t.Errorf("%q: parseList gave %#v, parse %#v", c, got, list)
		} else if !isList && got != nil {
			t.Errorf("%q: parseList gave %#v for a value that is not an array", c, got)
		}
	}
	p := jsonParser{maxDepth: 2}
	if _, err := p.parseList([]byte(`[[[1]]]`), lim.MaxMessageSize); err == nil {
		t.Error("parseList accepted nesting beyond maxDepth")
	}
}

// jsonCases exercise the corners of the JSON grammar; parseJSON must agree with encoding/json
// on every one (same value, or both reject).
var jsonCases = []string{
	`null`, `true`, `false`, `0`, `-0`, `1`, `-1`, `123456789012345`, `1234567890123456789`,
	`9007199254740993`, `1.5`, `-1.5e3`, `1E+2`, `1e-400`, `1e400`, `-1e400`, `0.1`, `01`, `1.`,
	`.5`, `-`, `+1`, `1e`, `1e+`, `0x10`, `""`, `"abc"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u0041\u00e9"`,
	`"\ud83d\ude00"`, `"\ud83d"`, `"\ude00"`, `"\ud83dx"`, `"\ud83d\u0041"`, `"\ud83d\ud83d\ude00"`,
	`"\u12"`, `"\x"`, "\"a\x01b\"", "\"\xff\xfe\"", "\"caf\xc3\xa9\"", "\"\xed\xa0\x80\"", `"abc`,
	`[]`, `[ ]`, `[1,]`, `[,1]`, `[1 2]`, `[1,[2,[3]]]`, `{}`, `{"a":1}`, `{"a":1,"a":2}`,
	`{"a" 1}`, `{a:1}`, `{"a":1,}`, `{"":[]}`, " \t\r\n[1] \n", `[1]x`, `[1]]`, ``, ` `, `nul`,
	`truex`, `[true,false,null]`, `{"k":{"k":{"k":[{}]}}}`,
	`["push",["pipeline",0,["add"],[1,2]]]`,
}

func TestParseJSONMatchesEncodingJSON(t *testing.T) {
	for _, c := range jsonCases {
		checkAgainstEncodingJSON(t, []byte(c))
	}
}

// FuzzParseJSON compares parseJSON with encoding/json. Seeds: jsonCases and the FuzzDecode
// corpus.
func FuzzParseJSON(f *testing.F) {
	for _, c := range jsonCases {
		f.Add([]byte(c))
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzDecode", "*"))
	for _, name := range files {
		if data, err := os.ReadFile(name); err == nil {
			if lines := strings.SplitN(string(data), "\n", 3); len(lines) >= 2 {
				if s, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(lines[1], "[]byte("), ")")); err == nil {
					f.Add([]byte(s))
				}
			}
		}
	}
	f.Fuzz(checkAgainstEncodingJSON)
}

func checkAgainstEncodingJSON(t *testing.T, data []byte) {
	lim := Limits{MaxDepth: 10000}.withDefaults()
	got, err := parseJSON(data, lim)
	var want any
	wantErr := json.Unmarshal(data, &want)
	switch {
	case (err != nil) != (wantErr != nil):
		t.Fatalf("%q: parseJSON error %v, encoding/json error %v", data, err, wantErr)
	case err == nil && !reflect.DeepEqual(ordered.Plain(got), want):
		t.Fatalf("%q: parseJSON gives %#v, encoding/json %#v", data, got, want)
	case err == nil && !uniqueKeys(got):
		t.Fatalf("%q: parseJSON gives an object with a repeated key: %#v", data, got)
	case err == nil:
		if f, ok := got.(float64); ok && f == 0 && math.Signbit(f) != math.Signbit(want.(float64)) {
			t.Fatalf("%q: sign of zero differs", data)
		}
	}
}

// uniqueKeys reports whether no Object in v names a key twice.
func uniqueKeys(v any) bool {
	switch v := v.(type) {
	case Object:
		seen := map[string]bool{}
		for _, f := range v {
			if seen[f.Key] || !uniqueKeys(f.Value) {
				return false
			}
			seen[f.Key] = true
		}
	case []any:
		for _, e := range v {
			if !uniqueKeys(e) {
				return false
			}
		}
	}
	return true
}

// TestParseJSONKeyOrder checks that objects keep the order of their keys and that a repeated
// key keeps its first position and its last value (JSON.parse), also past the size from which
// repeated keys are found with an index.
func TestParseJSONKeyOrder(t *testing.T) {
	lim := DefaultLimits()
	many := `{`
	var want Object
	for i := range 2 * objectIndexMin {
		k := fmt.Sprintf("k%02d", 2*objectIndexMin-i) // descending, so sorting would show
		many += fmt.Sprintf("%q:%d,", k, i)
		want = append(want, Field{Key: k, Value: float64(i)})
	}
	many += `"k32":"last","k01":"end"}`
	want[0].Value, want[len(want)-1].Value = "last", "end"
	cases := []struct {
		in   string
		want any
		dup  bool // in repeats a key, so it is not the encoding of want
	}{
		{`{"b":1,"a":2}`, Object{{Key: "b", Value: 1.0}, {Key: "a", Value: 2.0}}, false},
		{`{"b":{"z":[{"y":1,"x":2}],"c":null},"a":[]}`, Object{
			{Key: "b", Value: Object{{Key: "z", Value: []any{Object{{Key: "y", Value: 1.0}, {Key: "x", Value: 2.0}}}}, {Key: "c", Value: nil}}},
			{Key: "a", Value: []any{}},
		}, false},
		{`{"a":1,"b":2,"a":3}`, Object{{Key: "a", Value: 3.0}, {Key: "b", Value: 2.0}}, true},
		{many, want, true},
	}
	for _, c := range cases {
		got, err := parseJSON([]byte(c.in), lim)
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %#v, %v; want %#v", c.in, got, err, c.want)
		}
		if enc := string(mustEncodeRaw(c.want)); !c.dup && enc != c.in {
			t.Errorf("%s: re-encoded as %s", c.in, enc)
		}
	}
}

func TestParseJSONDepth(t *testing.T) {
	lim := Limits{MaxDepth: 3}.withDefaults()
	if _, err := parseJSON([]byte(`[[[1]]]`), lim); err != nil {
		t.Fatalf("depth 3 refused: %v", err)
	}
	for _, deep := range []string{`[[[[1]]]]`, `[{"a":[{}]}]`, `[[["]]]]]"],[[]]]]`} {
		_, err := parseJSON([]byte(deep), lim)
		if err == nil || !strings.Contains(err.Error(), "nesting depth") {
			t.Fatalf("%s: got %v, want a nesting depth error", deep, err)
		}
	}
}

// BenchmarkParseJSON parses the messages of one call with a parser reused as a session does.
func BenchmarkParseJSON(b *testing.B) {
	lim := DefaultLimits()
	msgs := [][]byte{[]byte(`["push",["pipeline",0,["add"],[1,2]]]`), []byte(`["pull",1]`), []byte(`["resolve",1,3]`)}
	p := jsonParser{maxDepth: lim.MaxDepth}
	b.ReportAllocs()
	for b.Loop() {
		for _, m := range msgs {
			if _, err := p.parseList(m, lim.MaxMessageSize); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkObjectRoundTrip parses, decodes and encodes again an object of the size of a typical
// record (what an echo or a held value costs on the message path).
func BenchmarkObjectRoundTrip(b *testing.B) {
	lim := DefaultLimits()
	msg := []byte(`{"id":1,"title":"buy milk","done":false,"tags":[["home","shop"]],"due":{"day":3,"month":12}}`)
	p := jsonParser{maxDepth: lim.MaxDepth}
	var out []byte
	b.ReportAllocs()
	for b.Loop() {
		raw, err := p.parse(msg, lim.MaxMessageSize)
		if err != nil {
			b.Fatal(err)
		}
		v, err := decodeValue(raw, lim)
		if err != nil {
			b.Fatal(err)
		}
		if out, err = encodeValue(out[:0], v, nil, lim.MaxDepth); err != nil {
			b.Fatal(err)
		}
	}
}
