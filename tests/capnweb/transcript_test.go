package capnweb

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
)

// transcriptPath is the project's copy of the golden transcripts (from capnweb 0.12.0) the tests
// compare against; package capnweb's unit tests read the same file.
const transcriptPath = "../../capnweb/testdata/transcripts.txt"

// alternativesPath holds the other client traffic a correct server may cause in some scenarios
// (same format as the transcripts).
const alternativesPath = "testdata/alternatives.txt"

// goldenScenario is one part-A scenario of the transcripts: what the official client sent when
// talking to the official server, and what it got.
type goldenScenario struct {
	// Name is the scenario id, e.g. "ws-3" or "batch-1".
	Name string
	// C2S holds the client-to-server messages in order; batch request bodies are split on "\n".
	C2S []string
	// Outcome is the client's note: "client result: <json>" or "client caught: <Class>: <msg>".
	Outcome string
}

// loadTranscript parses part A of the golden transcripts, in file order.
func loadTranscript(path string) ([]goldenScenario, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("load transcript: %w", err)
	}
	defer f.Close()
	var out []goldenScenario
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := sc.Text()
		if strings.Contains(line, "# PART B") {
			break
		}
		if header, ok := strings.CutPrefix(line, "=== "); ok {
			name, _, _ := strings.Cut(header, " ")
			out = append(out, goldenScenario{Name: name})
			continue
		}
		if len(out) == 0 {
			continue
		}
		cur := &out[len(out)-1]
		switch {
		case strings.HasPrefix(line, "C->S[http-request-body] "):
			var body string
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "C->S[http-request-body] ")), &body); err != nil {
				return nil, fmt.Errorf("load transcript: %s:%d: request body: %w", path, lineNo, err)
			}
			if body != "" {
				cur.C2S = append(cur.C2S, strings.Split(body, "\n")...)
			}
		case strings.HasPrefix(line, "C->S "):
			cur.C2S = append(cur.C2S, strings.TrimPrefix(line, "C->S "))
		case strings.HasPrefix(line, "   # client result: "), strings.HasPrefix(line, "   # client caught: "):
			cur.Outcome = strings.TrimPrefix(line, "   # ")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("load transcript: %w", err)
	}
	return out, nil
}

func TestLoadTranscript(t *testing.T) {
	golden, err := loadTranscript(transcriptPath)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range golden {
		names = append(names, g.Name)
		if len(g.C2S) == 0 || g.Outcome == "" {
			t.Errorf("%s: parsed %d C->S lines and outcome %q; want both present", g.Name, len(g.C2S), g.Outcome)
		}
	}
	want := "ws-1 ws-2 ws-3 ws-4 ws-5 ws-6 ws-7 ws-8 ws-9 ws-10 ws-11 ws-12 ws-13 ws-14 ws-15 ws-16 " +
		"ws-17 ws-18 ws-19 ws-20 ws-21 ws-22 batch-1 batch-2 batch-3"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("part A scenarios:\n got %s\nwant %s", got, want)
	}
	alternatives, err := loadTranscript(alternativesPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(alternatives) == 0 {
		t.Fatalf("%s: no scenarios parsed", alternativesPath)
	}
	for _, alt := range alternatives {
		if !slices.Contains(names, alt.Name) || len(alt.C2S) == 0 || alt.Outcome == "" {
			t.Errorf("%s: %s: want a part-A scenario name, C->S lines and an outcome; got %d lines, outcome %q",
				alternativesPath, alt.Name, len(alt.C2S), alt.Outcome)
		}
	}
	b2 := golden[len(golden)-2]
	if len(b2.C2S) != 6 || b2.C2S[5] != `["pull",4]` || b2.Outcome != `client result: [15,"Hello, carol!"]` {
		t.Errorf("batch-2 parsed as %q / %q", b2.C2S, b2.Outcome)
	}
}
