package cluster

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"atelier/host/store"
)

// callEntry is a commit entry as a busy workspace appends it: n gadget calls, each a commit
// of a KV set and an audit line.
func callEntry(n int) entry {
	e := entry{Op: opCommit, WS: "ws_bench-1", Epoch: 42}
	for i := range n {
		audit := store.AuditEntry{Time: time.Unix(1700000000, int64(i)).UTC(), Actor: "user:alice",
			Action: "gadget.call", Target: "counter", Detail: "increment"}
		e.Commits = append(e.Commits, commitRecord{Chain: uint64(i % 3), Muts: []mutation{
			{Mutation: store.SetKV("counter", []byte(fmt.Sprintf("key-%d", i)), []byte(strings.Repeat("v", 64)))},
			{Mutation: store.AppendAudit(audit)},
		}})
	}
	return e
}

// TestEntryRoundTrip encodes entries of every op kind and mutation kind and decodes exactly
// what was encoded.
func TestEntryRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 30, 15, 0, 0, 123456789, time.UTC)
	kinds := entry{Op: opCommit, WS: "ws-1", Epoch: 7, Commits: []commitRecord{
		{Muts: []mutation{
			{Mutation: store.SetKV("g", []byte("k"), []byte("v"))},
			{Mutation: store.SetKV("g", []byte("no value"), nil)},
			{Mutation: store.SetKV("g", []byte("empty value"), []byte{})}, // JSON: keeps non-nil
			{Mutation: store.DeleteKV("h", []byte("k"))},
			{Mutation: store.AppendAudit(store.AuditEntry{Seq: 3, Time: now, Actor: "a", Action: "b", Target: "c", Detail: "d"})},
			{Mutation: store.AppendAudit(store.AuditEntry{Time: now.In(time.FixedZone("", 3600))})}, // JSON: not UTC
			{Mutation: store.AppendAudit(store.AuditEntry{Time: time.Unix(-1<<40, 999999999).UTC()})},
		}},
		{Chain: 1<<64 - 1, Muts: []mutation{
			{Mutation: store.PutGadget(store.Gadget{ID: "g", Name: "counter"})},
			{Mutation: store.DeleteGadget("g")},
			{Mutation: store.PutWorkspace(store.Workspace{ID: "ws-1", Name: "w", Created: now,
				Collaborators:        []store.Collaborator{{UserID: "u2", Role: store.RoleUse, Observers: map[string]string{"notes.work": "acct_2"}}},
				ObserverRequirements: map[store.Role][]string{store.RoleUse: {"notes.work"}}})},
			{Mutation: store.Mutation{Kind: store.MutPutCode}, Blob: "sha"},
			{Mutation: store.DeleteWorkspace()},
		}},
		{Chain: 3, Muts: []mutation{
			{Mutation: store.PutChat(store.Chat{ID: "ch_1", Title: "t", Creator: "u1", Created: now, Updated: now, LastMessage: 2,
				Requests: []store.ChatRequest{{ID: "cr_1", User: "u1", Gatekeeper: "mail", Binding: "mail", Created: now}}, Gatekeepers: map[string]string{"mail": "acct_1"}})},
			{Mutation: store.PutChatMessage(store.ChatMessage{Chat: "ch_1", ID: 2, Data: []byte(`{"id":2,"text":"hi"}`)})},
			{Mutation: store.PutDraft(store.Draft{Chat: "ch_1", Updated: now, Gadgets: []store.DraftGadget{{Gadget: "g", Name: "todo", Base: 3,
				Files: []store.DraftFile{{Name: "server.js", Content: "new"}}}}})},
			{Mutation: store.DeleteDraft("ch_1")},
			{Mutation: store.DeleteChat("ch_1")},
		}},
		{Chain: 2, Muts: []mutation{}},
	}}
	entries := []entry{
		kinds,
		callEntry(100),
		{Op: opCommit, WS: "ws-2", Commits: []commitRecord{}},
		{Op: opEpoch, WS: "ws-1", Node: "n1"},
		{Op: opCreateUser, User: &store.User{ID: "u1", Name: "alice", Created: now}},
		{Op: opDeleteToken, ID: "hash"},
		{Op: opRetention, Retention: &store.Retention{}},
		{Op: opBlobEntry, Blob: "sha"},
		{Op: opPutModel, Model: &store.Model{ID: "mdl_1", Owner: "u1", Name: "gpt", Provider: "openai",
			BaseURL: "https://api.openai.com/v1", Model: "gpt-4o", ContextWindow: 128000, SealedKey: []byte{0, 1, 255}, Created: now}},
		{Op: opDeleteModel, ID: "mdl_1"},
		{Op: opPutInstructions, Instructions: new(string)},
	}
	for _, e := range entries {
		data, err := encodeEntry(e)
		if err != nil {
			t.Fatalf("encode %s: %v", e.Op, err)
		}
		got, err := decodeEntry(data)
		if err != nil {
			t.Fatalf("decode %s: %v", e.Op, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Errorf("%s: decoded\n%+v\nwant\n%+v", e.Op, got, e)
		}
	}
	data, err := encodeEntry(kinds)
	if err != nil {
		t.Fatal(err)
	}
	if data[0] != formatCommit {
		t.Errorf("a commit entry starts with %#x, want the binary format", data[0])
	}
}

