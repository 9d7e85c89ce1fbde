package capnweb

import "sync/atomic"

// byteBudget bounds bytes that many sessions hold at once (see Server.BatchMemory and
// Server.MessageMemory). The zero value refuses nothing until its limit is set.
type byteBudget struct {
	limit int64
	used  atomic.Int64
}

// reserve takes n bytes and reports whether they fit; bytes that did not fit are not taken.
// A nil budget takes everything.
func (b *byteBudget) reserve(n int64) bool {
	if b == nil {
		return true
	}
	if b.used.Add(n) > b.limit {
		b.used.Add(-n)
		return false
	}
	return true
}

// release gives back n reserved bytes.
func (b *byteBudget) release(n int64) {
	if b != nil {
		b.used.Add(-n)
	}
}
