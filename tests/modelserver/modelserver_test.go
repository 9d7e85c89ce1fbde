package modelserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// golden is where the providers' example streams are kept.
const golden = "../../host/agent/provider/testdata/"

// requests are minimal valid requests of each wire.
var requests = map[Wire]string{
	OpenAI:    `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true,"stream_options":{"include_usage":true},"max_tokens":10}`,
	Anthropic: `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"stream":true}`,
}

// post sends body to s as its wire's client would and returns the status and response body.
func post(t *testing.T, s *Server, body string) (int, []byte) {
	t.Helper()
	path := "/chat/completions"
	if s.wire == Anthropic {
		path = "/v1/messages"
	}
	req, err := http.NewRequest(http.MethodPost, s.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("anthropic-version", "2023-06-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// shapes returns the set of event shapes of a stream: each event's name and the skeleton of
// its data (keys and kinds of values, not the values).
func shapes(t *testing.T, stream []byte) []string {
	t.Helper()
	set := map[string]bool{}
	for _, ev := range bytes.Split(bytes.TrimSpace(stream), []byte("\n\n")) {
		var name, data string
		for _, line := range strings.Split(string(ev), "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				data = v
			} else {
				t.Fatalf("line %q is not event: or data:", line)
			}
		}
		if data == "[DONE]" {
			set["[DONE]"] = true
			continue
		}
		var v any
		if err := json.Unmarshal([]byte(data), &v); err != nil {
			t.Fatalf("event %q: %v", data, err)
		}
		set[name+" "+skeleton(v)] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func skeleton(v any) string {
	switch v := v.(type) {
	case map[string]any:
		var keys []string
		for k := range v {
			keys = append(keys, k+":"+skeleton(v[k]))
		}
		sort.Strings(keys)
		return "{" + strings.Join(keys, ",") + "}"
	case []any:
		var elems []string
		for _, e := range v {
			if s := skeleton(e); !slices.Contains(elems, s) {
				elems = append(elems, s)
			}
		}
		sort.Strings(elems)
		return "[" + strings.Join(elems, "|") + "]"
	case string:
		return "s"
	case float64:
		return "n"
	case bool:
		return "b"
	}
	return "null"
}

// TestShapesMatchGolden checks that the server's streams have exactly the event shapes of the
// providers' documented examples.
func TestShapesMatchGolden(t *testing.T) {
	tests := []struct {
		wire Wire
		file string
		turn Turn
	}{
		{OpenAI, "openai_text.sse", Text("Hello! How can I assist you today?")},
		{OpenAI, "openai_tools.sse", Tools(Call("get_weather", `{"location":"Paris, France"}`), Call("get_weather", `{"location":"Bogotá, Colombia"}`))},
		{Anthropic, "anthropic_text.sse", Text("Hello!")},
		{Anthropic, "anthropic_tools.sse", Tools(Call("get_weather", `{"location": "San Francisco, CA", "unit": "fahrenheit"}`)).WithText("Okay, let's check the weather for San Francisco, CA:")},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			want, err := os.ReadFile(golden + tt.file)
			if err != nil {
				t.Fatal(err)
			}
			s := Start(t, tt.wire, tt.turn)
			status, got := post(t, s, requests[tt.wire])
			if status != http.StatusOK {
				t.Fatalf("status %d: %s", status, got)
			}
			if g, w := shapes(t, got), shapes(t, want); !slices.Equal(g, w) {
				t.Errorf("event shapes differ from %s:\n got %q\nwant %q", tt.file, g, w)
			}
		})
	}
}

// TestTextDeltas checks how Text splits a reply and Call its arguments.
func TestTextDeltas(t *testing.T) {
	if got := Text("Hello there,  friend\nbye").deltas; !slices.Equal(got, []string{"Hello", " there,", "  friend", "\nbye"}) {
		t.Errorf("Text deltas %q", got)
	}
	if got := fragments(`{"a":"ééééé"}`); strings.Join(got, "") != `{"a":"ééééé"}` || slices.ContainsFunc(got, func(f string) bool { return !json.Valid([]byte(jsonString(f))) || strings.ContainsRune(f, '\uFFFD') }) {
		t.Errorf("fragments %q split a character", got)
	}
}

// recorder is a testing.TB that records Errorf instead of failing, to test refusals.
type recorder struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestRefusals checks that requests a provider would refuse, and one past the script, fail the
// test with an HTTP error saying why.
func TestRefusals(t *testing.T) {
	tests := []struct {
		name string
		wire Wire
		body string
		says string
	}{
		{"openai/no_usage", OpenAI, `{"model":"m","messages":[],"stream":true}`, "include_usage"},
		{"openai/unanswered_call", OpenAI, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"user","content":"hi"}]}`, "before tool calls [c1] were answered"},
		{"openai/stray_result", OpenAI, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"tool","tool_call_id":"c9","content":"x"}]}`, "which is not awaiting an answer"},
		{"anthropic/no_max_tokens", Anthropic, `{"model":"m","messages":[{"role":"user","content":"hi"}],"stream":true}`, "max_tokens"},
		{"anthropic/split_results", Anthropic, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t1","name":"f","input":{}},{"type":"tool_use","id":"t2","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t2","content":"b"}]}]}`, "does not answer tool calls [t2]"},
		{"anthropic/empty_text", Anthropic, `{"model":"m","max_tokens":5,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, "empty text block"},
		{"openai/past_script", OpenAI, requests[OpenAI], "after the script's last turn"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{TB: t}
			s := Start(rec, tt.wire)
			status, body := post(t, s, tt.body)
			if status < 400 || !strings.Contains(string(body), tt.says) {
				t.Errorf("status %d body %s, want an error saying %q", status, body, tt.says)
			}
			if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], tt.says) {
				t.Errorf("test failures %q, want one saying %q", rec.errs, tt.says)
			}
		})
	}
}

// TestScript checks Forever, Push, Func and WithUsage.
func TestScript(t *testing.T) {
	s := Start(t, Anthropic, Func(func(r Request) Turn { return Text("model "+r.Model).WithUsage(7, 9) }))
	_, first := post(t, s, requests[Anthropic])
	if !bytes.Contains(first, []byte(`" m"`)) || !bytes.Contains(first, []byte(`"input_tokens":7`)) || !bytes.Contains(first, []byte(`"output_tokens":9`)) {
		t.Errorf("Func turn streamed %s", first)
	}
	s.Push(Forever(Text("again")))
	for i := 0; i < 3; i++ {
		if status, body := post(t, s, requests[Anthropic]); status != http.StatusOK || !bytes.Contains(body, []byte(`"again"`)) {
			t.Fatalf("request %d: %d %s", i+2, status, body)
		}
	}
	if got := len(s.Requests()); got != 4 {
		t.Errorf("%d requests recorded, want 4", got)
	}
}
