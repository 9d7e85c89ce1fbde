package kernel

import (
	"context"
	"sync"

	"atelier/capnweb"
	"atelier/host/store"
)

// hookPeers keeps one peer session per node for forwarding webhook deliveries (cluster mode),
// so that a forwarded request costs a call, not a dial. A session that ended is dialled again.
type hookPeers struct {
	mu       sync.Mutex
	sessions map[store.NodeID]*capnweb.Session
	closed   bool
}

// get returns a live session to node, dialling one with dial when none is kept.
func (p *hookPeers) get(ctx context.Context, node store.NodeID, dial func(context.Context) (*capnweb.Session, error)) (*capnweb.Session, error) {
	p.mu.Lock()
	sess := p.sessions[node]
	p.mu.Unlock()
	if sess != nil && sess.Err() == nil {
		return sess, nil
	}
	sess, err := dial(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if kept := p.sessions[node]; p.closed || (kept != nil && kept.Err() == nil) {
		// Closed meanwhile, or another delivery dialled first: keep one session per node.
		sess.Close()
		if p.closed {
			return nil, ErrClosed
		}
		return kept, nil
	}
	if p.sessions == nil {
		p.sessions = map[store.NodeID]*capnweb.Session{}
	}
	p.sessions[node] = sess
	return sess, nil
}

// drop forgets sess, which failed, and closes it.
func (p *hookPeers) drop(node store.NodeID, sess *capnweb.Session) {
	p.mu.Lock()
	if p.sessions[node] == sess {
		delete(p.sessions, node)
	}
	p.mu.Unlock()
	sess.Close()
}

// close closes every kept session; get dials no more.
func (p *hookPeers) close() {
	p.mu.Lock()
	all := p.sessions
	p.sessions, p.closed = nil, true
	p.mu.Unlock()
	for _, s := range all {
		s.Close()
	}
}