// TestDecodeMalformed feeds entries that are cut short, padded, inconsistent or of the wrong
// format: each is refused with errMalformed.
func TestDecodeMalformed(t *testing.T) {
	good, err := encodeEntry(callEntry(3))
	if err != nil {
		t.Fatal(err)
	}
	bad := map[string][]byte{
		"empty":                     {},
		"unknown format":            {0x7f},
		"commit in JSON":            []byte(`{"op":"commit","ws":"ws-1"}`),
		"op without data":           []byte(`{"op":"putUser"}`),
		"model without data":        []byte(`{"op":"putModel","id":"mdl_1"}`),
		"instructions without data": []byte(`{"op":"putAgentInstructions"}`),
		"unknown op":                []byte(`{"op":"nope"}`),
		"trailing bytes":            append(append([]byte(nil), good...), 0),
		"bad workspace":             encodeRaw(func(w *encoder) { w.string("ws.*"); w.uint(1); w.uint(0) }),
		"huge count":                encodeRaw(func(w *encoder) { w.string("ws"); w.uint(1); w.uint(1 << 62) }),
		"huge length": encodeRaw(func(w *encoder) {
			w.string("ws")
			w.uint(1)
			w.uint(1)
			w.uint(0)
			w.uint(1)
			w.b = append(w.b, tagSetKV)
			w.uint(1 << 62)
		}),
		"unknown tag": encodeRaw(func(w *encoder) {
			w.string("ws")
			w.uint(1)
			w.uint(1)
			w.uint(0)
			w.uint(1)
			w.b = append(w.b, 99)
		}),
		"bad nanoseconds": encodeRaw(func(w *encoder) {
			w.string("ws")
			w.uint(1)
			w.uint(1)
			w.uint(0)
			w.uint(1)
			w.b = append(w.b, tagAudit, 0, 0)
			w.uint(1e9)
		}),
		"bad JSON mutation": encodeRaw(func(w *encoder) {
			w.string("ws")
			w.uint(1)
			w.uint(1)
			w.uint(0)
			w.uint(1)
			w.b = append(w.b, tagJSON)
			w.bytes([]byte("{"))
		}),
		"overlong varint": append([]byte{formatCommit, 1, 'w', 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 0, 0),
	}
	for n := range len(good) {
		bad[fmt.Sprintf("cut at %d", n)] = good[:n]
	}
	for name, data := range bad {
		if e, err := decodeEntry(data); !errors.Is(err, errMalformed) {
			t.Errorf("%s: decoded %+v, %v; want errMalformed", name, e, err)
		}
	}
}

// encodeRaw returns a commit entry written field by field by fill.
func encodeRaw(fill func(w *encoder)) []byte {
	w := encoder{b: []byte{formatCommit}}
	fill(&w)
	return w.b
}

// FuzzDecodeEntry checks that decodeEntry never panics, and that whatever it accepts encodes
// to an entry that decodes to the same.
func FuzzDecodeEntry(f *testing.F) {
	for _, e := range []entry{callEntry(2), {Op: opCommit, WS: "w", Commits: []commitRecord{{Muts: []mutation{
		{Mutation: store.DeleteKV("g", []byte("k"))},
		{Mutation: store.PutGadget(store.Gadget{ID: "g"})},
	}}}}, {Op: opEpoch, WS: "w", Node: "n"}, {Op: opDeleteAgent, ID: "a"}} {
		data, err := encodeEntry(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := decodeEntry(data)
		if err != nil {
			return
		}
		again, err := encodeEntry(e)
		if err != nil {
			t.Fatalf("encode a decoded entry: %v", err)
		}
		e2, err := decodeEntry(again)
		if err != nil {
			t.Fatalf("decode a re-encoded entry: %v", err)
		}
		if !reflect.DeepEqual(e, e2) {
			t.Fatalf("re-encoded entry decodes differently:\n%+v\n%+v", e, e2)
		}
	})
}

// BenchmarkEntry measures encoding (on the publishing node) and decoding (on every node) of a
// commit entry of 1 and of 10 gadget calls.
func BenchmarkEntry(b *testing.B) {
	for _, n := range []int{1, 10} {
		e := callEntry(n)
		data, err := encodeEntry(e)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("Encode-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeEntry(e); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("Decode-%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.ReportMetric(float64(len(data)), "bytes")
			for b.Loop() {
				if _, err := decodeEntry(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
