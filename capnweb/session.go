package capnweb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	"atelier/internal/membudget"
)

// Options configures a session.
type Options struct {
	// Main is the local main object, exported as id 0 (a target, see the package documentation).
	// Nil means calls to it fail with "This connection has no main object.". When the session
	// ends, Main is disposed like every other export.
	Main any
	// Limits bounds what the peer may make this side hold; zero fields take DefaultLimits.
	Limits Limits
	// Context is the parent of every handler context (cancelled when the session ends).
	Context context.Context
	// Peer describes the remote side; handlers see it through SessionFrom(ctx).Peer().
	Peer PeerInfo
	// OnSendError, if set, may rewrite (e.g. redact) every error before it is sent to the peer.
	OnSendError func(error) error
	// Logger receives handler panics; nil uses slog.Default().
	Logger *slog.Logger
	// KeepAlive is the WebSocket ping interval (0 means 30s, negative disables pings). A peer
	// that answers nothing for two intervals is dropped.
	KeepAlive time.Duration
}

// PeerInfo describes the remote end of a session.
type PeerInfo struct {
	// Transport is "websocket", "http-batch" or "pipe" (or a custom transport's name).
	Transport string
	// RemoteAddr is the network address of the peer, when known.
	RemoteAddr string
	// Host is the Host of the HTTP request the session came in on, when known.
	Host string
	// Header holds the HTTP request headers of the upgrade or batch request, when known.
	Header http.Header
}

// Stats reports the size of a session's tables.
type Stats struct {
	// Exports counts export table entries (main, push results, capabilities passed out).
	Exports int
	// Imports counts import table entries (peer main, own pushes, capabilities received).
	Imports int
	// Targets counts distinct local Go targets referenced by the session.
	Targets int
	// PendingCalls counts local calls queued or running for the peer.
	PendingCalls int
}

// Session is one Cap'n Web connection between two peers. A single goroutine reads messages and
// starts work in arrival order; handlers run on pooled goroutines, not on the reader, except
// those of Inline targets. Writes are made by one goroutine at a time, taking every queued
// message: the writer goroutine, a handler goroutine sending its call's result (which saves a
// hand-over per call), or a server WebSocket's read loop right before it waits for the peer,
// without waiting itself (see readLoop).
type Session struct {
	tr     Transport
	opts   Options
	lim    Limits
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc

	mu             sync.Mutex
	exports        map[int64]*exportEntry
	imports        map[int64]*importEntry
	targets        map[any]*localTarget
	nextExport     int64 // last negative export id allocated
	nextImport     int64 // last positive id allocated for our own pushes
	nextSlot       int64 // last positive slot taken by a push from the peer
	pending        int   // local calls queued or running for the peer
	obligations    int   // pulled results and own promises not answered yet
	drained        chan struct{}
	inputEnded     error
	pullEagerly    bool       // pull every push at once (HTTP batch client)
	draining       bool       // Drain began: the peer's new calls are refused
	parser         jsonParser // used by the goroutine that handles incoming messages
	closed         bool
	overflowed     bool // a message was dropped for Limits.MaxQueuedBytes; the session is ending
	err            error
	outq           [][]byte          // messages waiting to be written (nil: flush marker)
	queued         int               // bytes in outq (bounded by lim.MaxQueuedBytes)
	answers        *membudget.Share  // a batch's answers count here too (Server.BatchMemory); nil: none
	answersHeld    int64             // bytes of answers reserved in answers
	answersRefused membudget.Refusal // why an answer did not fit in answers (the batch fails)
	spare          [][]byte          // the previous queue, reused by the writer
	writing        bool              // a goroutine holds the writer role (see writeQueued)
	unflushed      bool              // the read loop left part of a write to the writer goroutine
	direct         bool              // other goroutines than the writer may write (see releaseFlush)
	watched        bool              // the read loop writes before it waits (see readLoop)
	readerBusy     bool              // a watched read loop is working, not waiting for the peer
	inlineQ        []*callQueue      // queues of Inline targets the read loop runs after its message
	holds          int               // flush holds (see holdFlush)
	wake           chan struct{}     // wakes the writer goroutine
	broken         map[int]func(error)
	nextBroken     int
	done           chan struct{}
	wg             sync.WaitGroup
}

// exportEntry is one row of the export table.
type exportEntry struct {
	hook     hook
	refs     int64
	promise  bool // the entry is a result the peer may pull (or one we resolve unasked)
	pulled   bool
	answered bool
	pipe     *pipeSink // set for a pipe the peer created
}

// importEntry is one row of the import table.
type importEntry struct {
	id             int64
	intro          int64 // introductions, sent back in the release
	local          int64 // local references (hooks)
	inflight       int64 // messages being built that name this id
	promise        bool
	implicit       bool // a stream message's result: answered unasked, never released
	needPull       bool // false for ["promise", id]: the peer resolves it unasked
	pullSent       bool
	resolvedRemote bool // resolve/reject received
	releaseSent    bool
	settled        bool
	// delivering is set while settleImport runs the waiters: a waiter added meanwhile queues
	// behind them, so calls on the promise keep their order (E-order) across its settling.
	delivering bool
	val        any
	err        error
	waiters    []func(any, error)
}

type sessionKey struct{}

