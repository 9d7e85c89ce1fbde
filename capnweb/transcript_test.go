package capnweb_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"atelier/capnweb"
	"atelier/tests/capnweb/conformance/api"
)

// wireLine is one recorded message: C->S (fromClient) or S->C.
type wireLine struct {
	fromClient bool
	text       string
}

// transcript is one recorded scenario.
type transcript struct {
	name  string
	lines []wireLine
	// batch request and response bodies (batch scenarios only)
	request, response string
}

// loadTranscripts parses testdata/transcripts.txt (parts A and B). WebSocket scenarios stop at
// the close: the server's trailing abort goes nowhere.
func loadTranscripts(t testing.TB) map[string]*transcript {
	t.Helper()
	f, err := os.Open("testdata/transcripts.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*transcript{}
	var cur *transcript
	closed := false
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "# PART C"):
			return out
		case strings.HasPrefix(line, "=== "):
			name, _, _ := strings.Cut(strings.TrimPrefix(line, "=== "), " ")
			cur = &transcript{name: name}
			out[name] = cur
			closed = false
		case cur == nil || closed:
		case strings.Contains(line, "# ws-close"):
			closed = true
		case strings.HasPrefix(line, "C->S[http-request-body] "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "C->S[http-request-body] ")), &cur.request)
		case strings.HasPrefix(line, "S->C[http-response-body] "):
			_ = json.Unmarshal([]byte(strings.TrimPrefix(line, "S->C[http-response-body] ")), &cur.response)
		case strings.HasPrefix(line, "C->S "):
			cur.lines = append(cur.lines, wireLine{true, strings.TrimPrefix(line, "C->S ")})
		case strings.HasPrefix(line, "S->C "):
			cur.lines = append(cur.lines, wireLine{false, strings.TrimPrefix(line, "S->C ")})
		}
	}
	return out
}

// goServerDifferences lists where the Go server's answers legitimately differ from the JS
// server's (PROTOCOL.md sections 7 and 12): it answers .map() with the computed value inline
// (so the client has no promise ids to release) and returns a stub passed back to it as a live
// stub.
var goServerDifferences = map[string][]wireLine{
	"ws-8": {
		{true, `["push",["pipeline",0,["getUserIds"],[]]]`},
		{true, `["push",["remap",1,[],[["import",0]],[["pipeline",-1,["getUserName"],[["pipeline",0]]],{"id":["pipeline",0],"name":["pipeline",1]}]]]`},
		{true, `["pull",2]`},
		{false, `["resolve",2,[[{"id":1,"name":"alice"},{"id":2,"name":"bob"},{"id":3,"name":"carol"}]]]`},
		{true, `["release",2,1]`},
	},
	"ws-14": {
		{true, `["push",["pipeline",0,["makeCounter"],[7]]]`},
		{true, `["pull",1]`},
		{false, `["resolve",1,["export",-1]]`},
		{true, `["release",1,1]`},
		{true, `["push",["pipeline",0,["echo"],[["import",-1]]]]`},
		{true, `["pull",2]`},
		{false, `["resolve",2,["export",-2]]`},
		{true, `["release",2,1]`},
	},
	"ws-17": {
		{true, `["push",["pipeline",0,["getTeams"],[]]]`},
		{true, `["push",["remap",1,[],[["import",0]],[["remap",0,["memberIds"],[["import",-1]],[["pipeline",-1,["getUserName"],[["pipeline",0]]],["pipeline",1]]],["pipeline",1]]]]`},
		{true, `["pull",2]`},
		{false, `["resolve",2,[[[["alice","bob"]],[["carol"]]]]]`},
		{true, `["release",2,1]`},
	},
}

var goBatchDifferences = map[string]string{
	"batch-3": `["resolve",2,[["alice","bob","carol"]]]`,
}

// TestTranscriptReplay feeds the recorded client messages of every part-A WebSocket scenario to
// the Go server and checks that it answers with the recorded server messages, in order. Object
// members may come in another order; see goServerDifferences for the other allowed differences.
func TestTranscriptReplay(t *testing.T) {
	for name, tr := range loadTranscripts(t) {
		if !strings.HasPrefix(name, "ws-") {
			continue
		}
		lines := tr.lines
		if d, ok := goServerDifferences[name]; ok {
			lines = d
		}
		t.Run(name, func(t *testing.T) { replay(t, lines) })
	}
}

func replay(t *testing.T, lines []wireLine) {
	serverEnd, clientEnd := capnweb.Pipe()
	server := capnweb.NewSession(serverEnd, capnweb.Options{Main: &api.API{}})
	defer server.Close()
	got := make(chan string, 100)
	go func() {
		for {
			m, err := clientEnd.ReadMessage()
			if err != nil {
				close(got)
				return
			}
			got <- string(m)
		}
	}()
	for i, l := range lines {
		if l.fromClient {
			if err := clientEnd.WriteMessage([]byte(l.text)); err != nil {
				t.Fatal(err)
			}
			continue
		}
		select {
		case m, ok := <-got:
			if !ok {
				t.Fatalf("line %d: session ended, want %s", i, l.text)
			}
			if !jsonEqual(m, l.text) {
				t.Fatalf("line %d: server sent %s, want %s", i, m, l.text)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("line %d: no message, want %s", i, l.text)
		}
	}
	_ = clientEnd.Close(nil)
	for m := range got {
		t.Errorf("unexpected extra message %s", m)
	}
}

// TestTranscriptReplayBatch posts the recorded batch request bodies and compares the response.
func TestTranscriptReplayBatch(t *testing.T) {
	hs := httptest.NewServer(http.HandlerFunc(newServer(nil).ServeBatch))
	defer hs.Close()
	for name, tr := range loadTranscripts(t) {
		if !strings.HasPrefix(name, "batch-") {
			continue
		}
		t.Run(name, func(t *testing.T) {
			resp, err := http.Post(hs.URL, "text/plain;charset=UTF-8", strings.NewReader(tr.request))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := tr.response
			if d, ok := goBatchDifferences[name]; ok {
				want = d
			}
			// Independent calls run concurrently, so their answers may come in any order.
			gotLines, wantLines := strings.Split(string(body), "\n"), strings.Split(want, "\n")
			if len(gotLines) != len(wantLines) {
				t.Fatalf("response %q, want %q", body, want)
			}
			for _, w := range wantLines {
				i := slices.IndexFunc(gotLines, func(g string) bool { return jsonEqual(g, w) })
				if i < 0 {
					t.Errorf("response %q lacks %s", body, w)
					continue
				}
				gotLines = slices.Delete(gotLines, i, i+1)
			}
		})
	}
}

// jsonEqual compares JSON texts apart from spacing; object members must come in the same
// order (the Go server keeps the order it receives, as the JavaScript one does).
func jsonEqual(a, b string) bool {
	if a == b {
		return true
	}
	var ca, cb bytes.Buffer
	if json.Compact(&ca, []byte(a)) != nil || json.Compact(&cb, []byte(b)) != nil {
		return false
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes())
}
