package cluster

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"time"

	"atelier/host/store"
)

// An encoded entry starts with its format byte: a commit entry (the entry of every gadget
// call that writes, which every node decodes) is binary, every other op is a JSON object.
//
// The binary commit entry, after formatCommit (uvarint: unsigned varint; bytes and string:
// a uvarint length and the bytes):
//
//	ws string, epoch uvarint, commits uvarint, then per commit:
//	  chain uvarint, mutations uvarint, then per mutation a tag byte and its fields:
//	    tagSetKV     gadget string, key bytes, value bytes
//	    tagDeleteKV  gadget string, key bytes
//	    tagAudit     seq uvarint, time (unix seconds varint, nanoseconds uvarint),
//	                 actor string, action string, target string, detail string
//	    tagJSON      the mutation as a JSON object (bytes): every other mutation
//
// A mutation gets a binary tag only when its tag's fields say everything it holds (an audit
// time in UTC, no empty but non-nil key or value), so that decoding yields exactly what was
// encoded; an empty key or value decodes as nil.
const (
	formatJSON   = '{'
	formatCommit = 0x01
)

// The tags of mutations in a binary commit entry.
const (
	tagJSON byte = iota
	tagSetKV
	tagDeleteKV
	tagAudit
)

// encodeEntry encodes e for the log.
func encodeEntry(e entry) ([]byte, error) {
	if e.Op == opCommit {
		return encodeCommit(e)
	}
	data, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("encode log entry %s: %w", e.Op, err)
	}
	return data, nil
}

// decodeEntry decodes data and checks that the fields its op needs are there (the log is
// written by this package, but also reachable by whoever holds the cluster secret).
func decodeEntry(data []byte) (entry, error) {
	if len(data) == 0 {
		return entry{}, fmt.Errorf("%w: empty", errMalformed)
	}
	var (
		e   entry
		err error
	)
	switch data[0] {
	case formatCommit:
		e, err = decodeCommit(data[1:])
	case formatJSON:
		if err = json.Unmarshal(data, &e); err == nil && e.Op == opCommit {
			err = fmt.Errorf("a commit entry in JSON")
		}
	default:
		err = fmt.Errorf("unknown format byte %#x", data[0])
	}
	if err != nil {
		return entry{}, fmt.Errorf("%w: %w", errMalformed, err)
	}
	if !e.complete() {
		return entry{}, fmt.Errorf("%w: op %q without its fields", errMalformed, e.Op)
	}
	return e, nil
}

// encodeCommit encodes a commit entry in the binary format.
func encodeCommit(e entry) ([]byte, error) {
	w := encoder{b: make([]byte, 0, 64+len(e.WS))}
	w.b = append(w.b, formatCommit)
	w.string(string(e.WS))
	w.uint(e.Epoch)
	w.uint(uint64(len(e.Commits)))
	for _, c := range e.Commits {
		w.uint(c.Chain)
		w.uint(uint64(len(c.Muts)))
		for _, m := range c.Muts {
			tag := binaryTag(m)
			w.b = append(w.b, tag)
			switch tag {
			case tagSetKV:
				w.string(string(m.Gadget))
				w.bytes(m.Key)
				w.bytes(m.Value)
			case tagDeleteKV:
				w.string(string(m.Gadget))
				w.bytes(m.Key)
			case tagAudit:
				a := m.Audit
				w.uint(a.Seq)
				w.b = binary.AppendVarint(w.b, a.Time.Unix())
				w.uint(uint64(a.Time.Nanosecond()))
				w.string(a.Actor)
				w.string(a.Action)
				w.string(a.Target)
				w.string(a.Detail)
			default:
				data, err := json.Marshal(m)
				if err != nil {
					return nil, fmt.Errorf("encode log entry %s: mutation of kind %d: %w", e.Op, m.Kind, err)
				}
				w.bytes(data)
			}
		}
	}
	return w.b, nil
}

// binaryTag returns the tag m is encoded with: tagJSON unless a binary tag holds all of m.
func binaryTag(m mutation) byte {
	if m.Blob != "" || m.Record != nil || m.Workspace != nil || m.Action != nil || m.Rule != nil || m.Schedule != nil || m.Hook != nil ||
		m.Chat != nil || m.Message != nil || m.Draft != nil ||
		emptyNotNil(m.Key) || emptyNotNil(m.Value) {
		return tagJSON
	}
	switch m.Kind {
	case store.MutSetKV:
		if m.Audit == nil {
			return tagSetKV
		}
	case store.MutDeleteKV:
		if m.Audit == nil && m.Value == nil {
			return tagDeleteKV
		}
	case store.MutAppendAudit:
		if m.Audit != nil && m.Gadget == "" && m.Key == nil && m.Value == nil && m.Audit.Time.Location() == time.UTC {
			return tagAudit
		}
	}
	return tagJSON
}