// SessionFrom returns the session a handler context belongs to, or nil.
func SessionFrom(ctx context.Context) *Session {
	s, _ := ctx.Value(sessionKey{}).(*Session)
	return s
}

// NewSession starts a session over tr. The session owns tr and closes it when it ends.
func NewSession(tr Transport, opts Options) *Session {
	s := newSession(tr, opts)
	s.start()
	return s
}

// start starts the session's read and write loops.
func (s *Session) start() {
	s.wg.Add(2)
	go s.readLoop()
	go s.writeLoop()
}

// newSession builds a session without starting its loops.
func newSession(tr Transport, opts Options) *Session {
	parent := opts.Context
	if parent == nil {
		parent = context.Background()
	}
	s := &Session{
		tr:      tr,
		opts:    opts,
		lim:     opts.Limits.withDefaults(),
		log:     opts.Logger,
		exports: map[int64]*exportEntry{},
		imports: map[int64]*importEntry{0: {id: 0, local: 1}},
		targets: map[any]*localTarget{},
		wake:    make(chan struct{}, 1),
		broken:  map[int]func(error){},
		done:    make(chan struct{}),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.parser.maxDepth = s.lim.MaxDepth
	// A batching transport sends its request on Flush, which stays on the writer goroutine.
	_, batching := tr.(flusher)
	s.direct = tr != nil && !batching
	s.ctx, s.cancel = context.WithCancel(context.WithValue(parent, sessionKey{}, s))
	var mainHook hook = errorHook{&Error{Name: "Error", Message: "This connection has no main object."}}
	if opts.Main != nil {
		lt, err := newLocalTarget(s, opts.Main)
		if err != nil {
			mainHook = errorHook{err}
		} else {
			mainHook = &targetHook{lt: lt}
		}
	}
	s.exports[0] = &exportEntry{hook: mainHook, refs: 1}
	return s
}

// Main returns a stub for the peer's main object. Dispose it when done; that does not end the
// session (Close does).
func (s *Session) Main() *Stub {
	s.mu.Lock()
	e := s.imports[0]
	e.local++
	s.mu.Unlock()
	return &Stub{h: &importHook{s: s, e: e}}
}

// Peer describes the remote side.
func (s *Session) Peer() PeerInfo { return s.opts.Peer }

// Done is closed when the session has ended.
func (s *Session) Done() <-chan struct{} { return s.done }

// Err returns why the session ended, or nil while it runs.
func (s *Session) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Close ends the session without sending an abort and waits for its reader and writer to stop.
// Pending calls fail; every export is disposed.
func (s *Session) Close() error {
	s.closeWith(errClosedLocally)
	return nil
}

// errClosedLocally is why a session ended by Close ended.
var errClosedLocally = &Error{Name: "Error", Message: "RPC session was shut down by disposing the main stub"}

// closeWith ends the session with reason (no abort is sent) and waits for its reader and
// writer to stop.
func (s *Session) closeWith(reason error) {
	s.shutdown(reason, false)
	s.wg.Wait()
}

// Stats returns the current table sizes.
func (s *Session) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	imports := len(s.imports)
	if _, ok := s.imports[0]; ok {
		imports-- // the peer's main is always there
	}
	return Stats{Exports: len(s.exports), Imports: imports, Targets: len(s.targets), PendingCalls: s.pending}
}

// onBroken registers fn to run when the session ends.
func (s *Session) onBroken(fn func(error)) func() {
	s.mu.Lock()
	if s.closed {
		err := s.err
		s.mu.Unlock()
		fn(err)
		return func() {}
	}
	s.nextBroken++
	id := s.nextBroken
	s.broken[id] = fn
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.broken, id)
		s.mu.Unlock()
	}
}

// flusher is implemented by transports that hold messages back until told to send them.
type flusher interface{ Flush() }

// flush asks a batching transport to send what has been queued so far: a nil marker in the
// queue makes the writer call Flush after writing the messages before it.
func (s *Session) flush() {
	if _, ok := s.tr.(flusher); ok {
		s.mu.Lock()
		s.sendLocked(nil)
		s.mu.Unlock()
	}
}

// readWatcher is implemented by transports that can tell when their reader is about to wait
// for the peer (a server's TCP WebSocket).
type readWatcher interface {
	// watchReads arranges for idle to run when a ReadMessage is about to wait for the peer and
	// busy when the wait is over, and reports whether it can.
	watchReads(idle, busy func()) bool
}

// waitlessWriter is implemented by transports that can write without waiting for the peer.
type waitlessWriter interface {
	// tryWriteMessages writes what the connection takes at once and keeps the rest for the
	// next write. taken is false when it could not start (another write is in progress);
	// complete is false when something is left.
	tryWriteMessages(msgs [][]byte) (taken, complete bool, err error)
	// flushPending writes what tryWriteMessages left, waiting for the peer as needed.
	flushPending() error
}

// readerFlushBatch is how many messages may wait for the read loop's next flush: a peer that
// keeps the socket full gets its answers at least this often.
const readerFlushBatch = 128

