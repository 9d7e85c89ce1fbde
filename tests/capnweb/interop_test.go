package capnweb

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	os.Unsetenv("RUST_BACKTRACE")
	os.Exit(m.Run())
}

// scenarioReport is one entry of the JSON report printed by node/scenarios.mjs.
type scenarioReport struct {
	Name   string   `json:"name"`
	OK     bool     `json:"ok"`
	Result *string  `json:"result"`
	Error  *string  `json:"error"`
	C2S    []string `json:"c2s"`
	S2C    []string `json:"s2c"`
}

// outcome renders the report in the notation of the transcript's client notes.
func (r scenarioReport) outcome() string {
	switch {
	case r.Error != nil:
		return "client caught: " + *r.Error
	case r.Result != nil:
		return "client result: " + *r.Result
	}
	return "no outcome"
}

// TestScenariosGoServer runs every part-A transcript scenario with the official client against
// the Go conformance server.
func TestScenariosGoServer(t *testing.T) {
	root, nodeDir := requireNode(t)
	bin, err := BuildGoServer(root, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := StartGoServer(bin)
	if err != nil {
		t.Fatal(err)
	}
	checkScenarios(t, srv, nodeDir)
}

// TestScenariosNodeServer is the control run: the same scenarios against the official Node
// server, which produced the transcripts, so it proves the runner and the comparison.
func TestScenariosNodeServer(t *testing.T) {
	_, nodeDir := requireNode(t)
	srv, err := StartNodeServer(nodeDir)
	if err != nil {
		t.Fatal(err)
	}
	checkScenarios(t, srv, nodeDir)
}

// requireNode skips in -short mode and fails when node or the npm packages are missing.
func requireNode(t *testing.T) (root, nodeDir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts Node and server subprocesses")
	}
	root, err := ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	nodeDir = NodeDir(root)
	if err := CheckNode(nodeDir); err != nil {
		t.Fatal(err)
	}
	return root, nodeDir
}

// checkScenarios runs node/scenarios.mjs against srv and requires, for every scenario, the
// transcript's client outcome and exactly the transcript's client-to-server messages.
func checkScenarios(t *testing.T, srv *Server, nodeDir string) {
	t.Helper()
	t.Cleanup(func() {
		srv.Close()
		if t.Failed() {
			t.Logf("server output:\n%s", srv.Output())
		}
	})
	golden, err := loadTranscript(transcriptPath)
	if err != nil {
		t.Fatal(err)
	}
	alternatives, err := loadTranscript(alternativesPath)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, runErr := RunNode(ctx, nodeDir, "scenarios.mjs", "--url", srv.URL, "--record")
	var report struct {
		Scenarios []scenarioReport `json:"scenarios"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("scenarios.mjs printed no report (%v): %v\nstdout:\n%s", runErr, err, out)
	}
	byName := make(map[string]scenarioReport, len(report.Scenarios))
	for _, r := range report.Scenarios {
		byName[r.Name] = r
	}
	for _, g := range golden {
		t.Run(g.Name, func(t *testing.T) {
			r, ok := byName[g.Name]
			if !ok {
				t.Fatalf("scenarios.mjs did not run %s", g.Name)
			}
			if !r.OK {
				t.Errorf("scenarios.mjs rejected the outcome %s", r.outcome())
			}
			candidates := []goldenScenario{g}
			for _, alt := range alternatives {
				if alt.Name == g.Name {
					candidates = append(candidates, alt)
				}
			}
			var mismatches []string
			for i, c := range candidates {
				source := transcriptPath
				if i > 0 {
					source = alternativesPath
				}
				problem := compareScenario(c, r)
				if problem == "" {
					return
				}
				mismatches = append(mismatches, fmt.Sprintf("against %s:\n%s", source, problem))
			}
			t.Errorf("%s", strings.Join(mismatches, "\n"))
		})
	}
	if len(report.Scenarios) != len(golden) {
		t.Errorf("scenarios.mjs ran %d scenarios, transcript part A has %d", len(report.Scenarios), len(golden))
	}
}

// compareScenario returns "" when the report matches the golden scenario (same outcome, same
// client-to-server messages), or else a description of the difference.
func compareScenario(g goldenScenario, r scenarioReport) string {
	var problems []string
	if got := r.outcome(); !sameOutcome(got, g.Outcome) {
		problems = append(problems, fmt.Sprintf("outcome:\n got %s\nwant %s", got, g.Outcome))
	}
	if !slices.Equal(r.C2S, g.C2S) {
		problems = append(problems, "client-to-server messages differ:\n"+describeTraffic(g.C2S, r))
	}
	return strings.Join(problems, "\n")
}

// sameOutcome compares two client notes; results are compared as JSON values, so the order of
// object members does not matter.
func sameOutcome(got, want string) bool {
	gotJSON, gotOK := strings.CutPrefix(got, "client result: ")
	wantJSON, wantOK := strings.CutPrefix(want, "client result: ")
	if !gotOK || !wantOK {
		return got == want
	}
	var gv, wv any
	if json.Unmarshal([]byte(gotJSON), &gv) != nil || json.Unmarshal([]byte(wantJSON), &wv) != nil {
		return got == want
	}
	return reflect.DeepEqual(gv, wv)
}

// describeTraffic shows the expected and recorded client messages side by side with the first
// difference marked, followed by what the server sent, which is what made the client differ.
func describeTraffic(want []string, r scenarioReport) string {
	var b strings.Builder
	first := 0
	for first < len(want) && first < len(r.C2S) && want[first] == r.C2S[first] {
		first++
	}
	list := func(title string, lines []string, mark int) {
		fmt.Fprintf(&b, "%s:\n", title)
		for i, l := range lines {
			prefix := "   "
			if i == mark {
				prefix = ">> "
			}
			fmt.Fprintf(&b, "%s%s\n", prefix, l)
		}
	}
	list("want C->S (transcript)", want, first)
	list("got C->S", r.C2S, first)
	list("S->C received by the client", r.S2C, -1)
	return b.String()
}