func emptyNotNil(b []byte) bool { return b != nil && len(b) == 0 }

// maxPrealloc bounds the items allocated for a count before they are read, so that a forged
// count cannot make a small entry allocate much more memory than its items take decoded.
const maxPrealloc = 64

// decodeCommit decodes the binary commit entry data (after its format byte). Keys and values
// share data's memory.
func decodeCommit(data []byte) (entry, error) {
	r := decoder{b: data}
	e := entry{Op: opCommit, WS: store.WorkspaceID(r.string()), Epoch: r.uvarint()}
	n := r.count(2) // a chain and a count per commit
	e.Commits = make([]commitRecord, 0, min(n, maxPrealloc))
	for range n {
		c := commitRecord{Chain: r.uvarint()}
		m := r.count(3) // a tag and two fields per mutation
		c.Muts = make([]mutation, 0, min(m, maxPrealloc))
		for range m {
			c.Muts = append(c.Muts, r.mutation())
		}
		e.Commits = append(e.Commits, c)
	}
	if r.err == nil && len(r.b) > 0 {
		r.err = fmt.Errorf("%d bytes after the commit entry", len(r.b))
	}
	return e, r.err
}

// encoder appends the binary format's fields to b.
type encoder struct{ b []byte }

func (w *encoder) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }

func (w *encoder) bytes(p []byte) {
	w.uint(uint64(len(p)))
	w.b = append(w.b, p...)
}

func (w *encoder) string(s string) {
	w.uint(uint64(len(s)))
	w.b = append(w.b, s...)
}

// decoder reads the binary format's fields from b; after the first error every read returns
// a zero value and err keeps that error.
type decoder struct {
	b   []byte
	err error
	// gadget is the last gadget id read: the mutations of an entry mostly share one.
	gadget store.GadgetID
}

func (r *decoder) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("truncated or bad %s", what)
	}
}

func (r *decoder) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *decoder) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("number")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *decoder) tag() byte {
	if r.err != nil {
		return 0
	}
	if len(r.b) == 0 {
		r.fail("tag")
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

// bytes reads a length and that many bytes, sharing r.b's memory (capped, so that an append
// to them cannot overwrite what follows); empty is nil.
func (r *decoder) bytes() []byte {
	n := r.uvarint()
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)) {
		r.fail("length")
		return nil
	}
	if n == 0 {
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *decoder) string() string { return string(r.bytes()) }

// count reads the number of items that follow, each of at least size bytes: a count the
// remaining bytes cannot hold is an error (so that it allocates no more than the entry's
// size).
func (r *decoder) count(size int) int {
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/size) {
		r.fail("count")
	}
	if r.err != nil {
		return 0
	}
	return int(n)
}

func (r *decoder) gadgetID() store.GadgetID {
	b := r.bytes()
	if string(b) != string(r.gadget) {
		r.gadget = store.GadgetID(b)
	}
	return r.gadget
}

// mutation reads one tagged mutation.
func (r *decoder) mutation() mutation {
	switch tag := r.tag(); tag {
	case tagSetKV:
		return mutation{Mutation: store.Mutation{Kind: store.MutSetKV, Gadget: r.gadgetID(), Key: r.bytes(), Value: r.bytes()}}
	case tagDeleteKV:
		return mutation{Mutation: store.Mutation{Kind: store.MutDeleteKV, Gadget: r.gadgetID(), Key: r.bytes()}}
	case tagAudit:
		a := &store.AuditEntry{Seq: r.uvarint()}
		sec, nsec := r.varint(), r.uvarint()
		if nsec >= uint64(time.Second) {
			r.fail("time")
		}
		a.Time = time.Unix(sec, int64(nsec)).UTC()
		a.Actor, a.Action, a.Target, a.Detail = r.string(), r.string(), r.string(), r.string()
		return mutation{Mutation: store.Mutation{Kind: store.MutAppendAudit, Audit: a}}
	case tagJSON:
		var m mutation
		if data := r.bytes(); r.err == nil {
			if err := json.Unmarshal(data, &m); err != nil {
				r.err = fmt.Errorf("mutation: %w", err)
			}
		}
		return m
	default:
		if r.err == nil {
			r.err = fmt.Errorf("unknown mutation tag %d", tag)
		}
		return mutation{}
	}
}