// readLoop reads and handles messages. When the transport tells it when it is about to wait
// for the peer (readWatcher) and can write without waiting (waitlessWriter), the read loop holds
// a flush hold while it works and, before each wait, writes everything queued meanwhile without
// waiting itself: the answers to a burst of messages leave in one write, from the goroutine that
// is running anyway, and the writer goroutine is woken only when the socket is full.
func (s *Session) readLoop() {
	defer s.wg.Done()
	_, canWrite := s.tr.(waitlessWriter)
	rw, _ := s.tr.(readWatcher)
	if s.direct && canWrite && rw != nil && rw.watchReads(s.readerIdle, s.readerWorks) {
		s.watched = true
		s.readerWorks()
	}
	s.readMessages()
}

// readMessages is the read loop proper. It returns when the session ends, or when a call it
// runs (of an Inline target) hands the reading over to a new goroutine (handOverReading).
func (s *Session) readMessages() {
	var spare []*callQueue // the previous inlineQ, reused
	for {
		data, err := s.tr.ReadMessage()
		if err != nil {
			var pe *protocolError
			if errors.As(err, &pe) {
				s.shutdown(pe, true)
			} else {
				s.shutdown(&Error{Name: "Error", Message: err.Error()}, false)
			}
			s.stopReading()
			return
		}
		if err := s.handleMessage(data); err != nil {
			s.shutdown(err, true)
			s.stopReading()
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			s.stopReading()
			return
		}
		runs := s.inlineQ
		s.inlineQ, spare = spare[:0], nil
		if s.watched && len(s.outq) >= readerFlushBatch {
			s.holds--
			s.writeWaitlessLocked()
			s.holdFlush()
		} else {
			s.mu.Unlock()
		}
		for i, q := range runs {
			if !q.runOn(s) {
				for _, rest := range runs[i+1:] {
					goWork(rest.run)
				}
				return
			}
		}
		clear(runs)
		spare = runs
	}
}

// queueInline queues q, the call queue of an Inline target, to run on the read loop after the
// message it handles, and reports whether it could (the read loop is working, not waiting).
func (s *Session) queueInline(q *callQueue) bool {
	s.mu.Lock()
	ok := s.readerBusy && !s.closed
	if ok {
		s.inlineQ = append(s.inlineQ, q)
	}
	s.mu.Unlock()
	return ok
}

// handOverReading starts a new goroutine that goes on reading, for a call of an Inline target
// on the read loop that is about to wait. The read loop's state (its flush hold, the queues to
// run inline) passes to the new goroutine.
func (s *Session) handOverReading() {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.readMessages()
	}()
}

// readerWorks runs when a watched read loop starts working: until readerIdle, it holds a flush
// hold and may run calls of Inline targets.
func (s *Session) readerWorks() {
	s.mu.Lock()
	s.holds++
	s.readerBusy = true
	s.mu.Unlock()
}

// readerIdle runs when the read loop is about to wait for the peer: it ends the read loop's
// flush hold, writes what is queued and hands the inline queues left to pooled goroutines.
func (s *Session) readerIdle() {
	s.mu.Lock()
	s.holds--
	s.readerBusy = false
	runs := s.takeInlineLocked()
	s.writeWaitlessLocked()
	for _, q := range runs {
		goWork(q.run)
	}
}

// readReleaser is implemented by transports that hold something for the last message read
// until the next read (wsTransport: its share of Server.MessageMemory).
type readReleaser interface{ releaseRead() }

// stopReading releases what the read loop holds when it ends: the transport's hold on the
// last message, and a watched read loop's flush hold and inline queues.
func (s *Session) stopReading() {
	if rr, ok := s.tr.(readReleaser); ok {
		rr.releaseRead()
	}
	if !s.watched {
		return
	}
	s.mu.Lock()
	s.readerBusy = false
	runs := s.takeInlineLocked()
	s.mu.Unlock()
	for _, q := range runs {
		goWork(q.run)
	}
	s.releaseFlush(false)
}

// takeInlineLocked empties the inline queue and returns what it held; s.mu must be held.
func (s *Session) takeInlineLocked() []*callQueue {
	if len(s.inlineQ) == 0 {
		return nil
	}
	runs := s.inlineQ
	s.inlineQ = nil
	return runs
}

// writeWaitlessLocked writes the queue without waiting for the peer, unless a flush hold or a
// writer will; s.mu must be held and is unlocked. What the socket does not take at once, and
// what was queued meanwhile, is left to the writer goroutine, so that a stalled peer never
// stops the read loop.
func (s *Session) writeWaitlessLocked() {
	if s.holds > 0 || s.writing || len(s.outq) == 0 || s.closed {
		s.mu.Unlock()
		return
	}
	q, queued := s.outq, s.queued
	s.outq, s.spare, s.queued = s.spare[:0], nil, 0
	s.writing = true
	s.mu.Unlock()
	taken, complete, err := s.tr.(waitlessWriter).tryWriteMessages(q)
	s.mu.Lock()
	s.writing = false
	if taken {
		clear(q)
		s.spare = q[:0]
		s.unflushed = !complete
	} else {
		s.outq = append(q, s.outq...)
		s.queued += queued
	}
	if !complete || len(s.outq) > 0 {
		s.wakeWriterLocked()
	}
	s.mu.Unlock()
	if err != nil {
		s.shutdown(&Error{Name: "Error", Message: err.Error()}, false)
	}
}

