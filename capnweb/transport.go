package capnweb

import (
	"errors"
	"sync"
)

// Transport carries whole messages, in order, between two peers. A session calls ReadMessage
// from one goroutine, and WriteMessage from one goroutine at a time (not always the same one).
// Close must unblock ReadMessage.
type Transport interface {
	// ReadMessage returns the next message. Any error ends the session; return a *protocolError
	// (via the session) only for malformed frames. The session does not keep the slice after
	// the next call, so a transport may reuse it.
	ReadMessage() ([]byte, error)
	// WriteMessage sends one message.
	WriteMessage(msg []byte) error
	// Close shuts the transport down. reason is nil for a normal close, otherwise the error
	// that ended the session.
	Close(reason error) error
}

// ErrTransportClosed is returned by a closed in-process transport.
var ErrTransportClosed = errors.New("capnweb: transport closed")

// Pipe returns two connected in-process transports: what one writes, the other reads.
func Pipe() (Transport, Transport) {
	a := &pipeEnd{notify: make(chan struct{}, 1), done: make(chan struct{})}
	b := &pipeEnd{notify: make(chan struct{}, 1), done: make(chan struct{})}
	a.peer, b.peer = b, a
	return a, b
}

// pipeEnd is one side of Pipe: an unbounded inbox filled by the peer.
type pipeEnd struct {
	peer   *pipeEnd
	mu     sync.Mutex
	inbox  [][]byte // inbox[head:] are unread
	head   int
	notify chan struct{}
	done   chan struct{}
	once   sync.Once
	reason error
}

func (p *pipeEnd) ReadMessage() ([]byte, error) {
	for {
		p.mu.Lock()
		if p.head < len(p.inbox) {
			m := p.inbox[p.head]
			p.inbox[p.head] = nil
			p.head++
			if p.head == len(p.inbox) {
				p.inbox, p.head = p.inbox[:0], 0 // reuse the array
			}
			p.mu.Unlock()
			return m, nil
		}
		p.mu.Unlock()
		select {
		case <-p.notify:
		case <-p.done:
			return nil, p.closeErr()
		case <-p.peer.done:
			p.mu.Lock()
			empty := p.head == len(p.inbox)
			p.mu.Unlock()
			if empty {
				return nil, p.peer.closeErr()
			}
		}
	}
}

func (p *pipeEnd) closeErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reason != nil {
		return errors.New("peer closed pipe: " + p.reason.Error())
	}
	return ErrTransportClosed
}

func (p *pipeEnd) WriteMessage(msg []byte) error {
	return p.writeMessages([][]byte{msg})
}

// writeMessages delivers several messages with one wake-up of the reader.
func (p *pipeEnd) writeMessages(msgs [][]byte) error {
	select {
	case <-p.done:
		return ErrTransportClosed
	case <-p.peer.done:
		return ErrTransportClosed
	default:
	}
	q := p.peer
	q.mu.Lock()
	if len(q.inbox)+len(msgs) > cap(q.inbox) && q.head > 0 { // move the unread messages to the front
		n := copy(q.inbox, q.inbox[q.head:])
		clear(q.inbox[n:])
		q.inbox, q.head = q.inbox[:n], 0
	}
	q.inbox = append(q.inbox, msgs...)
	q.mu.Unlock()
	select {
	case q.notify <- struct{}{}:
	default:
	}
	return nil
}

func (p *pipeEnd) Close(reason error) error {
	p.once.Do(func() {
		p.mu.Lock()
		p.reason = reason
		p.mu.Unlock()
		close(p.done)
	})
	return nil
}
