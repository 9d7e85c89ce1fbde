package capnweb

import (
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
)

// Streams (PROTOCOL.md section 6): a ReadableStream travels as ["readable", pipeId]. The sender
// first creates a pipe in the receiver with ["pipe"], then writes chunks into it with
// ["stream", ["pipeline", pipeId, ["write"], [chunk]]] messages (implicitly pulled, implicitly
// released) and ends with "close" or "abort".

// streamWindow is how many chunk writes a sender keeps unacknowledged.
const streamWindow = 64

// ReadableStream is a stream of protocol values: a local source that can be sent to the peer,
// or a stream received from the peer. It can be sent or read once.
type ReadableStream struct {
	next func(ctx context.Context) (any, error) // local source
	sink *pipeSink                              // remote source

	mu   sync.Mutex
	used bool
}

// NewReadableStream returns a stream whose chunks come from next, which returns io.EOF after
// the last chunk (any other error aborts the stream).
func NewReadableStream(next func(ctx context.Context) (any, error)) *ReadableStream {
	return &ReadableStream{next: next}
}

// StreamOf returns a stream of the given chunks.
func StreamOf(chunks ...any) *ReadableStream {
	i := 0
	return NewReadableStream(func(context.Context) (any, error) {
		if i == len(chunks) {
			return nil, io.EOF
		}
		i++
		return chunks[i-1], nil
	})
}

// Read returns the next chunk, or io.EOF after the last one.
func (r *ReadableStream) Read(ctx context.Context) (any, error) {
	if r.next != nil {
		return r.next(ctx)
	}
	return r.sink.read(ctx)
}

// ReadAll reads the stream to its end.
func (r *ReadableStream) ReadAll(ctx context.Context) ([]any, error) {
	var out []any
	for {
		v, err := r.Read(ctx)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
}

// take marks the stream as consumed by sending it.
func (r *ReadableStream) take() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used {
		return TypeError("a ReadableStream can only be sent once")
	}
	r.used = true
	return nil
}

// pipeItem is one event of a pipe: a chunk, the end, or an abort.
type pipeItem struct {
	v   any
	err error // io.EOF for close
}

// pipeSink is the receiving end of a pipe the peer created; it is the target of the peer's
// write/close/abort calls. A write completes when the reader has taken the chunk, so the peer's
// window provides back-pressure.
type pipeSink struct {
	Target
	s        *Session
	items    chan pipeItem
	mu       sync.Mutex
	handed   bool
	finished bool
}

func newPipeSink(s *Session) *pipeSink {
	return &pipeSink{s: s, items: make(chan pipeItem)}
}

// Write delivers one chunk.
func (p *pipeSink) Write(ctx context.Context, chunk any) error {
	return p.put(ctx, pipeItem{v: dupValue(chunk)})
}

// Close ends the stream.
func (p *pipeSink) Close(ctx context.Context) error { return p.put(ctx, pipeItem{err: io.EOF}) }

// Abort ends the stream with an error.
func (p *pipeSink) Abort(ctx context.Context, reason any) error {
	err, ok := reason.(error)
	if !ok {
		err = &Error{Name: "Error", Message: "stream aborted"}
	}
	return p.put(ctx, pipeItem{err: err})
}

func (p *pipeSink) put(ctx context.Context, it pipeItem) error {
	p.mu.Lock()
	if p.finished {
		p.mu.Unlock()
		return TypeError("the stream has already ended")
	}
	if it.err != nil {
		p.finished = true
	}
	p.mu.Unlock()
	leaveReadLoop(ctx)
	select {
	case p.items <- it:
		return nil
	case <-ctx.Done():
		disposeValue(it.v)
		return ctx.Err()
	}
}