// writeLoop is the writer goroutine: it writes queued messages whenever no other goroutine holds
// the writer role, and closes the transport once the session has ended and the queue is empty.
func (s *Session) writeLoop() {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		for s.writing || (len(s.outq) == 0 && !s.unflushed && !s.closed) {
			s.mu.Unlock()
			<-s.wake
			s.mu.Lock()
		}
		if len(s.outq) == 0 && !s.unflushed {
			reason := s.err
			s.mu.Unlock()
			_ = s.tr.Close(reason)
			return
		}
		s.writing = true
		unflushed := s.unflushed
		s.unflushed = false
		s.mu.Unlock()
		if unflushed {
			if err := s.tr.(waitlessWriter).flushPending(); err != nil {
				s.shutdown(&Error{Name: "Error", Message: err.Error()}, false)
			}
		}
		s.writeQueued()
	}
}

// writeQueued writes queued messages until the queue is empty, then gives up the writer role,
// which the caller must hold. One goroutine at a time holds the role and takes the whole queue
// each round, so messages keep their order and a burst goes out in one transport write.
func (s *Session) writeQueued() {
	for {
		s.mu.Lock()
		q := s.outq
		if len(q) == 0 {
			s.writing = false
			if s.closed {
				s.wakeWriterLocked() // to close the transport
			}
			s.mu.Unlock()
			return
		}
		s.outq, s.spare, s.queued = s.spare[:0], nil, 0
		s.mu.Unlock()
		err := s.writeBatch(q)
		clear(q)
		if err != nil {
			s.shutdown(&Error{Name: "Error", Message: err.Error()}, false)
			s.mu.Lock()
			s.outq, s.queued = nil, 0
			s.writing = false
			s.wakeWriterLocked()
			s.mu.Unlock()
			return
		}
		s.mu.Lock()
		s.spare = q[:0]
		s.mu.Unlock()
	}
}

// batchWriter is implemented by transports that send several messages with one write.
type batchWriter interface {
	writeMessages(msgs [][]byte) error
}

// writeBatch writes messages in order; a nil entry makes a flusher transport send what came
// before it.
func (s *Session) writeBatch(q [][]byte) error {
	for len(q) > 0 {
		n := 0
		for n < len(q) && q[n] != nil {
			n++
		}
		if n > 0 {
			if bw, ok := s.tr.(batchWriter); ok {
				if err := bw.writeMessages(q[:n]); err != nil {
					return err
				}
			} else {
				for _, m := range q[:n] {
					if err := s.tr.WriteMessage(m); err != nil {
						return err
					}
				}
			}
		}
		if n == len(q) {
			break
		}
		s.tr.(flusher).Flush()
		q = q[n+1:]
	}
	return nil
}

// sendLocked queues a message; s.mu must be held. The writer goroutine is woken unless a
// writer or a flush hold will take care of the message. A message that would take the queue
// past Limits.MaxQueuedBytes is dropped and ends the session: the peer is not reading.
func (s *Session) sendLocked(msg []byte) {
	if s.closed || s.overflowed {
		return
	}
	if s.queued > 0 && s.queued+len(msg) > s.lim.MaxQueuedBytes {
		s.overflowed = true
		err := &Error{Name: "Error", Message: fmt.Sprintf("the peer is not reading: more than %d bytes of messages to it are waiting to be written", s.lim.MaxQueuedBytes)}
		s.log.Warn("Cap'n Web session ended: its peer does not read", "queued", s.queued, "limit", s.lim.MaxQueuedBytes, "peer", s.opts.Peer.RemoteAddr)
		go s.shutdown(err, true) // takes s.mu, held here
		return
	}
	if refused := s.answers.Reserve(int64(len(msg))); refused != membudget.Fits {
		s.overflowed, s.answersRefused = true, refused
		go s.shutdown(errBatchAnswers, true) // takes s.mu, held here
		return
	}
	s.answersHeld += int64(len(msg))
	s.outq = append(s.outq, msg)
	s.queued += len(msg)
	if !s.writing && s.holds == 0 {
		s.wakeWriterLocked()
	}
}

func (s *Session) wakeWriterLocked() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// holdFlush defers writing what is queued until the matching releaseFlush, so that the messages
// produced by one short burst of work (a call's completion and the resolutions it triggers)
// leave together. The code between must not block.
func (s *Session) holdFlush() {
	s.mu.Lock()
	s.holds++
	s.mu.Unlock()
}

// releaseFlush ends a hold. When the last hold ends and nobody is writing, the queue is written
// by the caller itself if direct (saving a hand-over to the writer goroutine), else by the
// writer goroutine. Only goroutines other than the read loop may write directly, so that a
// stalled peer never stops the session from reading.
func (s *Session) releaseFlush(direct bool) {
	s.mu.Lock()
	s.holds--
	if s.holds > 0 || s.writing || len(s.outq) == 0 || s.tr == nil {
		s.mu.Unlock()
		return
	}
	if !direct || !s.direct || s.closed {
		s.wakeWriterLocked()
		s.mu.Unlock()
		return
	}
	s.writing = true
	s.mu.Unlock()
	s.writeQueued()
}

