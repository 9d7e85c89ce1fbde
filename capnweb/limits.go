package capnweb

// Limits bounds what one peer may make this side hold or parse. Exceeding a limit aborts the
// session with a protocol error, except MaxPendingCalls, which rejects the excess call, and
// MaxQueuedBytes, which ends the session.
type Limits struct {
	// MaxMessageSize is the largest accepted message in bytes.
	MaxMessageSize int
	// MaxDepth is the deepest accepted JSON nesting of one message.
	MaxDepth int
	// MaxBigIntDigits is the longest accepted ["bigint", ...] decimal string.
	MaxBigIntDigits int
	// MaxExports is the most entries the peer may make this side hold in its export table
	// (unreleased push results plus capabilities this side passed out).
	MaxExports int
	// MaxImports is the most capabilities and promises the peer may pass to this side that are
	// still held.
	MaxImports int
	// MaxPendingCalls is the most pushed calls from the peer that may be running at once.
	MaxPendingCalls int
	// MaxQueuedBytes is the most bytes of messages to the peer that may wait to be written: a
	// peer that keeps calling without reading the answers would otherwise make this side hold
	// them until the write deadline. One message larger than the limit may still wait alone.
	// A stream sends up to 64 chunks ahead of its reader: to a slow reader, chunks larger
	// than MaxQueuedBytes/64 may reach it.
	MaxQueuedBytes int
}

// DefaultLimits returns the limits used when Options.Limits is left zero.
func DefaultLimits() Limits {
	return Limits{
		MaxMessageSize:  16 << 20,
		MaxDepth:        256,
		MaxBigIntDigits: 16384,
		MaxExports:      10000,
		MaxImports:      10000,
		MaxPendingCalls: 1000,
		MaxQueuedBytes:  32 << 20,
	}
}

// withDefaults fills every zero field from DefaultLimits.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.MaxMessageSize <= 0 {
		l.MaxMessageSize = d.MaxMessageSize
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxBigIntDigits <= 0 {
		l.MaxBigIntDigits = d.MaxBigIntDigits
	}
	if l.MaxExports <= 0 {
		l.MaxExports = d.MaxExports
	}
	if l.MaxImports <= 0 {
		l.MaxImports = d.MaxImports
	}
	if l.MaxPendingCalls <= 0 {
		l.MaxPendingCalls = d.MaxPendingCalls
	}
	if l.MaxQueuedBytes <= 0 {
		l.MaxQueuedBytes = d.MaxQueuedBytes
	}
	return l
}
