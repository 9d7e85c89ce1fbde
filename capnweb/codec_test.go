package capnweb

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/capnweb/ordered"
)

// partC reads the value vectors (name -> wire) and the acceptance checks (wire -> result) of
// part C of the golden transcripts.
func partC(t testing.TB) (vectors map[string]string, checks [][2]string) {
	t.Helper()
	f, err := os.Open("testdata/transcripts.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	vectors = map[string]string{}
	sc := bufio.NewScanner(f)
	inC, inChecks, name := false, false, ""
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# PART C"):
			inC = true
		case !inC || strings.HasPrefix(line, "#") || line == "":
		case strings.HasPrefix(line, "deserialize() acceptance checks"):
			inChecks = true
		case inChecks:
			wire, result, _ := strings.Cut(strings.TrimSpace(line), "  ->  ")
			checks = append(checks, [2]string{wire, result})
		case strings.HasPrefix(line, "    "):
			vectors[name] = strings.TrimSpace(line)
		default:
			name = line
		}
	}
	if len(vectors) == 0 || len(checks) == 0 {
		t.Fatal("part C not found in testdata/transcripts.txt")
	}
	return vectors, checks
}

func mustURL(s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		panic(err)
	}
	return u
}

func bigInt(s string) *big.Int {
	n, _ := new(big.Int).SetString(s, 10)
	return n
}

// partCValues are the Go values that value-vectors.mjs serialized, by vector name.
var partCValues = map[string]any{
	"number":                       123,
	"negative float":               -1.5,
	"large int":                    int64(1 << 53),
	"tiny float":                   1e-7,
	"huge float":                   1e21,
	"negative zero":                math.Copysign(0, -1),
	"string":                       "hello \"quoted\" \n newline <tag> & \u2028",
	"true":                         true,
	"null":                         nil,
	"undefined":                    Undefined,
	"Infinity":                     math.Inf(1),
	"-Infinity":                    math.Inf(-1),
	"NaN":                          math.NaN(),
	"empty array":                  []any{},
	"array":                        []int{1, 2, 3},
	"nested arrays":                []any{[]int{1}, [][]int{{2}}, []any{}},
	"array that looks like a tag":  []any{"date", 5},
	"object":                       map[string]any{"a": 1, "b": "x", "c": []bool{true}},
	"object with undefined member": map[string]any{"a": Undefined},
	"empty object":                 map[string]any{},
	"date":                         time.UnixMilli(1700000000000),
	"invalid date":                 time.Time{},
	"bigint":                       bigInt("123456789012345678901234567890"),
	"negative bigint":              big.NewInt(-5),
	"Uint8Array":                   []byte{0, 1, 2, 253, 254, 255},
	"empty Uint8Array":             []byte{},
	"ArrayBuffer":                  TypedArray{Type: "ArrayBuffer", Data: []byte{9, 8}},
	"Int16Array":                   TypedArray{Type: "Int16Array", Data: []byte{1, 0, 0xfe, 0xff}},
	"Float64Array":                 TypedArray{Type: "Float64Array", Data: []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}},
	"Error":                        &Error{Name: "Error", Message: "plain"},
	"TypeError":                    TypeError("bad type"),
	"Error with props":             &Error{Name: "Error", Message: "with code", Props: map[string]any{"code": "E42", "n": 1}},
	"Error with cause":             &Error{Name: "Error", Message: "outer", Props: map[string]any{"cause": RangeError("inner")}},
	"custom error name":            NewError("MyError", "x"),
	"URL":                          mustURL("https://example.com/a?b=1#c"),
	"Headers":                      http.Header{"Content-Type": {"text/plain"}, "X-A": {"1"}},
	"mixed": Object{{Key: "when", Value: time.UnixMilli(0)}, {Key: "list", Value: []any{big.NewInt(1), Undefined, nil}},
		{Key: "bytes", Value: []byte{255}}},
}

func encodeGo(t *testing.T, v any) string {
	t.Helper()
	cv, err := canonicalize(nil, v)
	if err != nil {
		t.Fatalf("canonicalize %v: %v", v, err)
	}
	b, err := encodeValue(nil, cv, nil, 64)
	if err != nil {
		t.Fatalf("encode %v: %v", v, err)
	}
	return string(b)
}

func TestPartCEncode(t *testing.T) {
	vectors, _ := partC(t)
	for name, wire := range vectors {
		v, ok := partCValues[name]
		if !ok {
			t.Errorf("no Go value for vector %q", name)
			continue
		}
		if got := encodeGo(t, v); !jsonEqual(got, wire) {
			t.Errorf("%s: encode = %s, want %s", name, got, wire)
		}
	}
}