// shutdown ends the session: pending imports fail with err, exports are disposed, broken
// callbacks run. With abort, an abort message is sent first.
func (s *Session) shutdown(err error, abort bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	if abort {
		we := toWireError(err)
		if b, encErr := encodeError([]byte(`["abort",`), we, nil, s.lim.MaxDepth); encErr == nil {
			s.outq = append(s.outq, append(b, ']'))
		}
	}
	s.closed, s.err = true, err
	exports, imports, broken := s.exports, s.imports, s.broken
	s.exports, s.imports, s.broken = map[int64]*exportEntry{}, map[int64]*importEntry{}, nil
	var waiters []func(any, error)
	for _, e := range imports {
		if !e.settled {
			e.settled, e.err = true, err
			waiters = append(waiters, e.waiters...)
			e.waiters = nil
		}
	}
	s.obligations = 0
	if s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
	s.wakeWriterLocked()
	s.mu.Unlock()
	s.cancel()
	for _, w := range waiters {
		w(nil, err)
	}
	for _, e := range exports {
		if e.hook != nil {
			e.hook.dispose()
		}
	}
	for _, fn := range broken {
		fn(err)
	}
	close(s.done)
}

// handleMessage processes one incoming message; a returned error is a protocol violation.
func (s *Session) handleMessage(data []byte) error {
	msg, err := s.parser.parseList(data, s.lim.MaxMessageSize)
	if err != nil {
		return err
	}
	if len(msg) == 0 {
		return badMessage("%s", truncate(data))
	}
	tag, _ := msg[0].(string)
	switch {
	case tag == "push" && len(msg) == 2:
		return s.handlePush(msg[1])
	case tag == "pull" && len(msg) == 2:
		id, err := idArg(msg[1])
		if err != nil {
			return err
		}
		return s.handlePull(id)
	case (tag == "resolve" || tag == "reject") && len(msg) == 3:
		id, err := idArg(msg[1])
		if err != nil {
			return err
		}
		return s.handleResolve(id, msg[2], tag == "reject")
	case tag == "release" && len(msg) == 3:
		id, err := idArg(msg[1])
		if err != nil {
			return err
		}
		count, err := idArg(msg[2])
		if err != nil || count <= 0 {
			return badMessage("bad release count %v", msg[2])
		}
		return s.handleRelease(id, count)
	case tag == "abort" && len(msg) >= 2:
		v, err := decodeValue(msg[1], s.lim)
		if err != nil {
			v = &Error{Name: "Error", Message: "peer aborted the session"}
		}
		s.shutdown(rejection(v), false)
		return nil
	case tag == "stream" && len(msg) == 2:
		return s.handleStream(msg[1])
	case tag == "pipe" && len(msg) == 1:
		return s.handlePipe()
	}
	return badMessage("%s", truncate(data))
}

// truncate shortens a message for an error text.
func truncate(data []byte) string {
	if len(data) > 100 {
		return string(data[:100]) + "..."
	}
	return string(data)
}

func (s *Session) decoder() *decoder { return &decoder{lim: s.lim, caps: s} }

func (s *Session) handlePush(expr any) error {
	s.mu.Lock()
	draining := s.draining
	s.mu.Unlock()
	if draining {
		// Nothing of expr is evaluated: no call starts. The capabilities it may introduce are
		// not counted; the session ends soon anyway.
		return s.addPushResult(errorHook{errDraining})
	}
	v, err := s.decoder().value(expr)
	if err != nil {
		return err
	}
	var h hook
	if p, ok := v.(*Promise); ok {
		if h, err = p.materialize(); err != nil {
			h = errorHook{err}
		}
	} else {
		ph := newPromiseHook(s)
		ph.resolveWith(v, nil)
		h = ph
	}
	return s.addPushResult(h)
}

// addPushResult adds the result of the peer's push to the export table under the next slot.
func (s *Session) addPushResult(h hook) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		h.dispose()
		return nil
	}
	if len(s.exports) >= s.lim.MaxExports {
		s.mu.Unlock()
		h.dispose()
		return badMessage("export table is full (%d entries)", s.lim.MaxExports)
	}
	s.nextSlot++
	s.exports[s.nextSlot] = &exportEntry{hook: h, refs: 1, promise: true}
	s.mu.Unlock()
	return nil
}

func (s *Session) handlePull(id int64) error {
	s.mu.Lock()
	e := s.exports[id]
	if e == nil {
		s.mu.Unlock()
		return badMessage("pull of unknown export id %d", id)
	}
	if e.pulled {
		s.mu.Unlock()
		return nil
	}
	e.pulled = true
	s.obligations++
	s.mu.Unlock()
	if !e.promise {
		s.sendResolution(id, e, nil, TypeError("export %d is not a promise", id))
		return nil
	}
	if ph, ok := e.hook.(*promiseHook); ok {
		if done, v, err := ph.outcome(); done { // without a func value for whenSettled
			s.sendResolution(id, e, v, err)
			return nil
		}
	}
	e.hook.whenSettled(func(v any, err error) { s.sendResolution(id, e, v, err) })
	return nil
}