func (p *pipeSink) read(ctx context.Context) (any, error) {
	leaveReadLoop(ctx)
	select {
	case it := <-p.items:
		return it.v, it.err
	case <-p.s.done:
		return nil, p.s.Err()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// handOut returns the stream reading from the pipe; a pipe is handed over once.
func (p *pipeSink) handOut() (*ReadableStream, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.handed {
		return nil, badMessage("pipe handed over twice")
	}
	p.handed = true
	return &ReadableStream{sink: p}, nil
}

// handlePipe creates a pipe in the next push slot.
func (s *Session) handlePipe() error {
	sink := newPipeSink(s)
	lt, err := newLocalTarget(s, sink)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.closed || len(s.exports) >= s.lim.MaxExports {
		closed := s.closed
		s.mu.Unlock()
		lt.release()
		if closed {
			return nil
		}
		return badMessage("export table is full (%d entries)", s.lim.MaxExports)
	}
	s.nextSlot++
	s.exports[s.nextSlot] = &exportEntry{hook: &targetHook{lt: lt}, refs: 1, pipe: sink}
	s.mu.Unlock()
	return nil
}

// handleStream evaluates a stream message: a push that is answered unasked and then dropped.
func (s *Session) handleStream(expr any) error {
	if err := s.handlePush(expr); err != nil {
		return err
	}
	s.mu.Lock()
	id := s.nextSlot
	e := s.exports[id]
	if s.closed || e == nil {
		s.mu.Unlock()
		return nil
	}
	e.pulled = true
	s.obligations++
	s.mu.Unlock()
	e.hook.whenSettled(func(v any, err error) {
		s.sendResolution(id, e, v, err)
		s.mu.Lock()
		if s.exports[id] == e {
			delete(s.exports, id)
		} else {
			e = nil
		}
		s.mu.Unlock()
		if e != nil {
			e.hook.dispose()
		}
	})
	return nil
}

// decodeReadable implements capDecoder: ["readable", id] names a pipe the peer created.
func (s *Session) decodeReadable(id int64) (any, error) {
	s.mu.Lock()
	e := s.exports[id]
	s.mu.Unlock()
	if e == nil || e.pipe == nil {
		return nil, badMessage("readable refers to %d, which is not a pipe", id)
	}
	return e.pipe.handOut()
}

// encodeReadable creates a pipe in the peer and starts pumping r into it once the message that
// names it has been sent.
func (enc *encState) encodeReadable(b []byte, r *ReadableStream) ([]byte, error) {
	if err := r.take(); err != nil {
		return nil, err
	}
	s := enc.s
	s.mu.Lock()
	if s.closed {
		err := s.err
		s.mu.Unlock()
		return nil, err
	}
	s.nextImport++
	pipe := &importEntry{id: s.nextImport, intro: 1, local: 1}
	s.imports[pipe.id] = pipe
	s.sendLocked([]byte(`["pipe"]`))
	s.mu.Unlock()
	enc.after = append(enc.after, func() { go s.pump(r, &importHook{s: s, e: pipe}) })
	return append(strconv.AppendInt(append(b, `["readable",`...), pipe.id, 10), ']'), nil
}

// pump copies a local stream into a pipe of the peer, keeping up to streamWindow writes
// unacknowledged, then releases the pipe.
func (s *Session) pump(r *ReadableStream, pipe *importHook) {
	defer pipe.dispose()
	var acks []chan error
	wait := func(ch chan error) bool { return <-ch == nil }
	ok := true
	for ok {
		v, err := r.Read(s.ctx)
		method, args := "write", []any(nil)
		switch {
		case errors.Is(err, io.EOF):
			method = "close"
		case err != nil:
			method, args = "abort", []any{toWireError(err)}
		default:
			cv, cerr := canonicalize(s, v)
			if cerr != nil {
				method, args = "abort", []any{toWireError(cerr)}
			} else {
				args = []any{cv}
			}
		}
		ch := make(chan error, 1)
		ack := pipe.streamCall(method, args)
		ack.whenSettled(func(_ any, err error) { ch <- err })
		acks = append(acks, ch)
		if method != "write" {
			break
		}
		if len(acks) >= streamWindow {
			ok = wait(acks[0])
			acks = acks[1:]
		}
	}
	for _, ch := range acks {
		<-ch
	}
}

// streamCall sends ["stream", ["pipeline", id, [method], args]]; the result import is answered
// unasked and needs no release.
func (h *importHook) streamCall(method string, args []any) hook {
	s, e := h.s, h.e
	enc := &encState{s: s}
	msg := strconv.AppendInt([]byte(`["stream",["pipeline",`), e.id, 10)
	msg = append(appendJSONString(append(msg, ",["...), method), "],"...)
	msg, err := encodeArgs(msg, args, enc, s.lim.MaxDepth)
	disposeList(args)
	s.mu.Lock()
	if err != nil || s.closed {
		if err == nil {
			err = s.err
		}
		s.mu.Unlock()
		enc.abandon()
		return errorHook{err}
	}
	s.nextImport++
	ne := &importEntry{id: s.nextImport, intro: 1, promise: true, implicit: true}
	s.imports[ne.id] = ne
	s.sendLocked(append(msg, "]]"...))
	enc.unpinLocked()
	s.mu.Unlock()
	enc.sent()
	return &importHook{s: s, e: ne}
}

// StreamSink receives the chunks written to a WritableStream.
type StreamSink interface {
	// Write accepts one chunk.
	Write(ctx context.Context, chunk any) error
	// Close ends the stream.
	Close(ctx context.Context) error
	// Abort ends the stream with an error.
	Abort(ctx context.Context, reason any) error
}

// WritableStream is a sink of protocol values: a local StreamSink that can be sent to the peer,
// or a sink of the peer (["writable", id]) received in a value. Write waits until the sink has
// accepted the chunk. A received stream holds a reference to the peer's sink until Close or
// Abort.
type WritableStream struct {
	local  StreamSink
	remote *Stub
}

// NewWritableStream returns a stream writing into sink.
func NewWritableStream(sink StreamSink) *WritableStream { return &WritableStream{local: sink} }

// Write writes one chunk.
func (w *WritableStream) Write(ctx context.Context, chunk any) error {
	if w.local != nil {
		return w.local.Write(ctx, chunk)
	}
	return w.remoteCall(ctx, "write", chunk)
}

// Close ends the stream.
func (w *WritableStream) Close(ctx context.Context) error {
	if w.local != nil {
		return w.local.Close(ctx)
	}
	defer w.remote.Dispose()
	return w.remoteCall(ctx, "close")
}

// Abort ends the stream with reason.
func (w *WritableStream) Abort(ctx context.Context, reason error) error {
	if w.local != nil {
		return w.local.Abort(ctx, reason)
	}
	defer w.remote.Dispose()
	return w.remoteCall(ctx, "abort", toWireError(reason))
}

// remoteCall sends a stream message to the peer's sink and waits for its answer.
func (w *WritableStream) remoteCall(ctx context.Context, method string, args ...any) error {
	h, err := w.remote.hook()
	if err != nil {
		return err
	}
	ih := h.(*importHook)
	cargs, err := canonicalArgs(ih.s, args)
	if err != nil {
		return err
	}
	_, err = (&Promise{h: ih.streamCall(method, cargs)}).Await(ctx)
	return err
}

// sinkTarget exposes a local StreamSink to the peer's stream messages.
type sinkTarget struct {
	Target
	sink StreamSink
}

// Write forwards a chunk.
func (t *sinkTarget) Write(ctx context.Context, chunk any) error { return t.sink.Write(ctx, chunk) }

// Close forwards the end.
func (t *sinkTarget) Close(ctx context.Context) error { return t.sink.Close(ctx) }

// Abort forwards an abort.
func (t *sinkTarget) Abort(ctx context.Context, reason any) error {
	return t.sink.Abort(ctx, reason)
}

// decodeWritable implements capDecoder: ["writable", id] is a sink the peer exports.
func (s *Session) decodeWritable(id int64) (any, error) {
	st, err := s.decodeExport(id)
	if err != nil {
		return nil, err
	}
	return &WritableStream{remote: st.(*Stub)}, nil
}

// encodeWritable exports a local sink as ["writable", id]; a received stream is passed back as
// the peer's own export.
func (enc *encState) encodeWritable(b []byte, w *WritableStream) ([]byte, error) {
	if w.remote != nil {
		return enc.encodeStub(b, w.remote)
	}
	lt, err := newLocalTarget(enc.s, &sinkTarget{sink: w.local})
	if err != nil {
		return nil, err
	}
	return enc.exportAs(b, &targetHook{lt: lt}, `["writable",`)
}