func TestPartCRoundTrip(t *testing.T) {
	vectors, _ := partC(t)
	for name, wire := range vectors {
		raw, err := parseJSON([]byte(wire), DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		v, err := decodeValue(raw, Limits{})
		if err != nil {
			t.Errorf("%s: decode %s: %v", name, wire, err)
			continue
		}
		if got := encodeGo(t, v); !jsonEqual(got, wire) {
			t.Errorf("%s: decode+encode = %s, want %s", name, got, wire)
		}
	}
}

func TestPartCAcceptance(t *testing.T) {
	_, checks := partC(t)
	for _, c := range checks {
		wire, want := c[0], c[1]
		raw, err := parseJSON([]byte(wire), DefaultLimits())
		if err != nil {
			t.Fatalf("%s: %v", wire, err)
		}
		v, err := decodeValue(raw, Limits{})
		if strings.HasPrefix(want, "THROWS") {
			if err == nil {
				t.Errorf("%s: decoded to %v, want an error", wire, v)
			} else if !strings.Contains(err.Error(), "unknown special value") {
				t.Errorf("%s: error %q, want unknown special value", wire, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", wire, err)
			continue
		}
		var expect any
		switch {
		case strings.HasPrefix(want, "Uint8Array["):
			var nums []byte
			for n := range strings.SplitSeq(strings.Trim(want, "Uint8Array[]"), ",") {
				var x int
				_ = json.Unmarshal([]byte(n), &x)
				nums = append(nums, byte(x))
			}
			expect = nums
		case strings.HasPrefix(want, "Error("):
			e := v.(*Error)
			if !strings.HasPrefix(want, `Error("`+e.Message+`")`) {
				t.Errorf("%s: message %q, want %s", wire, e.Message, want)
			}
			if strings.Contains(want, `stack="stack text"`) && e.Stack != "stack text" {
				t.Errorf("%s: stack %q", wire, e.Stack)
			}
			continue
		case want == "Date(NaN)":
			expect = time.Time{}
		case strings.HasSuffix(want, "n"):
			expect = bigInt(strings.TrimSuffix(want, "n"))
		default:
			if err := json.Unmarshal([]byte(want), &expect); err != nil {
				t.Fatalf("%s: %v", want, err)
			}
		}
		if !reflect.DeepEqual(ordered.Plain(v), expect) {
			t.Errorf("%s: decoded %#v, want %#v", wire, v, expect)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, wire := range []string{
		`["bigint","12a"]`, `["bigint",""]`, `["bytes","@@"]`, `["bytes","AQ","Int16Array"]`,
		`["bytes","AQ","NoSuchArray"]`, `["date","x"]`, `["error",1,"m"]`, `["error","E"]`,
		`["headers",[["a"]]]`, `["undefined",1]`, `[["a"],1]`, `[{"a":1}]`, `["export",-1]`,
		`["readable",1]`, `["url",":bad"]`,
	} {
		raw, err := parseJSON([]byte(wire), DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if v, err := decodeValue(raw, Limits{}); err == nil {
			t.Errorf("%s decoded to %#v, want an error", wire, v)
		}
	}
}

func TestDecodeLimits(t *testing.T) {
	deep := strings.Repeat("[[", 200) + strings.Repeat("]]", 200)
	if _, err := parseJSON([]byte(deep), Limits{MaxDepth: 256}.withDefaults()); err == nil {
		t.Error("depth 400 accepted with limit 256")
	}
	if _, err := parseJSON([]byte(`"`+strings.Repeat("x", 100)+`"`), Limits{MaxMessageSize: 50}.withDefaults()); err == nil {
		t.Error("oversized message accepted")
	}
	big := `["bigint","` + strings.Repeat("9", 20) + `"]`
	raw, _ := parseJSON([]byte(big), DefaultLimits())
	if _, err := decodeValue(raw, Limits{MaxBigIntDigits: 10}); err == nil {
		t.Error("bigint over the digit limit accepted")
	}
}

func TestJSONStringMatchesJavaScript(t *testing.T) {
	// JSON.stringify escapes only quotes, backslashes and control characters.
	got := string(appendJSONString(nil, "a\"b\\c\x01\u2028<>&\xff"))
	want := `"a\"b\\c\u0001` + "\u2028" + `<>&\ufffd"`
	if got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// jsonEqual compares two JSON texts after parsing and re-encoding both, so that spacing does
// not count; object member order does.
func jsonEqual(a, b string) bool {
	if a == b {
		return true
	}
	va, err1 := parseJSON([]byte(a), DefaultLimits())
	vb, err2 := parseJSON([]byte(b), DefaultLimits())
	if err1 != nil || err2 != nil {
		return false
	}
	return bytes.Equal(mustEncodeRaw(va), mustEncodeRaw(vb))
}