// sendResolution answers a pulled export (or one of our own promise exports); v is borrowed.
func (s *Session) sendResolution(id int64, e *exportEntry, v any, err error) {
	s.mu.Lock()
	if s.closed || e.answered {
		s.mu.Unlock()
		return
	}
	e.answered = true
	s.mu.Unlock()
	enc := &encState{s: s}
	var msg []byte
	if err == nil {
		msg = append(strconv.AppendInt(newMessage(`["resolve",`), id, 10), ',')
		if msg, err = encodeValue(msg, v, enc, s.lim.MaxDepth); err == nil {
			msg = append(msg, ']')
		}
	}
	if err != nil {
		msg = s.rejectMessage(id, err, enc)
	}
	s.mu.Lock()
	s.sendLocked(msg)
	enc.unpinLocked()
	s.obligationDoneLocked()
	s.mu.Unlock()
	enc.sent()
}

// rejectMessage builds ["reject", id, error].
func (s *Session) rejectMessage(id int64, err error, enc *encState) []byte {
	if s.opts.OnSendError != nil {
		if rewritten := s.opts.OnSendError(err); rewritten != nil {
			err = rewritten
		}
	}
	prefix := append(strconv.AppendInt(newMessage(`["reject",`), id, 10), ',')
	we, encErr := canonError(s, toWireError(err), 0)
	var msg []byte
	if encErr == nil {
		msg, encErr = encodeError(prefix, we.(*Error), enc, s.lim.MaxDepth)
	}
	if encErr != nil {
		msg, _ = encodeError(prefix, &Error{Name: "Error", Message: toWireError(err).Message}, nil, s.lim.MaxDepth)
	}
	return append(msg, ']')
}

func (s *Session) obligationDoneLocked() {
	s.obligations--
	if s.obligations <= 0 && s.drained != nil {
		close(s.drained)
		s.drained = nil
	}
}

