package capnweb

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// FuzzDecode checks that no input crashes the message decoder, and that every value it accepts
// encodes to something it accepts again. Seeds: testdata/fuzz/FuzzDecode (messages and values
// from the golden transcripts).
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`["push",["pipeline",0,["hello"],["World"]]]`))
	lim := Limits{MaxMessageSize: 1 << 16, MaxDepth: 64}.withDefaults()
	f.Fuzz(func(t *testing.T, data []byte) {
		raw, err := parseJSON(data, lim)
		if err != nil {
			return
		}
		v, err := decodeValue(raw, lim)
		if err != nil {
			return
		}
		b, err := encodeValue(nil, v, nil, lim.MaxDepth+1)
		if err != nil {
			t.Fatalf("decoded %q but cannot encode it: %v", data, err)
		}
		if !json.Valid(b) {
			t.Fatalf("encoded invalid JSON %q", b)
		}
		again, err := parseJSON(b, lim)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		v2, err := decodeValue(again, lim)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", b, err)
		}
		// Decoding and encoding again changes nothing, key order included.
		if b2, err := encodeValue(nil, v2, nil, lim.MaxDepth+1); err != nil || !bytes.Equal(b, b2) {
			t.Fatalf("%q: encoded %s, then %s (%v)", data, b, b2, err)
		}
	})
}

// fuzzAPI is the main object of FuzzSession.
type fuzzAPI struct{ Target }

func (*fuzzAPI) Hello(name string) string       { return "Hello, " + name }
func (*fuzzAPI) Echo(v any) any                 { return v }
func (*fuzzAPI) MakeCounter(n float64) *fuzzAPI { return &fuzzAPI{} }
func (*fuzzAPI) Fail() error                    { return RangeError("bad") }
func (*fuzzAPI) Version() string                { return "1" }
func (*fuzzAPI) CallMeBack(ctx context.Context, cb *Stub, x float64) (any, error) {
	return cb.CallFunc(ctx, x).Await(ctx)
}
func (*fuzzAPI) GetUserIds() []int { return []int{1, 2, 3} }

// FuzzSession feeds arbitrary message sequences (one per line) to a server session and checks
// that it never panics, always answers with valid JSON and ends with empty tables. Seeds:
// testdata/fuzz/FuzzSession (the client side of every transcript scenario).
func FuzzSession(f *testing.F) {
	f.Add([]byte("[\"push\",[\"pipeline\",0,[\"hello\"],[\"World\"]]]\n[\"pull\",1]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		opts := Options{Main: &fuzzAPI{}, Limits: Limits{MaxMessageSize: 1 << 16, MaxDepth: 64, MaxExports: 100, MaxImports: 100, MaxPendingCalls: 50}}
		s := newSession(nil, opts)
		out := runBatchSession(ctx, s, data)
		for line := range strings.SplitSeq(string(out), "\n") {
			if line != "" && !json.Valid([]byte(line)) {
				t.Fatalf("invalid output line %q", line)
			}
		}
		// Calls still running when the session ended finish on their own and drop their refs.
		for s.Stats() != (Stats{}) {
			if ctx.Err() != nil {
				t.Fatalf("tables not empty after the session: %+v", s.Stats())
			}
			time.Sleep(time.Millisecond)
		}
	})
}