// waitDrained waits until every pulled result and own promise has been answered.
func (s *Session) waitDrained(ctx context.Context) error {
	for {
		s.mu.Lock()
		if s.obligations <= 0 || s.closed {
			s.mu.Unlock()
			return nil
		}
		if s.drained == nil {
			s.drained = make(chan struct{})
		}
		ch := s.drained
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// endInput records that the peer will send nothing more (end of an HTTP batch): promises that
// wait for the peer fail with err from now on.
func (s *Session) endInput(err error) {
	s.mu.Lock()
	s.inputEnded = err
	var waiters []func(any, error)
	for _, e := range s.imports {
		if e.promise && !e.resolvedRemote && !e.settled {
			e.settled, e.err = true, err
			waiters = append(waiters, e.waiters...)
			e.waiters = nil
		}
	}
	s.mu.Unlock()
	for _, w := range waiters {
		w(nil, err)
	}
}

func (s *Session) handleResolve(id int64, expr any, isReject bool) error {
	s.mu.Lock()
	e := s.imports[id]
	if e == nil || !e.promise || e.resolvedRemote {
		s.mu.Unlock()
		v, err := s.decoder().value(expr)
		if err != nil {
			return err
		}
		disposeValue(v)
		return nil
	}
	e.resolvedRemote = true
	s.maybeReleaseLocked(e)
	s.mu.Unlock()
	v, err := s.decoder().value(expr)
	if err != nil {
		return err
	}
	if isReject {
		s.settleImport(e, nil, rejection(v))
		return nil
	}
	awaitAll(v, func(v any, err error) { s.settleImport(e, v, err) })
	return nil
}

func (s *Session) settleImport(e *importEntry, v any, err error) {
	s.mu.Lock()
	if e.settled {
		s.mu.Unlock()
		disposeValue(v)
		return
	}
	e.settled, e.val, e.err = true, v, err
	dead := e.local <= 0
	if dead {
		e.val = nil
	}
	deliver(&s.mu, &e.waiters, &e.delivering, v, err)
	s.mu.Unlock()
	if dead {
		disposeValue(v)
	}
}

func (s *Session) handleRelease(id, count int64) error {
	s.mu.Lock()
	e := s.exports[id]
	if e == nil {
		s.mu.Unlock()
		return badMessage("release of unknown export id %d", id)
	}
	if count > e.refs {
		s.mu.Unlock()
		return badMessage("release of %d references to export %d, which has %d", count, id, e.refs)
	}
	e.refs -= count
	if e.refs > 0 {
		s.mu.Unlock()
		return nil
	}
	delete(s.exports, id)
	if e.pulled && !e.answered {
		e.answered = true
		s.obligationDoneLocked()
	}
	s.mu.Unlock()
	e.hook.dispose()
	return nil
}

// maybeReleaseLocked sends the release for an import once nothing needs its id any more.
func (s *Session) maybeReleaseLocked(e *importEntry) {
	if e.implicit {
		if e.resolvedRemote && s.imports[e.id] == e {
			delete(s.imports, e.id)
		}
		return
	}
	if e.releaseSent || e.id == 0 || e.inflight > 0 {
		return
	}
	if e.local > 0 && !e.resolvedRemote {
		return
	}
	e.releaseSent = true
	if s.imports[e.id] == e {
		delete(s.imports, e.id)
	}
	msg := strconv.AppendInt(newMessage(`["release",`), e.id, 10)
	msg = append(strconv.AppendInt(append(msg, ','), e.intro, 10), ']')
	s.sendLocked(msg)
}

// decodeExport implements capDecoder: ["export", id] from the peer.
func (s *Session) decodeExport(id int64) (any, error) {
	if id >= 0 {
		return nil, badMessage("export id %d must be negative", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.imports[id]
	switch {
	case s.closed:
		return nil, s.err
	case e != nil && e.promise:
		return nil, badMessage("export id %d is already a promise", id)
	case e != nil:
		e.intro++
		e.local++
	case len(s.imports) > s.lim.MaxImports:
		return nil, badMessage("import table is full (%d entries)", s.lim.MaxImports)
	default:
		e = &importEntry{id: id, intro: 1, local: 1}
		s.imports[id] = e
	}
	return &Stub{h: &importHook{s: s, e: e}}, nil
}

// decodePromise implements capDecoder: ["promise", id] from the peer.
func (s *Session) decodePromise(id int64) (any, error) {
	if id >= 0 {
		return nil, badMessage("promise id %d must be negative", id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, s.err
	}
	if s.imports[id] != nil {
		return nil, badMessage("promise id %d is already in use", id)
	}
	if len(s.imports) > s.lim.MaxImports {
		return nil, badMessage("import table is full (%d entries)", s.lim.MaxImports)
	}
	e := &importEntry{id: id, intro: 1, local: 1, promise: true}
	s.imports[id] = e
	return &Promise{h: &importHook{s: s, e: e}}, nil
}

// decodeRef implements capDecoder: ["import"|"pipeline", id, path?, args?] naming our export id.
func (s *Session) decodeRef(asStub bool, id int64, path []any, args []any, hasArgs bool) (any, error) {
	s.mu.Lock()
	e := s.exports[id]
	s.mu.Unlock()
	if e == nil {
		disposeList(args)
		return nil, badMessage("reference to unknown export id %d", id)
	}
	h := e.hook
	switch {
	case hasArgs && asStub:
		return &Stub{h: h.call(path, args, true)}, nil
	case hasArgs:
		return &Promise{h: h.call(path, args, true)}, nil
	case asStub && len(path) == 0:
		return &Stub{h: h.dup()}, nil
	case asStub:
		return &Stub{h: h.call(path, nil, false)}, nil
	}
	return &Promise{h: h.dup(), path: path}, nil
}

// encState implements capEncoder for one outgoing message.
type encState struct {
	s     *Session
	pins  []*importEntry // promise imports named in the message, kept unreleased until it is sent
	after []func()       // work that must follow the message (answering promises it introduces)
}

func (enc *encState) encodeStub(b []byte, st *Stub) ([]byte, error) {
	h, err := st.hook()
	if err != nil {
		return nil, err
	}
	if ih, ok := h.(*importHook); ok && ih.s == enc.s {
		if b, ok := enc.pipelineRef(b, ih.e, nil, true); ok {
			return b, nil
		}
	}
	return enc.export(b, h.dup(), false)
}

func (enc *encState) encodeMapRef([]byte, MapRef) ([]byte, error) {
	return nil, TypeError("MapRef used outside its map function")
}

func (enc *encState) encodePromise(b []byte, p *Promise) ([]byte, error) {
	h, path, err := p.state()
	if err != nil {
		return nil, err
	}
	if ih, ok := h.(*importHook); ok && ih.s == enc.s {
		if b, ok := enc.pipelineRef(b, ih.e, path, false); ok {
			return b, nil
		}
	}
	mh, err := p.materialize()
	if err != nil {
		return nil, err
	}
	return enc.export(b, mh.dup(), true)
}

// pipelineRef writes a reference to one of the peer's own exports, if the id is still usable.
func (enc *encState) pipelineRef(b []byte, e *importEntry, path []any, asStub bool) ([]byte, bool) {
	s := enc.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || e.releaseSent || (e.promise && e.resolvedRemote) {
		return nil, false
	}
	if e.promise {
		e.inflight++
		enc.pins = append(enc.pins, e)
	}
	tag := `["pipeline",`
	if asStub && !e.promise {
		tag = `["import",`
	}
	b = strconv.AppendInt(append(b, tag...), e.id, 10)
	if len(path) > 0 {
		b, _ = appendRaw(append(b, ','), path)
	}
	return append(b, ']'), true
}

// export adds h (owned) to the export table under a fresh negative id, written as
// ["export", id] or, for a promise, ["promise", id].
func (enc *encState) export(b []byte, h hook, promise bool) ([]byte, error) {
	if promise {
		return enc.exportAs(b, h, `["promise",`)
	}
	return enc.exportAs(b, h, `["export",`)
}

// exportAs adds h (owned) to the export table under a fresh negative id written after tag.
func (enc *encState) exportAs(b []byte, h hook, tag string) ([]byte, error) {
	promise := tag == `["promise",`
	s := enc.s
	s.mu.Lock()
	if s.closed {
		err := s.err
		s.mu.Unlock()
		h.dispose()
		return nil, err
	}
	if len(s.exports) >= s.lim.MaxExports {
		s.mu.Unlock()
		h.dispose()
		return nil, RangeError("export table is full (%d entries)", s.lim.MaxExports)
	}
	s.nextExport--
	id := s.nextExport
	e := &exportEntry{hook: h, refs: 1, promise: promise}
	s.exports[id] = e
	if promise {
		e.pulled = true
		s.obligations++
	}
	s.mu.Unlock()
	if promise {
		enc.after = append(enc.after, func() {
			h.whenSettled(func(v any, err error) { s.sendResolution(id, e, v, err) })
		})
	}
	return append(strconv.AppendInt(append(b, tag...), id, 10), ']'), nil
}

// unpinLocked lets pinned imports be released; s.mu must be held.
func (enc *encState) unpinLocked() {
	for _, e := range enc.pins {
		e.inflight--
		enc.s.maybeReleaseLocked(e)
	}
	enc.pins = nil
}

// sent runs the work that had to wait until the message was queued.
func (enc *encState) sent() {
	for _, fn := range enc.after {
		fn()
	}
	enc.after = nil
}

// abandon undoes pins after a message could not be built.
func (enc *encState) abandon() {
	enc.s.mu.Lock()
	enc.unpinLocked()
	enc.s.mu.Unlock()
	enc.sent()
}

// importHook is a reference into the peer's export table: its main object, a capability it
// passed us, or the result of one of our pushes.
type importHook struct {
	s *Session
	e *importEntry
}

func (h *importHook) session() *Session { return h.s }

func (h *importHook) dup() hook {
	h.s.mu.Lock()
	h.e.local++
	h.s.mu.Unlock()
	return h
}

func (h *importHook) dispose() {
	s := h.s
	s.mu.Lock()
	h.e.local--
	if h.e.local > 0 {
		s.mu.Unlock()
		return
	}
	v := h.e.val
	h.e.val = nil
	s.maybeReleaseLocked(h.e)
	s.mu.Unlock()
	disposeValue(v)
}

func (h *importHook) whenSettled(cb func(any, error)) {
	s, e := h.s, h.e
	s.mu.Lock()
	switch {
	case !e.promise:
		s.mu.Unlock()
		cb(&Stub{h: h, borrowed: true}, nil)
	case e.settled && !e.delivering:
		v, err := e.val, e.err
		s.mu.Unlock()
		cb(v, err)
	case e.settled:
		e.waiters = append(e.waiters, cb)
		s.mu.Unlock()
	case s.closed:
		err := s.err
		s.mu.Unlock()
		cb(nil, err)
	case s.inputEnded != nil && !e.resolvedRemote:
		err := s.inputEnded
		s.mu.Unlock()
		cb(nil, err)
	default:
		e.waiters = append(e.waiters, cb)
		if e.needPull && !e.pullSent && !e.resolvedRemote {
			e.pullSent = true
			s.sendLocked(append(strconv.AppendInt(newMessage(`["pull",`), e.id, 10), ']'))
		}
		s.mu.Unlock()
	}
}

func (h *importHook) call(path []any, args []any, isCall bool) hook {
	s, e := h.s, h.e
	s.mu.Lock()
	if s.closed {
		err := s.err
		s.mu.Unlock()
		disposeList(args)
		return errorHook{err}
	}
	if e.resolvedRemote || e.releaseSent {
		// The peer has answered; follow the answer locally.
		s.mu.Unlock()
		return callWhenSettled(s, h, path, args, isCall)
	}
	s.mu.Unlock()
	return h.push(func(b []byte, enc *encState) ([]byte, error) {
		b = strconv.AppendInt(append(b, `["pipeline",`...), e.id, 10)
		b, _ = appendRaw(append(b, ','), path)
		var err error
		if isCall {
			b, err = encodeArgs(append(b, ','), args, enc, s.lim.MaxDepth)
		}
		disposeList(args)
		return append(b, ']'), err
	})
}

// push sends ["push", expr] where build writes expr naming this import, and returns the import
// for its result. The import's id stays valid (unreleased) while the message is built.
func (h *importHook) push(build func(b []byte, enc *encState) ([]byte, error)) hook {
	s, e := h.s, h.e
	s.mu.Lock()
	if s.closed || e.releaseSent {
		err := s.err
		if err == nil {
			err = TypeError("the promise was already resolved; use its value")
		}
		s.mu.Unlock()
		return errorHook{err}
	}
	e.inflight++
	s.mu.Unlock()

	enc := &encState{s: s}
	msg, err := build(newMessage(`["push",`), enc)
	s.mu.Lock()
	e.inflight--
	if err != nil || s.closed {
		if err == nil {
			err = s.err
		}
		s.maybeReleaseLocked(e)
		s.mu.Unlock()
		enc.abandon()
		return errorHook{err}
	}
	s.nextImport++
	ne := &importEntry{id: s.nextImport, intro: 1, local: 1, promise: true, needPull: true}
	s.imports[ne.id] = ne
	s.sendLocked(append(msg, ']'))
	if s.pullEagerly {
		ne.pullSent = true
		s.sendLocked(append(strconv.AppendInt(newMessage(`["pull",`), ne.id, 10), ']'))
	}
	enc.unpinLocked()
	s.maybeReleaseLocked(e)
	s.mu.Unlock()
	enc.sent()
	return &importHook{s: s, e: ne}
}

// encodeArgs appends a bare argument list.
func encodeArgs(b []byte, args []any, enc capEncoder, depth int) ([]byte, error) {
	b = append(b, '[')
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = encodeValue(b, a, enc, depth-1); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// newMessage starts an outgoing message with prefix, with room for a typical message so that
// appending ids and small values does not reallocate.
func newMessage(prefix string) []byte {
	return append(make([]byte, 0, 64), prefix...)
}
